/**
 * The MCP server (`meshhub mcp`) driven by the SDK's own Client over the stdio transport's
 * framing (newline-delimited JSON-RPC on a pair of streams, exactly what a client sees on the
 * process's stdin and stdout): the tools, their input schemas, privacy gating with MCP_ROLES,
 * bad arguments as error results, and nothing but protocol on stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MCP_SECURITY_WARNING, type McpRun, runMcpServer } from '../../../hub/mcp.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { HUB_MCP_TOOLS, seedMcpData } from './helpers.js';

/** The client side of stdio: what StdioClientTransport does with a child's pipes, on streams. */
class StreamClientTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly buffer = new ReadBuffer();
  constructor(
    private readonly toServer: PassThrough,
    private readonly fromServer: PassThrough,
  ) {}
  async start() {
    this.fromServer.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (let m = this.buffer.readMessage(); m; m = this.buffer.readMessage()) this.onmessage?.(m);
    });
  }
  async send(message: JSONRPCMessage) {
    this.toServer.write(serializeMessage(message));
  }
  async close() {
    this.toServer.end();
    this.onclose?.();
  }
}

let dir: string;
let stdoutText = '';
let stderrText = '';
const runs: Array<{ run: McpRun; client: Client }> = [];
const now = Date.now();
let gatedId = '';

async function connect(env: Record<string, string> = {}) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on('data', (d) => (stdoutText += d));
  stderr.on('data', (d) => (stderrText += d));
  const run = await runMcpServer(
    { DATA_DIR: dir, LOG_LEVEL: 'silent', PRIVACY_SERVICES: 'teams', ...env },
    {
      stdin,
      stdout,
      stderr,
    },
  );
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamClientTransport(stdin, stdout));
  runs.push({ run, client });
  return client;
}

