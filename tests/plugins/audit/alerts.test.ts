/**
 * Alert rules at work (ALERTS_ENABLED=true) through the whole hub: events come from the loopback
 * Microsoft fake by a real fetch, rules are written over HTTP, alerts read back from
 * `GET /api/alerts`. Event times are chosen relative to now (the fetch's look-back), at fixed
 * UTC hours on a recent Wednesday and Saturday, so "after hours" never depends on when the
 * test runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { AFTER_HOURS_RULE, type AlertsHub, jsonBody, recentDay, startAlertsHub } from './alerts-hub.js';

const H = 3_600_000;
const M = 60_000;
const running: AlertsHub[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
});
const start = async (env: Record<string, string> = {}) => {
  const h = await startAlertsHub(env);
  running.push(h);
  return h;
};

let n = 0;
const audit = (at: number, activity: string, result: string, user: string) =>
  directoryAudit(++n, at, { activity, result, user });

async function alerts(h: AlertsHub, query = '') {
  const res = await h.call(`/api/alerts${query}`);
  expect(res.status).toBe(200);
  return res.body as {
    data: Array<{
      id: string;
      rule: { id: string; name: string };
      key: string;
      severity: string;
      match_count: number;
      event: { actor: string; timestamp: string; operation: string };
    }>;
    next_cursor: string | null;
    prev_cursor: string | null;
  };
}

describe('an after-hours rule', () => {
  it('fires for failed role assignments outside Mon–Fri 08:00–18:00 UTC, and for nothing else', async () => {
    const h = await start();
    const rule = await h.call('/api/rules', jsonBody('POST', AFTER_HOURS_RULE));
    expect(rule.status).toBe(201);
    const wed = recentDay(3);
    const sat = recentDay(6);
    h.fake.directoryAudits.push(
      audit(wed + 23 * H + 30 * M, 'Add member to role', 'failure', 'mallory@contoso.com'), // fires: night
      audit(wed + 7 * H + 59 * M, 'Add eligible member to role', 'failure', 'early@contoso.com'), // fires: before 08:00
      audit(sat + 11 * H, 'Add app role assignment to service principal', 'failure', 'trudy@contoso.com'), // fires: weekend
      audit(wed + 10 * H, 'Add member to role', 'failure', 'eve@contoso.com'), // business hours
      audit(wed + 8 * H, 'Add member to role', 'failure', 'eight@contoso.com'), // 08:00 is inside
      audit(wed + 17 * H + 59 * M, 'Add member to role', 'failure', 'late@contoso.com'), // still inside
      audit(wed + 22 * H, 'Add member to role', 'success', 'oscar@contoso.com'), // succeeded
      audit(wed + 23 * H, 'Add member to group', 'failure', 'peggy@contoso.com'), // not a role
    );
    await h.fetchNow();
    const got = await alerts(h);
    expect(got.data.map((a) => a.key).sort()).toEqual([
      'early@contoso.com',
      'mallory@contoso.com',
      'trudy@contoso.com',
    ]);
    expect(got.data[0]).toMatchObject({
      rule: { id: rule.body.id, name: AFTER_HOURS_RULE.name },
      severity: 'high',
      match_count: 1,
    });
    const mallory = got.data.find((a) => a.key === 'mallory@contoso.com')!;
    expect(mallory.event).toMatchObject({
      operation: 'Add member to role',
      timestamp: new Date(wed + 23 * H + 30 * M).toISOString(),
    });
  });

  it('reads hours in the rule’s time zone (ALERT_TIME_ZONE, or the rule’s own)', async () => {
    // 10:00 UTC on a Wednesday is 19:00 in Tokyo (after hours) and 06:00 in New York (before hours).
    const h = await start({ ALERT_TIME_ZONE: 'Asia/Tokyo' });
    const wed = recentDay(3);
    const inTokyo = await h.call('/api/rules', jsonBody('POST', AFTER_HOURS_RULE));
    const inBerlin = await h.call(
      '/api/rules',
      jsonBody('POST', {
        ...AFTER_HOURS_RULE,
        name: 'Berlin',
        condition: {
          ...AFTER_HOURS_RULE.condition,
          time: { ...AFTER_HOURS_RULE.condition.time, time_zone: 'Europe/Berlin' },
        },
      }),
    );
    h.fake.directoryAudits.push(audit(wed + 10 * H, 'Add member to role', 'failure', 'eve@contoso.com'));
    await h.fetchNow();
    const got = await alerts(h);
    expect(got.data.map((a) => a.rule.id)).toEqual([inTokyo.body.id]);
    expect(inBerlin.status).toBe(201);
  });
});

describe('a threshold rule', () => {
  it('fires when an actor reaches N matches within the window, once per window, and not below N', async () => {
    const h = await start();
    const rule = await h.call(
      '/api/rules',
      jsonBody('POST', {
        name: 'Password reset burst',
        severity: 'medium',
        condition: {
          operation: { equals: 'Reset user password' },
          threshold: { count: 3, window: '10m', per: 'actor' },
        },
      }),
    );
    expect(rule.status).toBe(201);
    const t = recentDay(3) + 12 * H;
    const reset = (at: number, user: string) => audit(at, 'Reset user password', 'success', user);
    h.fake.directoryAudits.push(
      // alice: 3 within 4 minutes → fires at the third; 2 more inside the window → no second alert.
      reset(t, 'alice@contoso.com'),
      reset(t + 2 * M, 'alice@contoso.com'),
      reset(t + 4 * M, 'alice@contoso.com'),
      reset(t + 5 * M, 'alice@contoso.com'),
      reset(t + 6 * M, 'alice@contoso.com'),
      // …and 3 more half an hour later → a new window, a second alert.
      reset(t + 30 * M, 'alice@contoso.com'),
      reset(t + 31 * M, 'alice@contoso.com'),
      reset(t + 32 * M, 'alice@contoso.com'),
      // bob: 3 in 12 minutes, never 3 within 10 → nothing.
      reset(t, 'bob@contoso.com'),
      reset(t + 6 * M, 'bob@contoso.com'),
      reset(t + 12 * M, 'bob@contoso.com'),
      // carol: 2 → nothing; dave: 3 of another operation → nothing.
      reset(t, 'carol@contoso.com'),
      reset(t + M, 'carol@contoso.com'),
      audit(t, 'Update user', 'success', 'dave@contoso.com'),
      audit(t + M, 'Update user', 'success', 'dave@contoso.com'),
      audit(t + 2 * M, 'Update user', 'success', 'dave@contoso.com'),
    );
    await h.fetchNow();
    const got = await alerts(h);
    expect(
      got.data
        .map((a) => [a.key, a.match_count, a.event.timestamp])
        .sort((a, b) => String(a[2]).localeCompare(String(b[2]))),
    ).toEqual([
      ['alice@contoso.com', 3, new Date(t + 4 * M).toISOString()],
      ['alice@contoso.com', 3, new Date(t + 32 * M).toISOString()],
    ]);
  });

  it('counts every actor together with per: overall', async () => {
    const h = await start();
    await h.call(
      '/api/rules',
      jsonBody('POST', {
        name: 'Any three failures',
        condition: { result: 'failure', threshold: { count: 3, window: '1h', per: 'overall' } },
      }),
    );
    const t = recentDay(3) + 12 * H;
    h.fake.directoryAudits.push(
      audit(t, 'Update user', 'failure', 'a@contoso.com'),
      audit(t + M, 'Update user', 'failure', 'b@contoso.com'),
      audit(t + 2 * M, 'Update user', 'success', 'c@contoso.com'),
      audit(t + 3 * M, 'Update user', 'failure', 'c@contoso.com'),
    );
    await h.fetchNow();
    const got = await alerts(h);
    expect(got.data.map((a) => [a.key, a.match_count, a.event.actor])).toEqual([['*', 3, 'c@contoso.com']]);
  });
});

describe('evaluation', () => {
  it('applies rule changes to the next event without a restart, and never evaluates a re-fetched event twice', async () => {
    const h = await start();
    const every = {
      name: 'Every failure',
      condition: { result: 'failure', threshold: { count: 1, window: '1s' } },
    };
    const rule = await h.call('/api/rules', jsonBody('POST', every));
    const now = Date.now();
    h.fake.directoryAudits.push(audit(now - 20 * M, 'Update user', 'failure', 'a@contoso.com'));
    await h.fetchNow();
    expect((await alerts(h)).data).toHaveLength(1);
    const evaluated = async () =>
      (await h.call('/health')).body.actors.find((a: { name: string }) => a.name === 'audit-alerts')
        .events_evaluated;
    expect(await evaluated()).toBe(1);

    // Disabled: the next event does not fire. The first event comes again (the fetch overlap): a duplicate, not evaluated.
    await h.call(`/api/rules/${rule.body.id}`, jsonBody('PUT', { ...every, enabled: false }));
    h.fake.directoryAudits.push(audit(now - 10 * M, 'Update user', 'failure', 'b@contoso.com'));
    await h.fetchNow();
    expect((await alerts(h)).data).toHaveLength(1);
    expect(await evaluated()).toBe(2);

    // Enabled again, and narrowed to one actor: only that actor's next failure fires.
    await h.call(
      `/api/rules/${rule.body.id}`,
      jsonBody('PUT', { ...every, condition: { ...every.condition, actor: { contains: 'carol' } } }),
    );
    h.fake.directoryAudits.push(
      audit(now - 5 * M, 'Update user', 'failure', 'carol@contoso.com'),
      audit(now - 4 * M, 'Update user', 'failure', 'dan@contoso.com'),
    );
    await h.fetchNow();
    expect((await alerts(h)).data.map((a) => a.key)).toEqual(['carol@contoso.com', 'a@contoso.com']);
    expect(await evaluated()).toBe(4);

    // Deleted: nothing fires, and its alerts stay.
    await h.call(`/api/rules/${rule.body.id}`, { method: 'DELETE' });
    h.fake.directoryAudits.push(audit(now - 3 * M, 'Update user', 'failure', 'carol@contoso.com'));
    await h.fetchNow();
    expect((await alerts(h)).data).toHaveLength(2);
  });

  it('does not evaluate with ALERTS_ENABLED=false, and says so in /api/config/features', async () => {
    const h = await start({ ALERTS_ENABLED: 'false' });
    const off = (await h.call('/api/config/features')).body;
    expect(off).toMatchObject({ alerts_enabled: false, alerts: null });
    await h.call('/api/rules', jsonBody('POST', { name: 'Every failure', condition: { result: 'failure' } }));
    h.fake.directoryAudits.push(audit(Date.now() - 20 * M, 'Update user', 'failure', 'a@contoso.com'));
    await h.fetchNow();
    expect((await h.call('/api/events')).body.data).toHaveLength(1);
    expect((await alerts(h)).data).toEqual([]);
  });

  it('reports alerts in /api/config/features from the running state', async () => {
    const h = await start({ ALERT_TIME_ZONE: 'Europe/Berlin' });
    expect((await h.call('/api/config/features')).body).toMatchObject({
      alerts_enabled: true,
      alerts: { evaluating: true, webhook: 'not_configured', time_zone: 'Europe/Berlin' },
    });
  });
});

describe('GET /api/alerts', () => {
  it('filters by rule, severity and time, and pages with cursors both ways', async () => {
    const h = await start();
    const high = await h.call(
      '/api/rules',
      jsonBody('POST', {
        name: 'failures',
        severity: 'high',
        condition: { result: 'failure', threshold: { count: 1, window: '1s' } },
      }),
    );
    const low = await h.call(
      '/api/rules',
      jsonBody('POST', {
        name: 'successes',
        severity: 'low',
        condition: { result: 'success', threshold: { count: 1, window: '1s' } },
      }),
    );
    const t = recentDay(3) + 12 * H;
    for (let i = 0; i < 5; i++) {
      h.fake.directoryAudits.push(audit(t + i * M, 'Update user', 'failure', `f${i}@contoso.com`));
      h.fake.directoryAudits.push(audit(t + i * M, 'Update user', 'success', `s${i}@contoso.com`));
    }
    await h.fetchNow();
    expect((await alerts(h)).data).toHaveLength(10);
    expect((await alerts(h, `?rule=${high.body.id}`)).data.every((a) => a.rule.id === high.body.id)).toBe(
      true,
    );
    expect((await alerts(h, `?rule=${high.body.id}`)).data).toHaveLength(5);
    expect((await alerts(h, '?severity=low')).data.map((a) => a.rule.id)).toEqual(Array(5).fill(low.body.id));
    expect((await alerts(h, `?severity=low,high&rule=${low.body.id}`)).data).toHaveLength(5);
    const future = new Date(Date.now() + H).toISOString();
    expect((await alerts(h, `?start=${encodeURIComponent(future)}`)).data).toEqual([]);
    expect((await alerts(h, `?end=${encodeURIComponent(future)}`)).data).toHaveLength(10);

    const all = (await alerts(h)).data.map((a) => a.id);
    const p1 = await alerts(h, '?limit=4');
    expect(p1.data.map((a) => a.id)).toEqual(all.slice(0, 4));
    expect(p1.prev_cursor).toBeNull();
    const p2 = await alerts(h, `?limit=4&cursor=${p1.next_cursor}`);
    expect(p2.data.map((a) => a.id)).toEqual(all.slice(4, 8));
    const p3 = await alerts(h, `?limit=4&cursor=${p2.next_cursor}`);
    expect(p3.data.map((a) => a.id)).toEqual(all.slice(8));
    expect(p3.next_cursor).toBeNull();
    const back = await alerts(h, `?limit=4&cursor=${p3.prev_cursor}`);
    expect(back.data.map((a) => a.id)).toEqual(all.slice(4, 8));
    expect((await h.call(`/api/alerts/${all[0]}`)).body.id).toBe(all[0]);
  });

  it('answers bad filters and cursors with 400 naming them', async () => {
    const h = await start();
    const cases: Array<[string, string]> = [
      ['?severity=urgent', 'severity.0'],
      ['?rule=abc', 'rule.0'],
      ['?start=yesterday', 'start'],
      ['?start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z', 'end'],
      ['?limit=0', 'limit'],
      ['?limit=1&limit=2', 'limit'],
      ['?cursor=not-a-cursor', 'cursor'],
    ];
    for (const [query, field] of cases) {
      const res = await h.call(`/api/alerts${query}`);
      expect([query, res.status, res.body.errors?.map((e: { field: string }) => e.field)]).toEqual([
        query,
        400,
        [field],
      ]);
    }
    // An events cursor is not an alerts cursor.
    const eventsCursor = Buffer.from(JSON.stringify({ d: 'next', ts: 1, seq: 1 })).toString('base64url');
    expect((await h.call(`/api/alerts?cursor=${eventsCursor}`)).status).toBe(400);
    expect((await h.call('/api/alerts/0')).status).toBe(400);
    expect((await h.call('/api/alerts/12345')).status).toBe(404);
  });
});
