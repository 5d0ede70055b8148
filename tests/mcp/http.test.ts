/**
 * Issue 29: MCP over Streamable HTTP at /mcp on a whole hub over loopback, driven by the SDK's
 * own client (StreamableHTTPClientTransport), as an assistant on another machine would use it.
 * No token or a bad one: 401 problem with WWW-Authenticate, never a tool list. An admin's token:
 * every tool, and the audit tools with the admin's privacy view; an auditor's: the gated
 * events hidden, exactly as the audit HTTP API hides them from the same token; a messaging
 * subscriber's: the mesh tools only. Bad bodies are 4xx problems and change nothing; a hub
 * without MCP_HTTP_ENABLED answers 404.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { AuditStore } from '../../plugins/audit/store/audit-store.js';
import { configProblems } from '../helpers/config.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import {
  HUB_MCP_TOOLS,
  localUserToken,
  NO_RATE_LIMITS,
  QUIET_ENV,
  seed,
  seedMcpData,
} from '../plugins/audit/helpers.js';
import { idpAuthEnv, type LocalIdp, startLocalIdp } from '../plugins/audit/idp.js';

const MESH_TOOLS = ['latest_readings', 'list_nodes', 'reading_history'];
const now = Date.now();

let idp: LocalIdp;
let t: TestHub;
let admin: string;
let auditor: string;
let subscriber: string;
let gatedId: string;
const clients: Client[] = [];

/** A token of the hub's own issuer for a user of `hub`. */
const hubToken = (hub: TestHub, username: string, roles: string[]) =>
  localUserToken(hub.hub.store.db, hub.hub.identity.localIssuer, username, roles);

async function connect(token?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const textOf = (result: { content: unknown }) => (result.content as Array<{ text: string }>)[0]!.text;
// biome-ignore lint/suspicious/noExplicitAny: tool answers are JSON of several shapes
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) return { error: textOf(result as { content: unknown }) };
  return JSON.parse(textOf(result as { content: unknown }));
}

/** A raw POST to /mcp (what a misbehaving client sends). */
function post(body: string, headers: Record<string, string> = {}, base = t.baseUrl) {
  return fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });
}

const LIST_TOOLS = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

/** The audit HTTP API's answer for the same token: the operations of the events it shows. */
async function apiOperations(token: string): Promise<string[]> {
  const res = await fetch(`${t.baseUrl}/api/events?limit=50`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Array<{ operation: string }> }).data.map((e) => e.operation);
}

const auditState = () =>
  t.hub.store.db.prepare('SELECT seq, tags, comment_count FROM audit_events ORDER BY seq').all();

beforeAll(async () => {
  idp = await startLocalIdp();
  t = await startTestHub({
    RADIO: 'none',
    PLUGINS: 'audit',
    ...QUIET_ENV,
    ...NO_RATE_LIMITS,
    ...idpAuthEnv(idp),
    MCP_HTTP_ENABLED: 'true',
    MCP_HTTP_MAX_BODY_BYTES: '2048',
    PRIVACY_SERVICES: 'teams',
    PRIVACY_SERVICE_ROLES: 'privacy-officer',
  });
  gatedId = seedMcpData(t.hub.store.db, now);
  admin = await hubToken(t, 'root', ['admin', 'privacy-officer']);
  auditor = await hubToken(t, 'carol', ['auditor']);
  subscriber = await hubToken(t, 'alice', ['subscriber']);
});
afterAll(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await t?.stop();
  await idp?.stop();
});