const textOf = (result: { content: unknown }) => (result.content as Array<{ text: string }>)[0]!.text;
// biome-ignore lint/suspicious/noExplicitAny: tool answers are JSON of several shapes
const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> => {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) return { error: textOf(result as { content: unknown }) };
  return JSON.parse(textOf(result as { content: unknown }));
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-mcp-'));
  const db = openDatabase(join(dir, 'meshhub.sqlite'));
  gatedId = seedMcpData(db, now);
  closeDatabase(db);
});
afterEach(async () => {
  for (const { client, run } of runs.splice(0)) {
    await client.close();
    await run.close();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('meshhub mcp', () => {
  it('warns on stderr, speaks only protocol on stdout, and lists typed tools', async () => {
    stdoutText = '';
    stderrText = '';
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(HUB_MCP_TOOLS);
    const search = tools.find((t) => t.name === 'search_events')!;
    expect(search.inputSchema.properties).toHaveProperty('start');
    expect(stderrText).toContain(MCP_SECURITY_WARNING);
    for (const line of stdoutText.trim().split('\n'))
      expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
  });

  it('searches, gets and summarises events without the gated ones', async () => {
    const client = await connect();
    const found = await call(client, 'search_events', { limit: 10 });
    expect(found.events.map((e: { operation: string }) => e.operation)).toEqual(['Add user', 'Delete user']);
    const one = await call(client, 'get_event', { id: found.events[0].id });
    expect(one).toMatchObject({ operation: 'Add user', actor: 'eve@contoso.com', raw: expect.any(Object) });
    const summary = await call(client, 'get_summary', {});
    expect(summary).toMatchObject({
      total: 2,
      by_service: { directory: 2 },
      by_result: { failure: 1, success: 1 },
    });
    const gated = await call(client, 'get_event', { id: gatedId });
    expect(gated.error).toContain('restricted; MCP_ROLES does not allow it');
  });

  it('hides services named as products in PRIVACY_SERVICES (issue 23: "Entra ID" is the directory)', async () => {
    const client = await connect({ PRIVACY_SERVICES: 'Entra ID,Intune' });
    const found = await call(client, 'search_events', { limit: 10 });
    expect(found.events.map((e: { operation: string }) => e.operation)).toEqual(['MemberAdded']);
    // Event 1 is the first seeded one, a directory event.
    expect((await call(client, 'get_event', { id: '1' })).error).toContain('restricted');
    expect(await call(client, 'get_summary', {})).toMatchObject({ total: 1, by_service: { teams: 1 } });
  });

  it('shows gated events with a role in MCP_ROLES', async () => {
    const client = await connect({ MCP_ROLES: 'Audit.Privacy', PRIVACY_SERVICE_ROLES: 'Audit.Privacy' });
    expect((await call(client, 'get_summary', {})).total).toBe(3);
  });

  it('answers the mesh tools', async () => {
    const client = await connect();
    expect((await call(client, 'list_nodes')).data[0]).toMatchObject({
      node_id: '!a1b2c3d4',
      long_name: 'North',
    });
    expect(await call(client, 'latest_readings', {})).toEqual({ data: [] });
    const history = await call(client, 'reading_history', {
      node_id: '!a1b2c3d4',
      start: new Date(now - 86_400_000).toISOString(),
    });
    expect(history).toMatchObject({ data: [], more: false });
  });

  it('answers bad arguments with error results, not a crash', async () => {
    const client = await connect();
    for (const [name, args] of [
      ['get_event', {}],
      ['get_event', { id: 'abc' }],
      ['get_event', { id: '999999' }],
      ['search_events', { limit: 1000 }],
      ['search_events', { start: 'yesterday' }],
      ['search_events', { start: '2026-01-02T00:00:00Z', end: '2026-01-01T00:00:00Z' }],
      ['reading_history', { node_id: 'north', start: '2026-01-01T00:00:00Z' }],
      ['no_such_tool', {}],
    ] as const) {
      const result = await client
        .callTool({ name, arguments: args })
        .catch((e: Error) => ({ thrown: e.message }));
      expect(result, `${name} ${JSON.stringify(args)}`).toMatchObject(
        'thrown' in result ? { thrown: expect.any(String) } : { isError: true },
      );
    }
    // Still serving.
    expect((await call(client, 'get_summary', {})).total).toBe(2);
  });

  it('logs a tool that fails to stderr (never stdout), and tells the client only where to look', async () => {
    const other = mkdtempSync(join(tmpdir(), 'meshhub-mcp-fail-'));
    try {
      closeDatabase(new AuditStore(() => openDatabase(join(other, 'meshhub.sqlite'))).repos().db);
      stdoutText = '';
      stderrText = '';
      const client = await connect({ DATA_DIR: other, LOG_LEVEL: 'error' });
      // The store breaks under the running server (another process, a bad migration, a full disk…).
      const broken = openDatabase(join(other, 'meshhub.sqlite'));
      broken.exec('ALTER TABLE audit_events RENAME TO audit_events_away');
      closeDatabase(broken);
      expect(await call(client, 'get_summary', {})).toEqual({ error: 'the tool failed; see the server log' });
      const logged = stderrText
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line));
      expect(logged).toContainEqual(
        expect.objectContaining({
          level: 50,
          msg: 'an MCP tool failed',
          tool: 'get_summary',
          err: expect.objectContaining({ message: expect.stringContaining('no such table') }),
        }),
      );
      for (const line of stdoutText.trim().split('\n'))
        expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
    } finally {
      for (const { client, run } of runs.splice(0)) {
        await client.close();
        await run.close();
      }
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('offers ask when AI_FEATURES_ENABLED, answering without a model as a list', async () => {
    const client = await connect({ AI_FEATURES_ENABLED: 'true' });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('ask');
    const answer = await call(client, 'ask', { question: 'any failed user changes in the last day?' });
    expect(answer).toMatchObject({ llm_used: false, fallback_reason: 'not_configured', total_matched: 1 });
    expect(JSON.stringify(answer)).not.toContain('dave@contoso.com');
    expect((await call(client, 'ask', { question: '' })).error).toBeDefined();
  });
});
