/**
 * `GET /api/audit-trail` (issue 14 "The trail is readable"): an administrator reads who did what,
 * when, from where and with which request id — over the hub's real socket with AUTH_ENABLED;
 * filters, cursor paging both ways, CSV and JSON export sharing the export slots, and every bad
 * filter a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AlertsHub, jsonBody, startAlertsHub } from './alerts-hub.js';
import { appPerTest, jsonInit, seed } from './helpers.js';
import { bearerHeaders, idpAuthEnv, type LocalIdp, ROOT_ADMIN, startLocalIdp } from './idp.js';

const T0 = Date.parse('2026-11-02T09:00:00Z');

describe('an administrator reads the trail over the real socket', () => {
  let idp: LocalIdp;
  let h: AlertsHub;
  let admin: Record<string, string>;
  let reader: Record<string, string>;
  beforeAll(async () => {
    idp = await startLocalIdp();
    h = await startAlertsHub(idpAuthEnv(idp));
    admin = await bearerHeaders(idp, ROOT_ADMIN);
    reader = await bearerHeaders(idp, {
      roles: ['reader'],
      sub: 'rita-1',
      preferred_username: 'rita@contoso.com',
    });
  });
  afterAll(async () => {
    await h?.stop();
    await idp?.stop();
  });

  it('shows who did what, when, from where, with the request id; refusals counted', async () => {
    const before = Date.now();
    const created = await h.call(
      '/api/rules',
      jsonBody('POST', { name: 'Any failure', severity: 'high', condition: { result: 'failure' } }, admin),
    );
    expect(created.status).toBe(201);
    expect(created.headers.get('x-request-id')).toMatch(/.+/);
    expect((await h.call('/api/rules', { headers: reader })).status).toBe(403);
    expect((await h.call('/api/rules', { headers: reader })).status).toBe(403);
    expect((await h.call('/api/events')).status).toBe(401);

    // Only administrators read the trail; the refusal is itself recorded.
    expect((await h.call('/api/audit-trail', { headers: reader })).status).toBe(403);
    expect((await h.call('/api/audit-trail')).status).toBe(401);

    const page = await h.call('/api/audit-trail', { headers: admin });
    expect(page.status).toBe(200);
    expect(page.body.next_cursor).toBeNull();
    const write = page.body.data.find((r: { action: string }) => r.action === 'create-rule');
    expect(write).toMatchObject({
      actor: 'root@contoso.com',
      subject: 'root-1',
      issuer: idp.issuer,
      roles: ['admin'],
      action: 'create-rule',
      result: 'success',
      status: 201,
      method: 'POST',
      path: '/api/rules',
      client_address: '127.0.0.1',
      request_id: created.headers.get('x-request-id'),
      count: 1,
      last_at: null,
      detail: { action: 'create-rule', rule: created.body.id, after: created.body },
    });
    expect(Date.parse(write.at)).toBeGreaterThanOrEqual(before);
    const refused = page.body.data
      .filter((r: { result: string }) => r.result === 'refused')
      .map((r: Record<string, unknown>) => [r.actor, r.status, r.method, r.route, r.count]);
    expect(refused).toEqual([
      ['anonymous', 401, 'GET', '/api/audit-trail', 1],
      ['rita@contoso.com', 403, 'GET', '/api/audit-trail', 1],
      ['anonymous', 401, 'GET', '/api/events', 1],
      ['rita@contoso.com', 403, 'GET', '/api/rules', 2],
    ]);

    // Filters: actor (either the name or the subject, any case), action, result.
    const byActor = await h.call('/api/audit-trail?actor=RITA', { headers: admin });
    expect(byActor.body.data.map((r: { actor: string }) => r.actor)).toEqual([
      'rita@contoso.com',
      'rita@contoso.com',
    ]);
    const bySubject = await h.call('/api/audit-trail?actor=root-1', { headers: admin });
    expect(bySubject.body.data.map((r: { action: string }) => r.action)).toEqual(['create-rule']);
    const byAction = await h.call('/api/audit-trail?action=create-rule,delete-rule', { headers: admin });
    expect(byAction.body.data).toHaveLength(1);
    const byResult = await h.call('/api/audit-trail?result=refused&result=failure', { headers: admin });
    expect(byResult.body.data.every((r: { result: string }) => r.result === 'refused')).toBe(true);
    expect(byResult.body.data).toHaveLength(4);
  });
});

describe('paging, filters and bad input', () => {
  const app = appPerTest();

  it('pages newest first with next and prev cursors, like /api/events', async () => {
    const t = await app();
    seed(t.repos, [{ at: T0 }]);
    for (let i = 0; i < 7; i++) {
      expect((await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: [`t${i}`] }))).status).toBe(200);
    }
    const all = (await t.json('/api/audit-trail?limit=500')).body.data.map((r: { id: string }) => r.id);
    expect(all).toHaveLength(7);
    expect([...all].sort((a: string, b: string) => Number(b) - Number(a))).toEqual(all);

    const seen: string[] = [];
    let page = await t.json('/api/audit-trail?limit=3');
    expect(page.body.prev_cursor).toBeNull();
    const pages = [page];
    seen.push(...page.body.data.map((r: { id: string }) => r.id));
    while (page.body.next_cursor) {
      page = await t.json(`/api/audit-trail?limit=3&cursor=${page.body.next_cursor}`);
      pages.push(page);
      seen.push(...page.body.data.map((r: { id: string }) => r.id));
    }
    expect(seen).toEqual(all);
    expect(pages.map((p) => p.body.data.length)).toEqual([3, 3, 1]);
    const back = await t.json(`/api/audit-trail?limit=3&cursor=${pages[2]!.body.prev_cursor}`);
    expect(back.body.data).toEqual(pages[1]!.body.data);

    // A time window: [start, end).
    const third = pages[0]!.body.data[2];
    const window = await t.json(`/api/audit-trail?end=${encodeURIComponent(third.at)}&action=set-tags`);
    expect(window.body.data.every((r: { at: string }) => Date.parse(r.at) < Date.parse(third.at))).toBe(true);
    const after = await t.json(`/api/audit-trail?start=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
    expect(after.body.data).toEqual([]);
  });

  it('answers every bad filter with a 400 naming the field, and changes nothing', async () => {
    const t = await app();
    seed(t.repos, [{ at: T0 }]);
    await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['x'] }));
    const eventsCursor = (await t.json('/api/events?limit=1')).body;
    seed(t.repos, [{ at: T0 + 5 }]);
    const eventsNext = (await t.json('/api/events?limit=1')).body.next_cursor as string;
    expect(eventsCursor.data).toHaveLength(1);
    const rowsBefore = t.db.prepare('SELECT * FROM audit_trail').all();
    const cases: Array<[string, string, RegExp]> = [
      ['action=set-tag', 'action', /must be one of set-tags, add-comment/],
      ['result=maybe', 'result', /must be one of success, failure, refused/],
      ['start=yesterday', 'start', /ISO 8601/],
      ['start=2026-11-02T10:00:00Z&end=2026-11-02T09:00:00Z', 'end', /must be after start/],
      ['end=2026-11-02T10:00:00Z&end=2026-11-03T10:00:00Z', 'end', /must be given once/],
      ['limit=0', 'limit', /1 to 500/],
      ['limit=501', 'limit', /1 to 500/],
      ['cursor=not-a-cursor!', 'cursor', /not a cursor this API issued/],
      [`cursor=${eventsNext}`, 'cursor', /not a cursor this API issued/],
      ['actor=%07bell', 'actor', /control characters/],
    ];
    for (const [query, field, message] of cases) {
      for (const path of ['/api/audit-trail', '/api/audit-trail/export']) {
        if (path.endsWith('export') && /^(limit|cursor)/.test(query)) continue;
        const res = await t.json(`${path}?${query}`);
        expect(res.status, `${path}?${query}`).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.body.errors).toEqual([{ field, message: expect.stringMatching(message) }]);
      }
    }
    const badFormat = await t.json('/api/audit-trail/export?format=xml');
    expect(badFormat.body.errors).toEqual([{ field: 'format', message: 'must be csv or json' }]);
    expect(t.db.prepare('SELECT * FROM audit_trail').all()).toEqual(rowsBefore);
  });
});

describe('export', () => {
  const app = appPerTest();

  it('streams CSV and JSON of every matching row', async () => {
    const t = await app();
    seed(t.repos, [{ at: T0 }]);
    await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['reviewed'] }));
    await t.json('/api/events/1/comments', jsonInit('POST', { text: '=HYPERLINK("http://evil")' }));
    await t.json('/api/events/9/comments', jsonInit('POST', { text: 'no such event' }));

    const json = await t.request('/api/audit-trail/export?format=json&result=success');
    expect(json.status).toBe(200);
    expect(json.headers.get('content-disposition')).toMatch(
      /^attachment; filename="audit-trail-\d{8}T\d{6}Z\.json"$/,
    );
    const rows = (await json.json()) as Array<{ action: string }>;
    expect(rows.map((r) => r.action)).toEqual(['add-comment', 'set-tags']);
    const page = (await t.json('/api/audit-trail?result=success')).body.data;
    expect(rows).toEqual(page);

    const csv = await t.request('/api/audit-trail/export');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await csv.text()).split('\r\n');
    expect(lines[0]).toBe(
      'id,at,last_at,count,actor,subject,issuer,roles,action,result,status,method,path,client_address,request_id,detail',
    );
    expect(lines).toHaveLength(5); // header, three rows, the final CRLF
    expect(lines[1]).toMatch(/^3,.*,1,anonymous,,,,add-comment,failure,404,POST,\/api\/events\/9\/comments,/);
    expect(lines[3]).toContain('"{""action"":""set-tags""');

    const empty = await t.request('/api/audit-trail/export?format=json&action=delete-rule');
    expect(await empty.text()).toBe('[]\n');
  });

  it('shares the export slots with the events export and gives them back on every way out', async () => {
    const t = await app({ AUDIT_EXPORT_MAX_CONCURRENT: '1' });
    seed(t.repos, [{ at: T0 }]);
    const insert = t.db.prepare(
      "INSERT INTO audit_trail (at, method, path, status, roles, action, result) VALUES (?, 'POST', '/api/x', 200, '[]', 'other', 'success')",
    );
    t.db.transaction(() => {
      for (let i = 0; i < 4_500; i++) insert.run(T0 + i);
    })();

    // HEAD never takes a slot.
    for (let i = 0; i < 3; i++) {
      expect((await t.request('/api/audit-trail/export', { method: 'HEAD' })).status).toBe(200);
    }
    // A running trail export holds the only slot: the events export waits its turn…
    const running = await t.request('/api/audit-trail/export');
    const reader = running.body!.getReader();
    await reader.read();
    const busy = await t.json('/api/events/export');
    expect(busy.status).toBe(429);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect((await t.json('/api/audit-trail/export')).status).toBe(429);
    // …until the reader goes away.
    await reader.cancel();
    const events = await t.request('/api/events/export');
    expect(events.status).toBe(200);
    await events.text();

    // An error mid-stream (the table gone between two chunks) ends the body and frees the slot.
    const failing = await t.request('/api/audit-trail/export?format=json');
    const failingReader = failing.body!.getReader();
    await failingReader.read();
    t.db.exec('ALTER TABLE audit_trail RENAME TO audit_trail_away');
    // The stream reads one chunk ahead: the failing query comes at the second read at the latest.
    let failed = false;
    for (let i = 0; i < 3 && !failed; i++) {
      try {
        if ((await failingReader.read()).done) break;
      } catch {
        failed = true;
      }
    }
    expect(failed).toBe(true);
    t.db.exec('ALTER TABLE audit_trail_away RENAME TO audit_trail');
    const after = await t.request('/api/audit-trail/export?format=json');
    expect(after.status).toBe(200);
    expect(((await after.json()) as unknown[]).length).toBeGreaterThanOrEqual(4_500);
  });
});
