/**
 * `/api/v1/notifications/rules` and `/firings` over loopback HTTP: admins manage rules; bad
 * input is a 400 problem naming the field and changes nothing; others get 401/403.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, subscriber } from '../messaging/helpers.js';
import { createRule, freshNode, heard, type NotifyHub, startNotifyHub } from './helpers.js';

let h: NotifyHub;
const RULES = '/api/v1/notifications/rules';

beforeAll(async () => {
  h = await startNotifyHub();
});
afterAll(async () => {
  await h?.t.stop();
});

const rules = async () => (await call(h.t.baseUrl, 'GET', RULES, { token: h.admin })).body.data as unknown[];

describe('notification rules', () => {
  it('creates, reads, changes and deletes a rule', async () => {
    const created = await call(h.t.baseUrl, 'POST', RULES, {
      token: h.admin,
      body: {
        name: 'Gateway quiet',
        kind: 'node_offline',
        minutes: 30,
        nodes: ['!a1b2c3d4'],
        webhook: { url: 'https://ntfy.example.org/mesh', format: 'ntfy', secret: 'x'.repeat(20) },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.headers.get('location')).toBe(`${RULES}/${id}`);
    expect(created.body).toMatchObject({
      name: 'Gateway quiet',
      kind: 'node_offline',
      enabled: true,
      minutes: 30,
      repeat_minutes: 60,
      quiet_hours: null,
      push: true,
      webhook: { url: 'https://ntfy.example.org/mesh', format: 'ntfy', signed: true },
      mqtt_topic: `meshhub/alerts/${id}/<node_id>`,
    });
    expect(JSON.stringify(created.body)).not.toContain('xxxxxxxx');

    const patched = await call(h.t.baseUrl, 'PATCH', `${RULES}/${id}`, {
      token: h.admin,
      body: { minutes: 45, quiet_hours: '22:00-07:00', webhook: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ minutes: 45, quiet_hours: '22:00-07:00', webhook: null });
    expect((await call(h.t.baseUrl, 'GET', `${RULES}/${id}`, { token: h.admin })).body.minutes).toBe(45);

    expect((await call(h.t.baseUrl, 'DELETE', `${RULES}/${id}`, { token: h.admin })).status).toBe(204);
    expect((await call(h.t.baseUrl, 'GET', `${RULES}/${id}`, { token: h.admin })).status).toBe(404);
  });

  it.each([
    [{ name: 'x', kind: 'node_offline' }, 'minutes', 'is required for kind node_offline'],
    [{ name: 'x', kind: 'explode', minutes: 5 }, 'kind', 'must be one of'],
    [
      { name: 'x', kind: 'battery_low', threshold: 20, minutes: 5 },
      'minutes',
      'is not used by kind battery_low',
    ],
    [{ name: 'x', kind: 'battery_low', threshold: 120 }, 'threshold', 'must be from 0 to 100'],
    [{ name: 'x', kind: 'reading_out_of_range', metric: 'temperature_c' }, 'min', 'give min, max or both'],
    [
      { name: 'x', kind: 'reading_out_of_range', metric: 'temperature_c', min: 5, max: 1 },
      'max',
      'greater than min',
    ],
    [{ name: 'x', kind: 'new_node', nodes: ['abc'] }, 'nodes.0', 'node id'],
    [{ name: 'x', kind: 'new_node', colour: 'red' }, '(body)', 'colour'],
    [{ name: 'x', kind: 'new_node', quiet_hours: '25:00-07:00' }, 'quiet_hours', '22:00-07:00'],
    [{ name: 'x', kind: 'new_node', webhook: { url: 'http://example.org/hook' } }, 'webhook.url', 'https'],
    [{ name: '', kind: 'new_node' }, 'name', 'must not be empty'],
  ])('refuses %j with a 400 naming %s, and stores nothing', async (body, field, words) => {
    const before = await rules();
    const res = await call(h.t.baseUrl, 'POST', RULES, { token: h.admin, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const named = (res.body.errors as Array<{ field: string; message: string }>).find(
      (e) => e.field === field,
    );
    expect(named, JSON.stringify(res.body)).toBeDefined();
    expect(JSON.stringify(res.body.errors)).toContain(words);
    expect(await rules()).toEqual(before);
  });

  it('refuses a bad change and keeps the rule as it was', async () => {
    const id = await createRule(h, { name: 'Low', kind: 'battery_low', threshold: 20 });
    const before = (await call(h.t.baseUrl, 'GET', `${RULES}/${id}`, { token: h.admin })).body;
    for (const body of [{ threshold: 'lots' }, { kind: 'node_offline' }, { minutes: 5 }, { nope: 1 }]) {
      const res = await call(h.t.baseUrl, 'PATCH', `${RULES}/${id}`, { token: h.admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(
      (
        await call(h.t.baseUrl, 'PATCH', `${RULES}/${id}`, {
          token: h.admin,
          raw: '{',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(400);
    expect((await call(h.t.baseUrl, 'PATCH', `${RULES}/abc`, { token: h.admin, body: {} })).status).toBe(400);
    expect((await call(h.t.baseUrl, 'PATCH', `${RULES}/999999`, { token: h.admin, body: {} })).status).toBe(
      404,
    );
    expect((await call(h.t.baseUrl, 'GET', `${RULES}/${id}`, { token: h.admin })).body).toEqual(before);
  });

  it('lets only admins manage rules and read firings', async () => {
    const alice = await subscriber(h.t, 'alice-rules');
    expect((await call(h.t.baseUrl, 'GET', RULES)).status).toBe(401);
    expect((await call(h.t.baseUrl, 'GET', RULES, { token: alice })).status).toBe(403);
    const post = await call(h.t.baseUrl, 'POST', RULES, {
      token: alice,
      body: { name: 'x', kind: 'new_node' },
    });
    expect(post.status).toBe(403);
    expect((await call(h.t.baseUrl, 'GET', '/api/v1/notifications/firings', { token: alice })).status).toBe(
      403,
    );
  });

  it('pages firings newest first with the shared cursor', async () => {
    const id = await createRule(h, { name: 'New', kind: 'new_node', repeat_minutes: 0 });
    const nodes = [freshNode(), freshNode(), freshNode()];
    for (const n of nodes) heard(h, n);
    const first = await call(h.t.baseUrl, 'GET', '/api/v1/notifications/firings?limit=2', { token: h.admin });
    expect(first.status).toBe(200);
    expect(first.body.data.map((f: { node_id: string }) => f.node_id)).toEqual([nodes[2], nodes[1]]);
    expect(first.body.data[0]).toMatchObject({
      rule_id: id,
      kind: 'new_node',
      subject: nodes[2],
      quiet: false,
    });
    const link = first.headers.get('link')!;
    const next = /<([^>]+)>; rel="next"/.exec(link)![1]!;
    const second = await call(h.t.baseUrl, 'GET', next, { token: h.admin });
    expect(second.body.data[0].node_id).toBe(nodes[0]);
    const bad = await call(h.t.baseUrl, 'GET', '/api/v1/notifications/firings?cursor=nope!', {
      token: h.admin,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe('cursor');
    expect(
      (await call(h.t.baseUrl, 'GET', '/api/v1/notifications/firings?limit=0', { token: h.admin })).status,
    ).toBe(400);
  });

  it('keeps the VAPID key pair in DATA_DIR, readable by the hub alone, and serves its public half', async () => {
    const file = join(h.t.dataDir, 'vapid-keys.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    const key = await call(h.t.baseUrl, 'GET', '/api/v1/notifications/push/key');
    expect(key.body).toEqual({ public_key: stored.publicKey });
    expect(JSON.stringify(key.body)).not.toContain(stored.privateKey);
  });

  it('lists its routes in the OpenAPI document', async () => {
    const doc = (await call(h.t.baseUrl, 'GET', '/api/v1/openapi.json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/notifications/rules',
        '/api/v1/notifications/rules/{id}',
        '/api/v1/notifications/firings',
        '/api/v1/notifications/push/key',
        '/api/v1/notifications/push/subscriptions',
      ]),
    );
  });
});
