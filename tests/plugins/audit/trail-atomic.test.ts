/**
 * No change without its record (issue 14): when the trail row of a mutation cannot be written —
 * here a trigger in the test's own SQLite file refuses every insert into `audit_trail`, as a
 * full disk or a broken table would — the mutation answers 503 (a problem, with Retry-After)
 * and nothing changed. Once the trail works again, each mutation writes exactly one row.
 *
 * 503, not 500: the request was fine and the hub is not broken; it cannot keep its record right
 * now, so it refuses to change anything until it can (an administrator reads "service
 * unavailable", the log says why).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { type AuditTestApp, auditApp, jsonInit, seed } from './helpers.js';

let t: AuditTestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const T0 = Date.parse('2026-11-02T09:00:00Z');
const RULE = { name: 'Any failure', severity: 'high', condition: { result: 'failure' } };

const breakTrail = (app: AuditTestApp) =>
  app.db.exec(
    "CREATE TRIGGER audit_trail_broken BEFORE INSERT ON audit_trail BEGIN SELECT RAISE(ABORT, 'disk trouble'); END",
  );
const mendTrail = (app: AuditTestApp) => app.db.exec('DROP TRIGGER audit_trail_broken');

/** Everything a mutation could change, to compare before and after. */
const snapshot = (app: AuditTestApp) => ({
  events: app.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all(),
  tags: app.db.prepare('SELECT tag, seq FROM audit_event_tags ORDER BY tag, seq').all(),
  comments: app.db.prepare('SELECT * FROM audit_event_comments').all(),
  rules: app.db.prepare('SELECT * FROM audit_alert_rules ORDER BY id').all(),
});
const trailCount = (app: AuditTestApp) =>
  app.db.prepare('SELECT count(*) FROM audit_trail').pluck().get() as number;

function expectRefusedForTrail(res: {
  status: number;
  headers: Headers;
  body: { status: number; detail: string };
}) {
  expect(res.status).toBe(503);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(res.headers.get('retry-after')).toBe('30');
  expect(res.body).toMatchObject({ status: 503, title: 'Service Unavailable' });
  expect(res.body.detail).toMatch(/audit trail cannot be written, so nothing was changed/);
}

describe('a mutation whose trail row cannot be written changes nothing', () => {
  it('tags, comments and bulk tags: 503 and no change; one row each once the trail works', async () => {
    t = await auditApp();
    seed(t.repos, [
      { at: T0, actor: 'mallory@contoso.com' },
      { at: T0 + 1000, actor: 'mallory@contoso.com' },
    ]);
    await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['kept'] }));
    const before = snapshot(t);
    const rowsBefore = trailCount(t);
    breakTrail(t);

    const mutations = [
      () => t!.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['reviewed', 'incident-7'] })),
      () => t!.json('/api/events/2/comments', jsonInit('POST', { text: 'known admin task' })),
      () =>
        t!.json(
          '/api/events/bulk-tags',
          jsonInit('POST', { filters: { actor: 'mallory' }, tags: ['incident-7'], mode: 'replace' }),
        ),
    ];
    for (const mutate of mutations) expectRefusedForTrail(await mutate());
    expect(snapshot(t)).toEqual(before);
    expect(trailCount(t)).toBe(rowsBefore);

    mendTrail(t);
    expect((await mutations[0]!()).status).toBe(200);
    expect((await mutations[1]!()).status).toBe(201);
    expect((await mutations[2]!()).status).toBe(200);
    const rows = t.repos.trail.latest(3).reverse();
    expect(rows.map((r) => [r.action, r.status, r.result, r.count])).toEqual([
      ['set-tags', 200, 'success', 1],
      ['add-comment', 201, 'success', 1],
      ['bulk-tags', 200, 'success', 1],
    ]);
    expect(JSON.parse(rows[0]!.detail!)).toMatchObject({
      before: ['kept'],
      after: ['reviewed', 'incident-7'],
    });
    expect(trailCount(t)).toBe(rowsBefore + 3);
  });

  it('rule writes: create, replace and delete are 503 and change nothing', async () => {
    t = await auditApp();
    const created = await t.json('/api/rules', jsonInit('POST', RULE));
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const before = snapshot(t);
    const rowsBefore = trailCount(t);
    breakTrail(t);

    expectRefusedForTrail(await t.json('/api/rules', jsonInit('POST', { ...RULE, name: 'Another' })));
    expectRefusedForTrail(
      await t.json(`/api/rules/${id}`, jsonInit('PUT', { ...RULE, enabled: false, severity: 'low' })),
    );
    expectRefusedForTrail(await t.json(`/api/rules/${id}`, { method: 'DELETE' }));
    expect(snapshot(t)).toEqual(before);
    expect((await t.json(`/api/rules/${id}`)).body).toEqual(created.body);
    expect(trailCount(t)).toBe(rowsBefore);

    mendTrail(t);
    expect((await t.json(`/api/rules/${id}`, jsonInit('PUT', { ...RULE, enabled: false }))).status).toBe(200);
    expect((await t.json(`/api/rules/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect(t.repos.trail.latest(2).map((r) => [r.action, r.status])).toEqual([
      ['delete-rule', 204],
      ['update-rule', 200],
    ]);
  });

  it('a refused change that changed nothing is still recorded after the answer (404, 409)', async () => {
    t = await auditApp();
    expect((await t.json('/api/events/9/tags', jsonInit('PATCH', { tags: ['x'] }))).status).toBe(404);
    expect((await t.json('/api/rules/77', { method: 'DELETE' })).status).toBe(404);
    expect(t.repos.trail.latest(2).map((r) => [r.action, r.status, r.result])).toEqual([
      ['delete-rule', 404, 'failure'],
      ['set-tags', 404, 'failure'],
    ]);
  });
});

describe('fetch now (not one transaction): the trail row first', () => {
  let fake: FakeMicrosoft;
  beforeAll(async () => {
    fake = new FakeMicrosoft();
    await fake.start();
  });
  afterAll(() => fake.stop());

  it('refuses with 503 and queues nothing when the row cannot be written', async () => {
    t = await auditApp({ ...fake.env(), AUDIT_SOURCES: 'directory' });
    breakTrail(t);
    expectRefusedForTrail(await t.json('/api/fetch', { method: 'POST' }));
    await t.collector.idle();
    expect(fake.requestsTo('graph')).toHaveLength(0);

    mendTrail(t);
    const ok = await t.json('/api/fetch', { method: 'POST' });
    expect(ok.status).toBe(202);
    await t.collector.idle();
    expect(fake.requestsTo('graph', '/directoryAudits')).toHaveLength(1);
    const rows = t.repos.trail.latest(5);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action: 'fetch', status: 202, result: 'success' });
    expect(JSON.parse(rows[0]!.detail!)).toEqual({
      action: 'fetch',
      sources: ['directory'],
      outcome: 'queued',
    });
  });

  it('settles the row written first with the final answer (409: collection not configured)', async () => {
    t = await auditApp();
    expect((await t.json('/api/fetch', { method: 'POST' })).status).toBe(409);
    const rows = t.repos.trail.latest(5);
    expect(rows.map((r) => [r.action, r.status, r.result])).toEqual([['fetch', 409, 'failure']]);
  });
});