describe('MCP over HTTP at /mcp', () => {
  it('refuses a caller without a token, or with a bad one: 401 problem, a bearer challenge, no tools', async () => {
    await expect(connect()).rejects.toThrow(/401/);
    const refused: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer not-a-token' },
      { authorization: 'Basic cm9vdDpyb290' },
    ];
    for (const headers of refused) {
      const res = await post(LIST_TOOLS, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="meshhub"/);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      const text = await res.text();
      expect(JSON.parse(text)).toMatchObject({ status: 401, title: 'Unauthorized' });
      expect(text).not.toContain('search_events');
    }
  });

  it("gives an admin every tool and the admin's privacy view, as the audit API does", async () => {
    const client = await connect(admin);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(HUB_MCP_TOOLS);
    const found = await call(client, 'search_events', { limit: 10 });
    const operations = found.events.map((e: { operation: string }) => e.operation);
    expect(operations).toEqual(['MemberAdded', 'Add user', 'Delete user']);
    expect(operations).toEqual(await apiOperations(admin));
    expect(await call(client, 'get_event', { id: gatedId })).toMatchObject({
      operation: 'MemberAdded',
      actor: 'dave@contoso.com',
    });
    expect(await call(client, 'get_summary', {})).toMatchObject({ total: 3, by_result: { failure: 1 } });
    // A mesh tool answers from the running hub's database.
    const nodes = await call(client, 'list_nodes');
    expect(nodes.data).toContainEqual(expect.objectContaining({ node_id: '!a1b2c3d4', long_name: 'North' }));
  });

  it('gives an auditor the privacy-limited view: the gated events hidden, as the audit API hides them', async () => {
    const client = await connect(auditor);
    const found = await call(client, 'search_events', { limit: 10 });
    const operations = found.events.map((e: { operation: string }) => e.operation);
    expect(operations).toEqual(['Add user', 'Delete user']);
    expect(operations).toEqual(await apiOperations(auditor));
    expect((await call(client, 'get_event', { id: gatedId })).error).toBe(
      `event ${gatedId} is restricted; the roles of your token do not allow it`,
    );
    expect((await call(client, 'get_summary', {})).total).toBe(2);
    // The identity provider's token for an auditor: the same view, as the audit API gives it.
    const provided = await idp.token({ roles: ['auditor'], sub: 'carol-1' });
    const viaIdp = await call(await connect(provided), 'search_events', { limit: 10 });
    expect(viaIdp.events.map((e: { operation: string }) => e.operation)).toEqual(
      await apiOperations(provided),
    );
    expect(viaIdp.events).toHaveLength(2);
  });

  it('gives a role without audit access the mesh tools only', async () => {
    const client = await connect(subscriber);
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual(MESH_TOOLS);
    const refused = await client.callTool({ name: 'search_events', arguments: {} }).catch((e: Error) => e);
    expect(JSON.stringify(refused)).toMatch(/search_events/);
    expect((await call(client, 'list_nodes')).data).toContainEqual(
      expect.objectContaining({ node_id: '!a1b2c3d4' }),
    );
  });

  it('answers bad bodies with 4xx problems and changes nothing', async () => {
    const before = auditState();
    const auth = { authorization: `Bearer ${admin}` };
    const cases: Array<[string, Response, number]> = [
      ['not JSON', await post('{"jsonrpc": "2.0",', auth), 400],
      ['empty', await post('', auth), 400],
      ['not JSON-RPC', await post(JSON.stringify({ hello: 'world' }), auth), 400],
      ['an empty batch', await post('[]', auth), 400],
      [
        'too large',
        await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x'.repeat(4096) }), auth),
        413,
      ],
      ['not application/json', await post(LIST_TOOLS, { ...auth, 'content-type': 'text/plain' }), 415],
      ['no Accept for JSON and SSE', await post(LIST_TOOLS, { ...auth, accept: 'text/html' }), 406],
    ];
    for (const [what, res, status] of cases) {
      expect(res.status, what).toBe(status);
      expect(res.headers.get('content-type'), what).toBe('application/problem+json');
      expect(await res.json(), what).toMatchObject({ status, detail: expect.any(String) });
    }
    const get = await fetch(`${t.baseUrl}/mcp`, { headers: auth });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(auditState()).toEqual(before);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^meshhub_mcp_http_requests_total\{outcome="refused"\} [1-9]/m);
    // Still serving: a good request after the bad ones.
    const ok = await post(LIST_TOOLS, auth);
    expect(ok.status).toBe(200);
    const names = ((await ok.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map(
      (x) => x.name,
    );
    expect(names.sort()).toEqual(HUB_MCP_TOOLS);
  });
});

describe('odd but well-formed JSON-RPC', () => {
  it('never answers 5xx: protocol errors as JSON-RPC errors or 4xx problems, and the hub keeps serving', async () => {
    const auth = { authorization: `Bearer ${admin}` };
    const rpc = (method: string, params?: unknown, id: unknown = 1) => ({
      jsonrpc: '2.0',
      id,
      method,
      params,
    });
    const bodies: unknown[] = [
      rpc('no/such/method'),
      rpc('tools/call', { name: 'search_events', arguments: { limit: 'many', before_id: '0' } }),
      rpc('tools/call', { name: 'get_event', arguments: { id: '99999999999999999' } }),
      rpc('tools/call', { name: 'reading_history', arguments: { node_id: '!a1b2c3d4', start: 'x' } }),
      rpc('tools/call', { name: 'list_nodes', arguments: null }),
      rpc('tools/call', 'not an object'),
      rpc('initialize', {
        protocolVersion: '1999-01-01',
        capabilities: {},
        clientInfo: { name: 'x', version: '1' },
      }),
      [rpc('initialize', {}, 1), rpc('initialize', {}, 2)],
      [rpc('tools/list', {}, 1), rpc('tools/list', {}, 1)],
      Array.from({ length: 30 }, (_, i) => rpc('tools/list', {}, i)),
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } },
      rpc('tools/list', {}, null),
    ];
    for (const body of bodies) {
      const res = await post(JSON.stringify(body), auth);
      const text = await res.text();
      expect(res.status, `${JSON.stringify(body).slice(0, 120)} → ${text.slice(0, 300)}`).toBeLessThan(500);
      expect(text).not.toMatch(/\bat .+\.(ts|js):\d+/);
    }
    expect((await post(LIST_TOOLS, auth)).status).toBe(200);
  });
});

