/**
 * Audit migration 11 (watermarks, health and content blobs per tenant) on a database written by
 * the previous version: the existing rows are the `default` tenant's, so a single-tenant hub
 * resumes where it was; another tenant starts with its own, empty state.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { SourceStates } from '../../../plugins/audit/store/source-state.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';

it('keeps the watermark, health and pending blobs as the default tenant’s', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-tenant-state-'));
  const db = openDatabase(join(dir, 'hub.sqlite'));
  try {
    migrateComponent(
      db,
      AUDIT_COMPONENT,
      AUDIT_MIGRATIONS.filter((m) => m.version <= 10),
    );
    db.exec(`
      INSERT INTO audit_sources (source, watermark, status, consecutive_failures, events_stored)
        VALUES ('exchange', 1700000000000, 'error', 2, 40);
      INSERT INTO audit_content_blobs
        (source, content_id, content_uri, content_created, content_expiration, state, attempts, updated_at)
        VALUES ('exchange', 'blob-1', 'https://manage.office.com/blob-1', 1, 9999999999999, 'pending', 1, 1);
    `);
    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);

    const states = new SourceStates(db);
    expect(states.get('exchange')).toMatchObject({
      tenant_id: 1,
      tenant: 'default',
      watermark: 1700000000000,
      status: 'error',
      consecutive_failures: 2,
      events_stored: 40,
    });
    expect(states.pending('exchange', 2).map((b) => b.contentId)).toEqual(['blob-1']);

    // Another tenant: its own rows, the same source, nothing of the default's.
    db.exec("INSERT INTO audit_tenants (id, name, folded) VALUES (2, 'fabrikam', 'fabrikam')");
    const other = states.forTenant(2);
    other.ensure(['exchange']);
    expect(other.get('exchange')).toMatchObject({ tenant: 'fabrikam', watermark: null, status: 'pending' });
    expect(other.pending('exchange', 2)).toEqual([]);
    other.setWatermark('exchange', 5);
    expect(states.get('exchange')!.watermark).toBe(1700000000000);
    expect(states.all().map((r) => `${r.tenant}/${r.source}`)).toEqual([
      'default/exchange',
      'fabrikam/exchange',
    ]);
  } finally {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
