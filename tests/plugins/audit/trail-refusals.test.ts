/**
 * Refusals in the trail (issue 14): requests refused by a rate limit (429) or by authorization
 * (401, 403) are recorded, of any method, and counted — one row per hour, client, status,
 * method, route and caller — with at most AUDIT_TRAIL_REFUSALS_PER_HOUR new rows an hour; past
 * that, one overflow row per status, method and route. A flood cannot grow the table without
 * limit. The trail, refusals included, is pruned by the maintenance routine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditTrail, type TrailEntry } from '../../../plugins/audit/store/audit-trail.js';
import { type AuditTestApp, appPerTest, jsonInit, seed } from './helpers.js';
import { idpAuthEnv, type LocalIdp, startLocalIdp } from './idp.js';

let idp: LocalIdp;
beforeAll(async () => {
  idp = await startLocalIdp();
});
afterAll(() => idp.stop());
const app = appPerTest();

const T0 = Date.parse('2026-11-02T09:00:00Z');
const authEnv = () => idpAuthEnv(idp);
/** A request from `address`, as the hub's Node server would hand it over (the TCP peer). */
const from = (app: AuditTestApp, address: string, path: string, init: RequestInit = {}) =>
  Promise.resolve(app.app.request(path, init, { incoming: { socket: { remoteAddress: address } } }));
const trailRows = (app: AuditTestApp) =>
  app.db
    .prepare(
      'SELECT client_ip, status, method, route, username, action, result, count FROM audit_trail ORDER BY id',
    )
    .all() as Array<Record<string, unknown>>;

describe('refusals are counted, not listed', () => {
  it('a flood of rate-limited writes from one client is one counted row', async () => {
    const t = await app({ RATE_LIMIT_WRITE: '2/1m' });
    seed(t.repos, [{ at: T0 }]);
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      statuses.push(
        (await from(t, '192.168.1.50', '/api/events/1/tags', jsonInit('PATCH', { tags: [`t${i}`] }))).status,
      );
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(48);
    expect(trailRows(t)).toEqual([
      expect.objectContaining({ status: 200, action: 'set-tags', result: 'success', count: 1 }),
      expect.objectContaining({ status: 200, action: 'set-tags', result: 'success', count: 1 }),
      {
        client_ip: '192.168.1.50',
        status: 429,
        method: 'PATCH',
        route: '/api/events/:id/tags',
        username: 'anonymous',
        action: 'set-tags',
        result: 'refused',
        count: 48,
      },
    ]);
  });

  it('records refused reads and writes without a token (401) and without the role (403), by caller', async () => {
    const t = await app(authEnv());
    const reader = await idp.token({ preferred_username: 'rita@contoso.com', roles: ['reader'] });
    for (let i = 0; i < 3; i++) await from(t, '10.0.0.7', '/api/events');
    await from(t, '10.0.0.7', '/api/events/5/tags', jsonInit('PATCH', { tags: ['x'] }));
    await from(t, '10.0.0.7', '/api/events/6/tags', jsonInit('PATCH', { tags: ['x'] }));
    for (let i = 0; i < 2; i++) {
      await from(t, '10.0.0.8', '/api/audit-trail', { headers: { authorization: `Bearer ${reader}` } });
    }
    expect(trailRows(t)).toEqual([
      {
        client_ip: '10.0.0.7',
        status: 401,
        method: 'GET',
        route: '/api/events',
        username: 'anonymous',
        action: 'read',
        result: 'refused',
        count: 3,
      },
      {
        client_ip: '10.0.0.7',
        status: 401,
        method: 'PATCH',
        route: '/api/events/:id/tags',
        username: 'anonymous',
        action: 'set-tags',
        result: 'refused',
        count: 2,
      },
      {
        client_ip: '10.0.0.8',
        status: 403,
        method: 'GET',
        route: '/api/audit-trail',
        username: 'rita@contoso.com',
        action: 'read',
        result: 'refused',
        count: 2,
      },
    ]);
  });

  it('a flood from many addresses adds at most the hourly cap plus overflow rows', async () => {
    const t = await app({ ...authEnv(), AUDIT_TRAIL_REFUSALS_PER_HOUR: '10' });
    const flood = async (first: number) => {
      for (let i = first; i < first + 150; i++) {
        const path = i % 2 ? '/api/events' : `/api/events/${i}/comments`;
        const init = i % 2 ? {} : jsonInit('POST', { text: 'spam' });
        expect((await from(t!, `2001:db8::${i.toString(16)}`, path, init)).status).toBe(401);
      }
    };
    await flood(0);
    const rows = trailRows(t);
    const perClient = rows.filter((r) => r.client_ip !== '*');
    const overflow = rows.filter((r) => r.client_ip === '*');
    expect(perClient).toHaveLength(10);
    // One overflow row per status and route: the two routes flooded here.
    expect(overflow.map((r) => [r.method, r.route, r.username])).toEqual([
      ['*', '/api/events/:id/comments', '*'],
      ['*', '/api/events', '*'],
    ]);
    // Every refusal is counted somewhere.
    expect(rows.reduce((n, r) => n + (r.count as number), 0)).toBe(150);

    await flood(1000);
    expect(trailRows(t)).toHaveLength(12);
    expect(trailRows(t).reduce((n, r) => n + (r.count as number), 0)).toBe(300);
  });

  it('starts new rows in the next hour (the bound is per hour)', async () => {
    const t = await app();
    const trail = new AuditTrail(t.db);
    const refusal = (at: number, clientIp: string): TrailEntry => ({
      at,
      method: 'GET',
      path: '/api/events',
      route: '/api/events',
      action: 'read',
      status: 401,
      username: 'anonymous',
      roles: [],
      clientIp,
    });
    const hour = 3_600_000;
    for (let i = 0; i < 5; i++) trail.refuse(refusal(T0 + i, '10.0.0.1'), 2);
    trail.refuse(refusal(T0 + 10, '10.0.0.2'), 2);
    trail.refuse(refusal(T0 + 20, '10.0.0.3'), 2); // past the cap: overflow
    trail.refuse(refusal(T0 + hour, '10.0.0.3'), 2); // the next hour: its own row again
    expect(trailRows(t).map((r) => [r.client_ip, r.count])).toEqual([
      ['10.0.0.1', 5],
      ['10.0.0.2', 1],
      ['*', 1],
      ['10.0.0.3', 1],
    ]);
    expect(t.db.prepare('SELECT at, last_at FROM audit_trail WHERE id = 1').get()).toEqual({
      at: T0,
      last_at: T0 + 4,
    });
  });
});

describe('retention', () => {
  it('the maintenance routine prunes trail rows, refusals included, after AUDIT_TRAIL_RETENTION_DAYS', async () => {
    const t = await app({ ...authEnv(), AUDIT_TRAIL_RETENTION_DAYS: '30' });
    seed(t.repos, [{ at: Date.now() }]);
    await from(t, '10.0.0.9', '/api/events');
    await from(t, '10.0.0.9', '/api/events/1/comments', jsonInit('POST', { text: 'no token' }));
    await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['x'] })); // 401 too
    expect(trailRows(t).length).toBeGreaterThan(0);
    const day = 86_400_000;
    expect((await t.maintenance.runOnce(Date.now() + 29 * day)).trailExpired).toBe(0);
    const report = await t.maintenance.runOnce(Date.now() + 31 * day);
    expect(report.trailExpired).toBe(3);
    expect(trailRows(t)).toEqual([]);
  });
});