describe('a hub without MCP_HTTP_ENABLED', () => {
  it('answers /mcp with 404, token or not', async () => {
    const off = await startTestHub({ RADIO: 'none' });
    try {
      const token = await hubToken(off, 'root', ['admin']);
      const asked: Array<Record<string, string>> = [{}, { authorization: `Bearer ${token}` }];
      for (const headers of asked) {
        const res = await post(LIST_TOOLS, headers, off.baseUrl);
        expect(res.status).toBe(404);
        expect(await res.json()).toMatchObject({
          status: 404,
          detail: expect.stringContaining('MCP_HTTP_ENABLED'),
        });
      }
    } finally {
      await off.stop();
    }
  });
});

describe('the audit tools over HTTP follow the audit API', () => {
  it('count against its rate limits per client: 429 problem with Retry-After past RATE_LIMIT_DEFAULT', async () => {
    const limited = await startTestHub({
      RADIO: 'none',
      PLUGINS: 'audit',
      ...QUIET_ENV,
      ...idpAuthEnv(idp),
      MCP_HTTP_ENABLED: 'true',
      RATE_LIMIT_DEFAULT: '2/1h',
    });
    try {
      const reader = { authorization: `Bearer ${await hubToken(limited, 'carol', ['auditor'])}` };
      const other = { authorization: `Bearer ${await hubToken(limited, 'alice', ['subscriber'])}` };
      const summary = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_summary', arguments: {} },
      });
      const nodes = JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'list_nodes', arguments: {} },
      });
      // Listing tools and calling a mesh tool read no audit data: not counted.
      for (const body of [LIST_TOOLS, nodes, LIST_TOOLS, nodes]) {
        expect((await post(body, reader, limited.baseUrl)).status).toBe(200);
      }
      for (let i = 0; i < 2; i++) expect((await post(summary, reader, limited.baseUrl)).status).toBe(200);
      const refused = await post(summary, reader, limited.baseUrl);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ status: 429, tier: 'default' });
      // The mesh tools are not audit data: still served to this client.
      expect((await post(nodes, reader, limited.baseUrl)).status).toBe(200);
      // A caller without audit access gets no audit tools, so the audit limits do not count it.
      for (let i = 0; i < 3; i++) expect((await post(summary, other, limited.baseUrl)).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  it('with AUTH_ENABLED off (loopback): the anonymous view for every token, as the API shows it', async () => {
    const open = await startTestHub({
      RADIO: 'none',
      PLUGINS: 'audit',
      ...QUIET_ENV,
      MCP_HTTP_ENABLED: 'true',
      PRIVACY_SERVICES: 'teams',
      PRIVACY_SERVICE_ROLES: 'privacy-officer',
    });
    try {
      seed(new AuditStore(() => open.hub.store.db).repos(), [
        { source: 'directory', at: now - 3_600_000, operation: 'Add user' },
        { at: now - 1_800_000, service: 'MicrosoftTeams', operation: 'MemberAdded' },
      ]);
      const token = await hubToken(open, 'root', ['admin', 'privacy-officer']);
      const res = await post(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'get_summary', arguments: {} },
        }),
        { authorization: `Bearer ${token}` },
        open.baseUrl,
      );
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { result: { content: Array<{ text: string }> } };
      const api = (await (await fetch(`${open.baseUrl}/api/events`)).json()) as { data: unknown[] };
      expect(JSON.parse(answer.result.content[0]!.text).total).toBe(api.data.length);
      expect(api.data).toHaveLength(1);
    } finally {
      await open.stop();
    }
  });
});

describe('the settings of MCP over HTTP', () => {
  it('refuse a bad value at start, naming the setting and what it takes', () => {
    expect(
      configProblems(() => loadConfig({ MCP_HTTP_ENABLED: 'maybe', MCP_HTTP_MAX_BODY_BYTES: '10' })),
    ).toEqual(
      expect.arrayContaining([
        'MCP_HTTP_ENABLED: must be true or false (also yes/no, on/off, 1/0) (got "maybe")',
        'MCP_HTTP_MAX_BODY_BYTES: must be a whole number from 1024 to 1048576 (got "10")',
      ]),
    );
  });
});
