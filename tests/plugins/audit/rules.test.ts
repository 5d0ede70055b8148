/**
 * `/api/rules` over the hub's real HTTP socket, with AUTH_ENABLED and a loopback identity
 * provider: administrators only; create, list, read, replace, delete; names unique
 * (case-insensitive, 409); every kind of bad input a 400/404/413/415 naming the field, with
 * nothing changed; every write in the internal audit trail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AFTER_HOURS_RULE, type AlertsHub, jsonBody, startAlertsHub } from './alerts-hub.js';
import { bearerHeaders, idpAuthEnv, type LocalIdp, ROOT_ADMIN, startLocalIdp } from './idp.js';

let idp: LocalIdp;
let h: AlertsHub;
let admin: Record<string, string>;
let reader: Record<string, string>;
let stranger: Record<string, string>;

const AFTER_HOURS = {
  ...AFTER_HOURS_RULE,
  description: 'Someone tried to give a role outside business hours',
};

beforeAll(async () => {
  idp = await startLocalIdp();
  h = await startAlertsHub(idpAuthEnv(idp));
  admin = await bearerHeaders(idp, ROOT_ADMIN);
  reader = await bearerHeaders(idp, { roles: ['auditor'] });
  stranger = await bearerHeaders(idp, { roles: ['reader'] });
});
afterAll(async () => {
  await h?.stop();
  await idp?.stop();
});

const ruleCount = () => h.hub.store.db.prepare('SELECT count(*) FROM audit_alert_rules').pluck().get();
const trail = () =>
  h.hub.store.db
    .prepare(
      "SELECT method, path, status, username, detail FROM audit_trail WHERE path LIKE '/api/rules%' ORDER BY id",
    )
    .all() as Array<{
    method: string;
    path: string;
    status: number;
    username: string;
    detail: string | null;
  }>;

describe('/api/rules: who may', () => {
  it('refuses callers without a token (401), rule reads without a reader role and writes and alerts without the admin role (403)', async () => {
    expect((await h.call('/api/rules')).status).toBe(401);
    expect((await h.call('/api/rules', { headers: stranger })).status).toBe(403);
    expect((await h.call('/api/rules', { headers: reader })).status).toBe(200);
    const refused = await h.call('/api/rules', jsonBody('POST', AFTER_HOURS, reader));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ access: 'admin', roles: ['admin'] });
    expect(refused.body.detail).toMatch(/not allowed to change the audit data/);
    expect((await h.call('/api/alerts', { headers: reader })).status).toBe(403);
    expect(ruleCount()).toBe(0);
  });
});

describe('/api/rules: create, read, replace, delete', () => {
  it('round-trips a rule, folding service names as typed, and records each write in the trail', async () => {
    const created = await h.call('/api/rules', jsonBody('POST', AFTER_HOURS, admin));
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/api/rules/${created.body.id}`);
    expect(created.body).toMatchObject({
      name: AFTER_HOURS.name,
      severity: 'high',
      enabled: true,
      created_by: 'root@contoso.com',
      condition: {
        services: ['directory'],
        operation: { contains: ['member to role', 'role assignment'] },
        result: ['failure'],
        time: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], from: '08:00', to: '18:00', when: 'outside' },
      },
    });
    const id = created.body.id as string;
    expect((await h.call(`/api/rules/${id}`, { headers: admin })).body).toEqual(created.body);
    expect((await h.call('/api/rules', { headers: admin })).body.data).toEqual([created.body]);

    // The normalised condition parses back to itself: what GET shows can be PUT again.
    const replaced = await h.call(
      `/api/rules/${id}`,
      jsonBody(
        'PUT',
        {
          ...created.body,
          id: undefined,
          created_at: undefined,
          updated_at: undefined,
          created_by: undefined,
          updated_by: undefined,
          enabled: false,
          condition: { ...created.body.condition, threshold: { count: 5, window: '90m', per: 'overall' } },
        },
        admin,
      ),
    );
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      id,
      enabled: false,
      condition: { threshold: { count: 5, window: '90m', per: 'overall' } },
    });

    expect((await h.call(`/api/rules/${id}`, { method: 'DELETE', headers: admin })).status).toBe(204);
    expect((await h.call(`/api/rules/${id}`, { headers: admin })).status).toBe(404);
    expect(ruleCount()).toBe(0);

    const writes = trail().filter((t) => t.status < 400);
    expect(writes.map((t) => [t.method, t.status, t.username, JSON.parse(t.detail!).action])).toEqual([
      ['POST', 201, 'root@contoso.com', 'create-rule'],
      ['PUT', 200, 'root@contoso.com', 'update-rule'],
      ['DELETE', 204, 'root@contoso.com', 'delete-rule'],
    ]);
    const update = JSON.parse(writes[1]!.detail!);
    expect(update.before.enabled).toBe(true);
    expect(update.after.enabled).toBe(false);
  });

  it('keeps names unique, whatever the case (409 on create and on rename), changing nothing', async () => {
    const a = await h.call('/api/rules', jsonBody('POST', { name: 'Mass deletes', condition: {} }, admin));
    const b = await h.call('/api/rules', jsonBody('POST', { name: 'Guest invites', condition: {} }, admin));
    expect([a.status, b.status]).toEqual([201, 201]);
    const clash = await h.call(
      '/api/rules',
      jsonBody('POST', { name: 'MASS deletes', condition: {} }, admin),
    );
    expect(clash.status).toBe(409);
    expect(clash.body.errors).toEqual([
      {
        field: 'name',
        message: 'another rule is called "MASS deletes" (names are unique, case-insensitive)',
      },
    ]);
    const rename = await h.call(
      `/api/rules/${b.body.id}`,
      jsonBody('PUT', { name: 'mass Deletes', condition: { result: 'failure' } }, admin),
    );
    expect(rename.status).toBe(409);
    expect((await h.call(`/api/rules/${b.body.id}`, { headers: admin })).body).toEqual(b.body);
    // Renaming a rule to its own name in another case is not a clash.
    expect(
      (
        await h.call(
          `/api/rules/${a.body.id}`,
          jsonBody('PUT', { name: 'MASS DELETES', condition: {} }, admin),
        )
      ).status,
    ).toBe(200);
    for (const r of [a, b]) await h.call(`/api/rules/${r.body.id}`, { method: 'DELETE', headers: admin });
  });
});

describe('/api/rules: bad input', () => {
  const valid = { name: 'valid', condition: {} };
  const cases: Array<[string, unknown, Array<{ field: string; message: string | RegExp }>]> = [
    ['an unknown field', { ...valid, nmae: 'x' }, [{ field: 'nmae', message: 'is not a known field' }]],
    [
      'an unknown condition field',
      { ...valid, condition: { actors: 'bob' } },
      [{ field: 'condition.actors', message: 'is not a known field' }],
    ],
    [
      'a regex (catastrophic backtracking is never compiled: there is no regex field)',
      { ...valid, condition: { actor: { regex: '^(a+)+$' } } },
      [
        { field: 'condition.actor.regex', message: 'is not a known field' },
        { field: 'condition.actor', message: 'give equals or contains' },
      ],
    ],
    ['no name', { condition: {} }, [{ field: 'name', message: 'is required' }]],
    ['an empty name', { ...valid, name: '  ' }, [{ field: 'name', message: 'must not be empty' }]],
    ['no condition', { name: 'x' }, [{ field: 'condition', message: /expected object/ }]],
    [
      'enabled as a string',
      { ...valid, enabled: 'yes' },
      [{ field: 'enabled', message: 'must be true or false' }],
    ],
    [
      'an unknown severity',
      { ...valid, severity: 'urgent' },
      [{ field: 'severity', message: 'must be one of info, low, medium, high, critical' }],
    ],
    [
      'an unknown result',
      { ...valid, condition: { result: 'failed' } },
      [{ field: 'condition.result.0', message: 'must be one of success, failure, unknown' }],
    ],
    [
      'a number as actor text',
      { ...valid, condition: { actor: { equals: 42 } } },
      [{ field: 'condition.actor.equals.0', message: 'must be a string' }],
    ],
    [
      'a threshold of zero',
      { ...valid, condition: { threshold: { count: 0, window: '1h' } } },
      [{ field: 'condition.threshold.count', message: 'must be at least 1' }],
    ],
    [
      'a window of years',
      { ...valid, condition: { threshold: { count: 3, window: '730d' } } },
      [{ field: 'condition.threshold.window', message: 'must be between 1s and 7d' }],
    ],
    [
      'a window that is not a duration',
      { ...valid, condition: { threshold: { count: 3, window: '2 years' } } },
      [{ field: 'condition.threshold.window', message: 'must be a duration like 15m, 1h or 2d' }],
    ],
    [
      'a fractional count',
      { ...valid, condition: { threshold: { count: 2.5, window: '1h' } } },
      [{ field: 'condition.threshold.count', message: 'must be a whole number' }],
    ],
    [
      'an hour that does not exist',
      { ...valid, condition: { time: { from: '25:00', to: '06:00', when: 'outside' } } },
      [{ field: 'condition.time.from', message: 'must be a time like 08:00 (00:00–24:00)' }],
    ],
    [
      'an unknown day',
      { ...valid, condition: { time: { days: ['monday'] } } },
      [{ field: 'condition.time.days.0', message: /must be one of mon/ }],
    ],
    [
      'an unknown time zone',
      { ...valid, condition: { time: { from: '18:00', time_zone: 'Mars/Olympus_Mons' } } },
      [
        {
          field: 'condition.time.time_zone',
          message: 'must be an IANA time zone such as UTC or Europe/Berlin',
        },
      ],
    ],
  ];

  it.each(cases)(
    'answers 400 for %s, naming each field, and changes nothing',
    async (_what, body, errors) => {
      const before = ruleCount();
      const res = await h.call('/api/rules', jsonBody('POST', body, admin));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.errors).toHaveLength(errors.length);
      for (const [i, e] of errors.entries()) {
        expect(res.body.errors[i].field).toBe(e.field);
        if (typeof e.message === 'string') expect(res.body.errors[i].message).toBe(e.message);
        else expect(res.body.errors[i].message).toMatch(e.message);
      }
      expect(ruleCount()).toBe(before);
    },
  );

  it('refuses a bad body on PUT too, leaving the rule as it was', async () => {
    const rule = await h.call(
      '/api/rules',
      jsonBody('POST', { name: 'kept', condition: { result: 'failure' } }, admin),
    );
    const res = await h.call(
      `/api/rules/${rule.body.id}`,
      jsonBody('PUT', { name: 'kept', condition: { threshold: { count: 0, window: '1h' } } }, admin),
    );
    expect(res.status).toBe(400);
    expect((await h.call(`/api/rules/${rule.body.id}`, { headers: admin })).body).toEqual(rule.body);
    await h.call(`/api/rules/${rule.body.id}`, { method: 'DELETE', headers: admin });
  });

  it('answers other media types 415, broken JSON 400, huge bodies 413, bad ids 400 and unknown ids 404', async () => {
    const before = ruleCount();
    const text = await h.call('/api/rules', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(415);
    expect((await h.call('/api/rules', jsonBody('POST', '{"name": ', admin))).status).toBe(400);
    const huge = await h.call(
      '/api/rules',
      jsonBody('POST', { name: 'x', description: 'd'.repeat(70 * 1024), condition: {} }, admin),
    );
    expect(huge.status).toBe(413);
    const badId = await h.call('/api/rules/abc', { headers: admin });
    expect(badId.status).toBe(400);
    expect(badId.body.errors).toEqual([{ field: 'id', message: 'is not a rule id' }]);
    expect((await h.call('/api/rules/999999', { headers: admin })).status).toBe(404);
    expect((await h.call('/api/rules/999999', jsonBody('PUT', valid, admin))).status).toBe(404);
    expect((await h.call('/api/rules/999999', { method: 'DELETE', headers: admin })).status).toBe(404);
    expect(ruleCount()).toBe(before);
  });

  it('treats text as literal: a pattern in contains is only those characters', async () => {
    const res = await h.call(
      '/api/rules',
      jsonBody('POST', { name: 'literal', condition: { actor: { contains: '^(a+)+$' } } }, admin),
    );
    expect(res.status).toBe(201);
    expect(res.body.condition.actor).toEqual({ contains: ['^(a+)+$'] });
    await h.call(`/api/rules/${res.body.id}`, { method: 'DELETE', headers: admin });
  });
});
