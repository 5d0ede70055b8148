/**
 * Audit migration 8 (tenants) on a database written by the previous version: every event keeps
 * its tags, comments and raw record (the table is rebuilt; nothing may cascade away), belongs to
 * the `default` tenant, and the dedupe key becomes per tenant: the same record id collected from
 * two tenants is two events, and from one tenant twice is one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { toApiEvent } from '../../../plugins/audit/http/event-json.js';
import { normalizeRecord } from '../../../plugins/audit/normalize.js';
import { Annotations } from '../../../plugins/audit/store/annotations.js';
import { Dictionaries } from '../../../plugins/audit/store/dictionaries.js';
import { AuditEventWriter } from '../../../plugins/audit/store/event-writer.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';

const record = (id: string) => ({
  id,
  activityDateTime: '2026-11-20T10:00:00Z',
  activityDisplayName: 'Add user',
  result: 'success',
  initiatedBy: { user: { userPrincipalName: 'alice@contoso.example' } },
  targetResources: [{ displayName: 'bob' }],
});

function normalized(id: string, tenant?: string) {
  const out = normalizeRecord('directory', record(id), Date.parse('2026-11-21T00:00:00Z'), tenant);
  if (!out.ok) throw new Error(out.reason);
  return out.event;
}

it('keeps every event with its tags, comments and raw record, in the default tenant', () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-tenant-migration-'));
  const db = openDatabase(join(dir, 'hub.sqlite'));
  try {
    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS.slice(0, 7));
    // Written as version 7 wrote them (its columns, no tenant).
    db.exec(`
      INSERT INTO audit_operations (id, name, folded) VALUES (1, 'Add user', 'add user');
      INSERT INTO audit_results (id, raw, normalized, folded) VALUES (1, 'success', 'success', 'success');
      INSERT INTO audit_actors (id, name, folded) VALUES (1, 'alice@contoso.example', 'alice@contoso.example');
    `);
    const insert = db.prepare(
      `INSERT INTO audit_events (source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at)
       VALUES ('directory', ?, ?, 'directory', 1, 1, 1, 'bob', 0)`,
    );
    const raw = db.prepare('INSERT INTO audit_event_raw (seq, raw) VALUES (?, ?)');
    for (let i = 1; i <= 3; i++) {
      insert.run(`rec-${i}`, Date.parse('2026-11-20T10:00:00Z') + i);
      raw.run(i, JSON.stringify(record(`rec-${i}`)));
    }
    db.exec(`
      UPDATE audit_events SET tags = '["reviewed"]', comment_count = 1 WHERE seq = 2;
      INSERT INTO audit_event_tags (tag, ts, seq) SELECT 'reviewed', ts, seq FROM audit_events WHERE seq = 2;
      INSERT INTO audit_event_comments (seq, author, text, created_at) VALUES (2, 'carol', 'looked at it', 5);
    `);

    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);
    const annotations = new Annotations(db);

    const after = new Dictionaries(db);
    expect(db.prepare('SELECT count(*) FROM audit_events').pluck().get()).toBe(3);
    expect(db.prepare('SELECT count(*) FROM audit_event_raw').pluck().get()).toBe(3);
    const event = annotations.event(2);
    expect(event).toBeDefined();
    const api = toApiEvent(event!, after, annotations.comments([2]).get(2));
    expect(api).toMatchObject({
      id: '2',
      tenant: 'default',
      tags: ['reviewed'],
      actor: 'alice@contoso.example',
    });
    expect(api.comments.map((c) => c.text)).toEqual(['looked at it']);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('foreign_key_check')).toEqual([]);

    // Deduplicated per tenant from now on.
    const writer = new AuditEventWriter(db, after);
    expect(writer.writeNow([normalized('rec-1')])).toMatchObject({ stored: 0, duplicates: 1 });
    expect(writer.writeNow([normalized('rec-1', 'fabrikam')])).toMatchObject({ stored: 1, duplicates: 0 });
    expect(writer.writeNow([normalized('rec-1', 'fabrikam')])).toMatchObject({ stored: 0, duplicates: 1 });
    const tenants = db
      .prepare(
        "SELECT t.name FROM audit_events e JOIN audit_tenants t ON t.id = e.tenant_id WHERE source_key = 'rec-1' ORDER BY e.seq",
      )
      .pluck()
      .all();
    expect(tenants).toEqual(['default', 'fabrikam']);
  } finally {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
