/**
 * The mesh API's OpenAPI document: it is valid OpenAPI 3.0; it is served at /openapi.json (and as
 * an HTML page only when asked); and it tells the truth — every route the hub serves is in it,
 * and every operation in it, driven on a whole hub (real SQLite file, the simulator over TCP,
 * real HTTP), answers a status the document lists with a body its schema accepts.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meshOpenApiDocument } from '../../hub/openapi.js';
import { openApiRoutes } from '../../src/http/api-docs.js';
import type { HttpMethod } from '../../src/http/openapi.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { FAST_MESSAGING, knownNodes, subscriber } from '../messaging/helpers.js';
import { tilesAround, writeMbtiles } from '../ui-server/fixtures.js';
import { type Answer, Conformance, operationsOf } from './openapi-conformance.js';

const doc = meshOpenApiDocument('1.2.3');

describe('the mesh OpenAPI document', () => {
  it('is a valid OpenAPI 3.0 document', async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc).toMatchObject({ openapi: '3.0.3', info: { version: '1.2.3' } });
  });

  it('describes paging, Location, Retry-After, problem details and bearer security', () => {
    const history = doc.paths['/api/v1/weather/history']!.get!;
    expect(Object.keys(history.responses['200']!.headers!)).toEqual(['Link']);
    expect(history.parameters!.find((p) => p.name === 'limit')!.schema).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: 10_000,
      default: 1000,
    });
    const send = doc.paths['/api/v1/messages']!.post!;
    expect(send.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(send.responses)).toEqual(
      expect.arrayContaining(['202', '400', '401', '403', '404', '422', '429']),
    );
    expect(send.responses['202']!.headers).toHaveProperty('Location');
    expect(send.responses['429']!.headers).toHaveProperty('Retry-After');
    expect(send.responses['429']!.content).toEqual({
      'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
    });
    expect(send.requestBody!.content['application/json']!.schema).toMatchObject({
      required: ['target_node_id', 'text'],
      additionalProperties: false,
    });
    expect(doc.components.securitySchemes.bearerAuth).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });
    // The spec's field names, exactly.
    expect(Object.keys(doc.components.schemas.MessageRecord!.properties as object)).toEqual([
      'id',
      'direction',
      'sender_node_id',
      'target_node_id',
      'text',
      'status',
      'created_at',
    ]);
    expect(Object.keys(doc.components.schemas.ConversationSummary!.properties as object)).toEqual([
      'node_id',
      'nickname',
      'latest_text',
      'latest_at',
      'unread_count',
      'waiting_count',
      'failed_count',
    ]);
  });
});

describe('openApiRoutes', () => {
  const mounted = (docs?: boolean) => {
    const app = new Hono();
    app.route('/api/v1', openApiRoutes(doc, docs === undefined ? {} : { docs }));
    return app;
  };

  it('serves the document at /openapi.json', async () => {
    const res = await mounted().request('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it('serves no documentation page unless asked to', async () => {
    expect((await mounted().request('/api/v1/docs')).status).toBe(404);
    expect((await mounted(false).request('/api/v1/docs')).status).toBe(404);
  });

  it('serves the page when enabled: every operation and schema, no script, nothing from elsewhere', async () => {
    const res = await mounted(true).request('/api/v1/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const op of Object.values(item)) {
        expect(html).toContain(`id="op-${op!.operationId}"`);
        expect(html).toContain(`<code>${path.replace(/'/g, '&#39;')}</code>`);
      }
    }
    for (const name of Object.keys(doc.components.schemas)) expect(html).toContain(`id="schema-${name}"`);
    expect(html).toContain('<a href="#schema-MessageRecord">#/components/schemas/MessageRecord</a>');
    expect(html).toContain('href="openapi.json"');
    expect(html).not.toMatch(/<script|https?:\/\/(?!github\.com)/i);
  });
});

describe('the document and the hub agree', () => {
  let t: TestHub;
  let dir: string;
  let alice: string;
  let admin: string;
  let sensor: string;
  let node: string;
  /** The traceroute the POST case sent (the GET case reads it back). */
  let traceId: string | undefined;
  const conformance = new Conformance(doc);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'meshhub-openapi-'));
    const tiles = join(dir, 'tiles.mbtiles');
    writeMbtiles(tiles, tilesAround(47.3769, 8.5417, 2), {
      name: 'test',
      format: 'png',
      bounds: '8.4,47.3,8.7,47.5',
      center: '8.5417,47.3769,2',
      minzoom: '0',
      maxzoom: '2',
    });
    t = await startTestHub({
      ...FAST_MESSAGING,
      SIM_BACKFILL: '3h',
      MAP_TILES: tiles,
      MCP_HTTP_ENABLED: 'true',
    });
    node = (await knownNodes(t, 1))[0]!;
    alice = await subscriber(t, 'alice');
    admin = await subscriber(t, 'root', { roles: ['admin'], nodes: 'none' });
    sensor = await subscriber(t, 'sensor', { roles: ['ingest'], nodes: 'none' });
  });
  afterAll(async () => {
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function call(
    method: HttpMethod,
    path: string,
    url: string,
    options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer & { json: () => unknown }> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] ??= 'application/json';
    const res = await fetch(`${t.baseUrl}${url}`, {
      method: method.toUpperCase(),
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const answer = { status: res.status, headers: res.headers, text: await res.text() };
    conformance.check(method, path, answer);
    return { ...answer, json: () => JSON.parse(answer.text) };
  }

  /** The data of the first Server-Sent Event named `event` (without one: the first block), then the stream is dropped. */
  async function firstEvent(path: string, url: string, event?: string): Promise<unknown> {
    const abort = new AbortController();
    const res = await fetch(`${t.baseUrl}${url}`, { signal: abort.signal });
    conformance.check('get', path, { status: res.status, headers: res.headers, text: '' });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before "${event}"`);
        text += value;
        if (event === undefined && text.includes('\n\n')) return undefined;
        const m = new RegExp(`(?:^|\\n)event: ${event}\\ndata: (.*)\\n\\n`).exec(text);
        if (m) return JSON.parse(m[1]!);
      }
    } finally {
      abort.abort();
    }
  }

  it('serves every route the document lists, and lists every API route it serves', () => {
    const served = new Set(
      t.hub.http
        .app!.routes.filter((r) => r.method !== 'ALL')
        .filter((r) => /^\/(api\/|\.well-known\/|health$|metrics$|mcp$)/.test(r.path))
        // The document's own routes are mounted beside the API (src/http/api-docs.ts).
        .filter((r) => !/\/(openapi\.json|docs)$/.test(r.path))
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`),
    );
    expect([...served].sort()).toEqual(operationsOf(doc).sort());
  });

  const send = (text: string, headers: Record<string, string> = {}) =>
    call('post', '/api/v1/messages', '/api/v1/messages', {
      token: alice,
      body: { target_node_id: node, text },
      headers,
    });

  const notificationRule = async (): Promise<number> => {
    const res = await fetch(`${t.baseUrl}/api/v1/notifications/rules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Low battery', kind: 'battery_low', threshold: 20 }),
    });
    return ((await res.json()) as { id: number }).id;
  };
  /** A browser's PushSubscription.toJSON() (nothing is ever pushed to it here). */
  const pushSubscription = (name: string) => {
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    return {
      endpoint: `https://push.example.org/${name}`,
      expirationTime: null,
      keys: {
        p256dh: ecdh.getPublicKey().toString('base64url'),
        auth: randomBytes(16).toString('base64url'),
      },
    };
  };

  /** One case per operation of the document: valid requests (and a few refused ones), each on its own. */
  const cases: Record<string, () => Promise<void>> = {
    'GET /api/v1/weather/latest': async () => {
      const latest = await call('get', '/api/v1/weather/latest', '/api/v1/weather/latest');
      expect(latest.status).toBe(200);
      const [one] = (latest.json() as { data: Array<{ node_id: string }> }).data;
      const path = `/api/v1/weather/latest?node_id=${encodeURIComponent(one!.node_id)}`;
      expect((await call('get', '/api/v1/weather/latest', path)).status).toBe(200);
      expect((await call('get', '/api/v1/weather/latest', '/api/v1/weather/latest?node_id=')).status).toBe(
        400,
      );
    },
    'GET /api/v1/weather/history': async () => {
      const latest = await fetch(`${t.baseUrl}/api/v1/weather/latest`);
      const [one] = ((await latest.json()) as { data: Array<{ node_id: string; timestamp: string }> }).data;
      const end = new Date(Date.parse(one!.timestamp) + 1).toISOString();
      const start = new Date(Date.parse(end) - 4 * 3_600_000).toISOString();
      const query = (more: Record<string, string>) =>
        `/api/v1/weather/history?${new URLSearchParams({ node_id: one!.node_id, start, end, ...more })}`;
      const page = await call('get', '/api/v1/weather/history', query({ limit: '2' }));
      expect(page.status).toBe(200);
      const link = page.headers.get('link')!;
      expect(link).toMatch(/rel="next"$/);
      expect((await call('get', '/api/v1/weather/history', link.slice(1, link.indexOf('>')))).status).toBe(
        200,
      );
      expect((await call('get', '/api/v1/weather/history', query({ interval: '1h' }))).status).toBe(200);
      expect((await call('get', '/api/v1/weather/history', query({ limit: '0' }))).status).toBe(400);
    },
    'GET /api/v1/nodes': async () => {
      expect((await call('get', '/api/v1/nodes', '/api/v1/nodes')).status).toBe(200);
    },
    'GET /api/v1/nodes/{node_id}': async () => {
      const path = '/api/v1/nodes/{node_id}';
      expect((await call('get', path, `/api/v1/nodes/${node}`)).status).toBe(200);
      expect((await call('get', path, '/api/v1/nodes/!0badc0de')).status).toBe(404);
      expect((await call('get', path, '/api/v1/nodes/nope')).status).toBe(400);
    },
    'GET /api/v1/nodes/{node_id}/device-health': async () => {
      const path = '/api/v1/nodes/{node_id}/device-health';
      const day = `start=${new Date(Date.now() - 86_400_000).toISOString()}&end=${new Date().toISOString()}`;
      expect((await call('get', path, `/api/v1/nodes/${node}/device-health?interval=1h&${day}`)).status).toBe(
        200,
      );
      expect((await call('get', path, `/api/v1/nodes/${node}/device-health?interval=2h`)).status).toBe(400);
    },
    'GET /api/v1/device-health/latest': async () => {
      const path = '/api/v1/device-health/latest';
      expect((await call('get', path, path)).status).toBe(200);
      expect((await call('get', path, `${path}?node_id=nope`)).status).toBe(400);
    },
    'GET /api/v1/radio/airtime': async () => {
      expect((await call('get', '/api/v1/radio/airtime', '/api/v1/radio/airtime')).status).toBe(200);
    },
    'POST /api/v1/nodes/{node_id}/traceroute': async () => {
      const path = '/api/v1/nodes/{node_id}/traceroute';
      const accepted = await call('post', path, `/api/v1/nodes/${node}/traceroute`, { token: admin });
      expect(accepted.status).toBe(202);
      traceId = (accepted.json() as { id: string }).id;
      expect((await call('post', path, `/api/v1/nodes/${node}/traceroute`, { token: admin })).status).toBe(
        429,
      );
      expect((await call('post', path, `/api/v1/nodes/${node}/traceroute`, { token: alice })).status).toBe(
        403,
      );
      expect((await call('post', path, '/api/v1/nodes/nope/traceroute', { token: admin })).status).toBe(400);
    },
    'GET /api/v1/traceroutes': async () => {
      expect((await call('get', '/api/v1/traceroutes', '/api/v1/traceroutes?limit=1')).status).toBe(200);
      expect((await call('get', '/api/v1/traceroutes', '/api/v1/traceroutes?limit=0')).status).toBe(400);
    },
    'GET /api/v1/traceroutes/{id}': async () => {
      const path = '/api/v1/traceroutes/{id}';
      expect((await call('get', path, `/api/v1/traceroutes/${traceId}`)).status).toBe(200);
      expect(
        (await call('get', path, '/api/v1/traceroutes/01890000-0000-7000-8000-000000000000')).status,
      ).toBe(404);
      expect((await call('get', path, '/api/v1/traceroutes/x')).status).toBe(400);
    },
    'GET /api/v1/links': async () => {
      expect((await call('get', '/api/v1/links', `/api/v1/links?node_id=${node}`)).status).toBe(200);
      expect((await call('get', '/api/v1/links', '/api/v1/links?since=x')).status).toBe(400);
    },
    'GET /api/v1/packets': async () => {
      const page = await call('get', '/api/v1/packets', '/api/v1/packets?limit=1');
      expect(page.status).toBe(200);
      expect(page.headers.get('link')).toMatch(/rel="next"$/);
      expect((await call('get', '/api/v1/packets', '/api/v1/packets?format=csv')).status).toBe(200);
      expect((await call('get', '/api/v1/packets', '/api/v1/packets?port=NOPE')).status).toBe(400);
    },
    'GET /api/v1/packets/stream': async () => {
      await firstEvent('/api/v1/packets/stream', '/api/v1/packets/stream');
    },
    'GET /api/v1/map/tilejson': async () => {
      const tilejson = await call('get', '/api/v1/map/tilejson', '/api/v1/map/tilejson');
      expect(tilejson.json()).toMatchObject({ tilejson: '3.0.0', bounds: [8.4, 47.3, 8.7, 47.5] });
    },
    'GET /api/v1/map/tiles/{z}/{x}/{y}': async () => {
      const tile = await fetch(`${t.baseUrl}/api/v1/map/tiles/0/0/0.png`);
      await tile.arrayBuffer();
      conformance.check('get', '/api/v1/map/tiles/{z}/{x}/{y}', {
        status: tile.status,
        headers: tile.headers,
        text: '',
      });
      expect(tile.status).toBe(200);
      expect((await call('get', '/api/v1/map/tiles/{z}/{x}/{y}', '/api/v1/map/tiles/1/9/0')).status).toBe(
        400,
      );
    },
    'POST /api/v1/auth/token': async () => {
      const path = '/api/v1/auth/token';
      const ok = await call('post', path, path, { body: { username: 'alice', password: 'field-radio-42' } });
      expect(ok.status).toBe(200);
      expect((await call('post', path, path, { body: { username: 'alice', password: 'nope' } })).status).toBe(
        401,
      );
    },
    'POST /api/v1/auth/refresh': async () => {
      const login = await call('post', '/api/v1/auth/token', '/api/v1/auth/token', {
        body: { username: 'alice', password: 'field-radio-42' },
      });
      const path = '/api/v1/auth/refresh';
      const refresh_token = (login.json() as { refresh_token: string }).refresh_token;
      expect((await call('post', path, path, { body: { refresh_token } })).status).toBe(200);
      expect((await call('post', path, path, { body: { refresh_token } })).status).toBe(401);
      expect((await call('post', path, path, { body: {} })).status).toBe(400);
    },
    'GET /.well-known/jwks.json': async () => {
      expect((await call('get', '/.well-known/jwks.json', '/.well-known/jwks.json')).status).toBe(200);
    },
    'POST /api/v1/ingest/readings': async () => {
      const path = '/api/v1/ingest/readings';
      const body = [
        { node_id: 'greenhouse-1', timestamp: new Date().toISOString(), temperature_c: 21.5 },
        { node_id: 'greenhouse-1', temprature_c: 3 },
      ];
      expect((await call('post', path, path, { token: sensor, body })).status).toBe(202);
      expect((await call('post', path, path, { token: sensor, body: { node_id: 'g' } })).status).toBe(422);
      expect((await call('post', path, path, { body: { node_id: 'g' } })).status).toBe(401);
    },
    'POST /api/v1/messages': async () => {
      const sent = await send('Is the hut open?', { 'idempotency-key': 'openapi-1' });
      expect(sent.status).toBe(202);
      expect(sent.headers.get('location')).toBe(`/api/v1/messages/${(sent.json() as { id: string }).id}`);
      expect((await send('Is the hut open?', { 'idempotency-key': 'openapi-1' })).status).toBe(202);
      expect((await send('')).status).toBe(400);
      const anonymous = await call('post', '/api/v1/messages', '/api/v1/messages', {
        body: { target_node_id: node, text: 'x' },
      });
      expect(anonymous.status).toBe(401);
    },
    'GET /api/v1/messages/{id}': async () => {
      const { id } = (await send('Where are you?')).json() as { id: string };
      const one = await call('get', '/api/v1/messages/{id}', `/api/v1/messages/${id}`, { token: alice });
      expect(one.status).toBe(200);
    },
    'GET /api/v1/messages/conversations': async () => {
      await send('Hello');
      const path = '/api/v1/messages/conversations';
      expect((await call('get', path, path, { token: alice })).status).toBe(200);
      expect((await call('get', path, `${path}?limit=0`, { token: alice })).status).toBe(400);
    },
    'GET /api/v1/messages/conversations/{node_id}': async () => {
      await send('One');
      await send('Two');
      const path = '/api/v1/messages/conversations/{node_id}';
      const first = await call('get', path, `/api/v1/messages/conversations/${node}?limit=1`, {
        token: alice,
      });
      expect(first.status).toBe(200);
      expect(first.headers.get('link')).toMatch(/rel="next"$/);
    },
    'PATCH /api/v1/messages/conversations/{node_id}': async () => {
      await send('Hi');
      const path = '/api/v1/messages/conversations/{node_id}';
      const named = await call('patch', path, `/api/v1/messages/conversations/${node}`, {
        token: alice,
        body: { nickname: 'The hut' },
      });
      expect(named.status).toBe(200);
    },
    'GET /api/v1/messages/unmatched': async () => {
      const path = '/api/v1/messages/unmatched';
      expect((await call('get', path, path, { token: admin })).status).toBe(200);
      expect((await call('get', path, path, { token: alice })).status).toBe(403);
    },
    'POST /api/v1/messages/stream/tickets': async () => {
      const path = '/api/v1/messages/stream/tickets';
      expect((await call('post', path, path, { token: alice })).status).toBe(201);
    },
    'GET /api/v1/messages/stream': async () => {
      const ticket = await fetch(`${t.baseUrl}/api/v1/messages/stream/tickets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice}` },
      });
      const { ticket: value } = (await ticket.json()) as { ticket: string };
      await firstEvent('/api/v1/messages/stream', `/api/v1/messages/stream?ticket=${value}`);
      expect((await call('get', '/api/v1/messages/stream', '/api/v1/messages/stream')).status).toBe(401);
    },
    'GET /api/v1/live': async () => {
      conformance.component('LiveHello', await firstEvent('/api/v1/live', '/api/v1/live', 'hello'));
    },
    'GET /api/v1/notifications/rules': async () => {
      const path = '/api/v1/notifications/rules';
      expect((await call('get', path, path, { token: admin })).status).toBe(200);
      expect((await call('get', path, path, { token: alice })).status).toBe(403);
    },
    'POST /api/v1/notifications/rules': async () => {
      const path = '/api/v1/notifications/rules';
      const body = { name: 'Quiet gateway', kind: 'node_offline', minutes: 30 };
      expect((await call('post', path, path, { token: admin, body })).status).toBe(201);
      expect((await call('post', path, path, { token: admin, body: { ...body, minutes: 0 } })).status).toBe(
        400,
      );
    },
    'GET /api/v1/notifications/rules/{id}': async () => {
      const path = '/api/v1/notifications/rules/{id}';
      expect(
        (await call('get', path, `/api/v1/notifications/rules/${await notificationRule()}`, { token: admin }))
          .status,
      ).toBe(200);
      expect((await call('get', path, '/api/v1/notifications/rules/999999', { token: admin })).status).toBe(
        404,
      );
    },
    'PATCH /api/v1/notifications/rules/{id}': async () => {
      const path = '/api/v1/notifications/rules/{id}';
      const url = `/api/v1/notifications/rules/${await notificationRule()}`;
      expect((await call('patch', path, url, { token: admin, body: { enabled: false } })).status).toBe(200);
      expect((await call('patch', path, url, { token: admin, body: { minutes: 5 } })).status).toBe(400);
    },
    'DELETE /api/v1/notifications/rules/{id}': async () => {
      const path = '/api/v1/notifications/rules/{id}';
      const url = `/api/v1/notifications/rules/${await notificationRule()}`;
      expect((await call('delete', path, url, { token: admin })).status).toBe(204);
      expect((await call('delete', path, url, { token: admin })).status).toBe(404);
    },
    'GET /api/v1/notifications/firings': async () => {
      const path = '/api/v1/notifications/firings';
      expect((await call('get', path, path, { token: admin })).status).toBe(200);
      expect((await call('get', path, `${path}?cursor=x`, { token: admin })).status).toBe(400);
    },
    'GET /api/v1/notifications/push/key': async () => {
      const path = '/api/v1/notifications/push/key';
      expect((await call('get', path, path)).status).toBe(200);
    },
    'POST /api/v1/notifications/push/subscriptions': async () => {
      const path = '/api/v1/notifications/push/subscriptions';
      expect((await call('post', path, path, { token: alice, body: pushSubscription('a') })).status).toBe(
        201,
      );
      expect((await call('post', path, path, { token: alice, body: { endpoint: 'x' } })).status).toBe(400);
    },
    'DELETE /api/v1/notifications/push/subscriptions': async () => {
      const path = '/api/v1/notifications/push/subscriptions';
      const sub = pushSubscription('b');
      await call('post', path, path, { token: alice, body: sub });
      expect(
        (await call('delete', path, path, { token: alice, body: { endpoint: sub.endpoint } })).status,
      ).toBe(204);
      expect(
        (await call('delete', path, path, { token: alice, body: { endpoint: sub.endpoint } })).status,
      ).toBe(404);
    },
    'GET /health': async () => {
      expect([200, 503]).toContain((await call('get', '/health', '/health')).status);
    },
    'GET /api/version': async () => {
      expect((await call('get', '/api/version', '/api/version')).status).toBe(200);
    },
    'GET /metrics': async () => {
      expect((await call('get', '/metrics', '/metrics')).status).toBe(200);
    },
    'POST /mcp': async () => {
      const accept = { accept: 'application/json, text/event-stream' };
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
      expect((await call('post', '/mcp', '/mcp', { body: list, headers: accept })).status).toBe(401);
      const tools = await call('post', '/mcp', '/mcp', { token: admin, body: list, headers: accept });
      expect(tools.status).toBe(200);
      const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
      expect((await call('post', '/mcp', '/mcp', { token: admin, body: note, headers: accept })).status).toBe(
        202,
      );
      expect(
        (await call('post', '/mcp', '/mcp', { token: admin, body: { a: 1 }, headers: accept })).status,
      ).toBe(400);
    },
  };

  it('has a case for every operation of the document', () => {
    expect(Object.keys(cases).sort()).toEqual(operationsOf(doc).sort());
  });

  it.each(Object.keys(cases))('%s answers as documented', async (operation) => {
    await cases[operation]!();
    expect(conformance.covered).toContain(operation);
  });
});
