/**
 * The maintenance routine: retention by RETENTION_DAYS in chunks, duplicate removal that keeps
 * tags and comments, and pruning of names no event uses any more.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteExpiredEvents, removeDuplicateEvents } from '../../../plugins/audit/store/maintenance.js';
import { type AuditTestApp, auditApp, jsonInit, seed } from './helpers.js';

const DAY = 86_400_000;
let t: AuditTestApp;
const now = Date.now();

beforeEach(async () => {
  t = await auditApp({ RETENTION_DAYS: '30', RATE_LIMIT_WRITE: '10000/1m' });
});
afterEach(() => t.close());

const count = (sql: string) => t.db.prepare(sql).pluck().get() as number;

describe('retention', () => {
  it('deletes events older than RETENTION_DAYS with their tags, comments and raw records', async () => {
    seed(t.repos, [
      ...Array.from({ length: 2_500 }, (_, i) => ({
        at: now - 40 * DAY + i,
        actor: 'old@contoso.com',
        id: `old-${i}`,
      })),
      ...Array.from({ length: 100 }, (_, i) => ({
        at: now - 10 * DAY + i,
        actor: 'new@contoso.com',
        id: `new-${i}`,
      })),
    ]);
    await t.request('/api/events/1/tags', jsonInit('PATCH', { tags: ['old'] }));
    await t.request('/api/events/1/comments', jsonInit('POST', { text: 'old' }));
    const report = await t.maintenance.runOnce(now);
    expect(report.expired).toBe(2_500);
    expect(count('SELECT count(*) FROM audit_events')).toBe(100);
    expect(count('SELECT count(*) FROM audit_event_raw')).toBe(100);
    expect(count('SELECT count(*) FROM audit_event_tags')).toBe(0);
    expect(count('SELECT count(*) FROM audit_event_comments')).toBe(0);
    // The old actor's name is gone from the dictionary and from the filter options' sources.
    expect(count("SELECT count(*) FROM audit_actors WHERE name = 'old@contoso.com'")).toBe(0);
    expect((await t.json('/api/events?actor=old@')).body.data).toEqual([]);
  });

  it('deletes in chunks of the given size', async () => {
    seed(
      t.repos,
      Array.from({ length: 250 }, (_, i) => ({ at: now - 40 * DAY + i, id: `x${i}` })),
    );
    const sizes: number[] = [];
    expect(
      await deleteExpiredEvents(t.db, now - 30 * DAY, { chunk: 100, onChunk: (n) => sizes.push(n) }),
    ).toBe(250);
    expect(sizes).toEqual([100, 100, 50]);
  });
});

describe('duplicate removal', () => {
  it('folds a row whose key differs only in form into the canonical one, keeping tags and comments', async () => {
    const guid = '80c76bd2-9d81-4c57-a97a-accfc3443dca';
    seed(t.repos, [{ at: now - DAY, id: guid, actor: 'a@contoso.com' }]);
    // A row written under a non-canonical key (upper-case GUID, spaces): as an older version or an import would.
    t.db.exec(`
      INSERT INTO audit_events (source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at)
      SELECT source, ' ${guid.toUpperCase()} ', ts, service, operation_id, result_id, actor_id, target, ingested_at
      FROM audit_events WHERE seq = 1;
      INSERT INTO audit_event_raw (seq, raw) VALUES (2, '{}');
      INSERT INTO audit_events (source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at)
      SELECT source, '  lonely-key ', ts, service, operation_id, result_id, actor_id, target, ingested_at
      FROM audit_events WHERE seq = 1;`);
    await t.request('/api/events/1/tags', jsonInit('PATCH', { tags: ['kept'] }));
    await t.request('/api/events/2/tags', jsonInit('PATCH', { tags: ['merged'] }));
    await t.request('/api/events/2/comments', jsonInit('POST', { text: 'on the duplicate' }));

    const result = await removeDuplicateEvents(t.db, 2);
    expect(result).toEqual({ removed: 1, rekeyed: 1 });
    const rows = t.db
      .prepare('SELECT seq, source_key, tags, comment_count FROM audit_events ORDER BY seq')
      .all();
    expect(rows).toEqual([
      { seq: 1, source_key: guid, tags: '["kept","merged"]', comment_count: 1 },
      { seq: 3, source_key: 'lonely-key', tags: '[]', comment_count: 0 },
    ]);
    expect(
      (await t.json('/api/events?include_tags=merged')).body.data.map((e: { id: string }) => e.id),
    ).toEqual(['1']);
    expect((await t.json('/api/events/1')).body.comments.map((c: { text: string }) => c.text)).toEqual([
      'on the duplicate',
    ]);
    expect(await removeDuplicateEvents(t.db)).toEqual({ removed: 0, rekeyed: 0 });
  });
});
