/**
 * Migration 6 on a database written by the previous version: the trail rows it holds get their
 * action (from what they recorded) and result (from their status), and read back through the
 * API like new ones.
 */
import { expect, it } from 'vitest';
import { toApiTrailEntry } from '../../../plugins/audit/http/trail-routes.js';
import { AuditTrail, type TrailRow } from '../../../plugins/audit/store/audit-trail.js';
import { AUDIT_COMPONENT, AUDIT_MIGRATIONS } from '../../../plugins/audit/store/schema.js';
import { TrailQuery } from '../../../plugins/audit/store/trail-query.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { atAuditVersion } from './helpers.js';

it('gives rows written before version 6 their action and result', () => {
  atAuditVersion(5, (db) => {
    const insert = db.prepare(
      "INSERT INTO audit_trail (at, method, path, status, username, roles, detail) VALUES (?, ?, ?, ?, 'carol', '[]', ?)",
    );
    insert.run(
      1,
      'PATCH',
      '/api/events/1/tags',
      200,
      '{"action":"set-tags","event":"1","before":[],"after":["x"]}',
    );
    insert.run(2, 'POST', '/api/events/1/comments', 401, null);
    insert.run(3, 'POST', '/api/events/bulk-tags', 422, 'not json at all');
    migrateComponent(db, AUDIT_COMPONENT, AUDIT_MIGRATIONS);

    const rows = new TrailQuery(db).page({}, 10).rows as TrailRow[];
    expect(rows.map((r) => [r.action, r.result, r.status, r.count, r.refusal_key])).toEqual([
      ['other', 'failure', 422, 1, null],
      ['other', 'refused', 401, 1, null],
      ['set-tags', 'success', 200, 1, null],
    ]);
    expect(toApiTrailEntry(rows[2]!)).toMatchObject({
      actor: 'carol',
      action: 'set-tags',
      detail: { action: 'set-tags', after: ['x'] },
    });
    // The previous version cut long details mid-JSON: shown, not a 500.
    expect(toApiTrailEntry(rows[0]!).detail).toEqual({ truncated: true, excerpt: 'not json at all' });
    expect(new TrailQuery(db).page({ results: ['refused'] }, 10).rows).toHaveLength(1);
  });
});

it('stores a detail too long for a row as parseable JSON with an excerpt', () => {
  atAuditVersion(AUDIT_MIGRATIONS.length, (db) => {
    const trail = new AuditTrail(db);
    const id = trail.record({
      at: 1,
      method: 'POST',
      path: '/api/events/bulk-tags',
      action: 'bulk-tags',
      status: 200,
      roles: [],
      detail: {
        action: 'bulk-tags',
        tags: Array.from({ length: 400 }, (_, i) => `tag-${i}-${'x'.repeat(40)}`),
      },
    });
    const text = db.prepare('SELECT detail FROM audit_trail WHERE id = ?').pluck().get(id) as string;
    expect(text.length).toBeLessThanOrEqual(8_192);
    expect(JSON.parse(text)).toMatchObject({
      action: 'bulk-tags',
      truncated: true,
      excerpt: expect.any(String),
    });
  });
});
