/**
 * `meshhub mcp` as a client runs it: the built CLI (`dist/hub/cli.js mcp`, what the `meshhub`
 * bin is) spawned by the SDK's own StdioClientTransport over a real SQLite file with events.
 * The tools are listed, a search answers, privacy gating holds without MCP_ROLES, the security
 * warning is on stderr, and stdout carries nothing but JSON-RPC — also while the server logs.
 *
 * dist/ is built by tests/global-setup.ts (as for the other tests that run the built hub).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_SECURITY_WARNING } from '../../../hub/mcp.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { HUB_MCP_TOOLS, seed } from './helpers.js';

const CLI = join(process.cwd(), 'dist', 'hub', 'cli.js');
let dir: string;
let gatedId = '';
const now = Date.now();

/** Settings for the child: the transport passes only these (and PATH, HOME, …), never the test's env. */
const env = (extra: Record<string, string> = {}) => ({
  DATA_DIR: dir,
  PRIVACY_SERVICES: 'teams',
  // With AI on and no model, the server logs a warning at start: it must land on stderr.
  AI_FEATURES_ENABLED: 'true',
  LOG_LEVEL: 'info',
  ...extra,
});

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build dist/ first (npm run build)`);
  dir = mkdtempSync(join(tmpdir(), 'meshhub-mcp-stdio-'));
  const db = openDatabase(join(dir, 'meshhub.sqlite'));
  seed(new AuditStore(() => db).repos(), [
    { source: 'directory', at: now - 3_600_000, operation: 'Add user', actor: 'eve@contoso.com' },
    {
      source: 'directory',
      at: now - 7_200_000,
      operation: 'Reset user password',
      actor: 'mallory@contoso.com',
      result: 'failure',
    },
    { at: now - 1_800_000, service: 'MicrosoftTeams', operation: 'MemberAdded', actor: 'dave@contoso.com' },
  ]);
  gatedId = String(db.prepare("SELECT seq FROM audit_events WHERE service = 'teams'").pluck().get());
  closeDatabase(db);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `meshhub mcp` spawned with `env(extra)`, its stdout and stderr collected in `out`. */
function spawnMcp(extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, 'mcp'], {
    env: { PATH: process.env.PATH ?? '', ...env(extra) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => {
    out.stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out.stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, out, exited };
}

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;

describe('meshhub mcp (the built CLI over stdio)', () => {
  it('lists its tools, searches, gates without MCP_ROLES, warns on stderr', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: env(),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // A line on stdout that is not JSON-RPC reaches the client as a transport error.
    const transportErrors: Error[] = [];
    const client = new Client({ name: 'mcp-stdio-test', version: '1.0.0' });
    client.onerror = (error) => transportErrors.push(error);
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['ask', ...HUB_MCP_TOOLS]);
      expect(tools.find((t) => t.name === 'get_event')!.inputSchema.required).toEqual(['id']);

      const search = await client.callTool({ name: 'search_events', arguments: { limit: 10 } });
      expect(search.isError, textOf(search)).toBeFalsy();
      const found = JSON.parse(textOf(search)) as { events: Array<{ id: string; operation: string }> };
      // Newest first; the Teams event (gated, and the newest) is not among them.
      expect(found.events.map((e) => e.operation)).toEqual(['Add user', 'Reset user password']);

      const summary = JSON.parse(textOf(await client.callTool({ name: 'get_summary', arguments: {} })));
      expect(summary).toMatchObject({ total: 2, by_service: { directory: 2 } });
      expect(JSON.stringify(summary)).not.toContain('dave@contoso.com');

      const gated = await client.callTool({ name: 'get_event', arguments: { id: gatedId } });
      expect(gated.isError).toBe(true);
      expect(textOf(gated)).toContain('MCP_ROLES does not allow it');

      const bad = await client.callTool({ name: 'search_events', arguments: { start: 'yesterday' } });
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
    expect(stderr).toContain(MCP_SECURITY_WARNING);
    // The start-up warning about the missing model went to stderr too (logs never touch stdout).
    expect(stderr).toContain('no LLM_BASE_URL is set');
    expect(transportErrors).toEqual([]);
  });

  it('shows the gated events to a client holding the role in MCP_ROLES', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: env({ MCP_ROLES: 'Audit.Privacy', PRIVACY_SERVICE_ROLES: 'Audit.Privacy' }),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mcp-stdio-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const one = await client.callTool({ name: 'get_event', arguments: { id: gatedId } });
      expect(one.isError, textOf(one)).toBeFalsy();
      expect(JSON.parse(textOf(one))).toMatchObject({ operation: 'MemberAdded', actor: 'dave@contoso.com' });
    } finally {
      await client.close();
    }
  });

  it('writes only JSON-RPC lines on stdout, and exits 0 when the client closes stdin', async () => {
    const { child, out, exited } = spawnMcp();
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_event', arguments: {} } });
    // Wait for the three answers, then hang up.
    for (let i = 0; i < 400 && out.stdout.split('\n').filter(Boolean).length < 3; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    child.stdin.end();
    expect(await exited).toBe(0);
    const lines = out.stdout.split('\n').filter((l) => l !== '');
    expect(lines.length).toBe(3);
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
    expect(lines.map((l) => JSON.parse(l).id)).toEqual([1, 2, 3]);
    expect(JSON.parse(lines[2]!).result).toMatchObject({ isError: true });
    expect(out.stderr).toContain(MCP_SECURITY_WARNING);
  });

  it('refuses a bad setting with a message on stderr and exit code 1, nothing on stdout', async () => {
    const { out, exited } = spawnMcp({ LLM_MAX_EVENTS: 'many' });
    expect(await exited).toBe(1);
    expect(out.stdout).toBe('');
    expect(out.stderr).toMatch(/meshhub mcp: .*LLM_MAX_EVENTS/s);
    expect(out.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });
});
