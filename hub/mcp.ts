/**
 * `meshhub mcp`: the MCP server on stdio (spec "What the service does": "runs over stdio and
 * logs a security warning at startup"), with the mesh tools (src/mcp/mesh-tools.ts) and the
 * audit plugin's (plugins/audit/mcp). It reads the hub's own SQLite file (DATA_DIR) beside a
 * running hub — SQLite's WAL lets both read — with the same settings as the hub.
 *
 * stdout carries nothing but the protocol; the warning and every log line go to stderr.
 *
 * An MCP client's configuration (Claude Desktop, VS Code, …):
 *   { "mcpServers": { "meshhub": { "command": "meshhub", "args": ["mcp"],
 *       "env": { "DATA_DIR": "/var/lib/meshhub", "MCP_ROLES": "" } } } }
 */
import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { pino } from 'pino';
import { auditMcpSettings, openAuditMcp } from '../plugins/audit/mcp/main.js';
import { dataDirFrom, openHubDatabase } from '../src/auth/cli-commands.js';
import { meshTools } from '../src/mcp/mesh-tools.js';
import { createMcpServer } from '../src/mcp/server.js';
import { closeDatabase } from '../src/store/database.js';
import { readVersion } from '../src/version.js';
import { loadConfig } from './settings.js';

export const MCP_SECURITY_WARNING =
  'meshhub mcp: SECURITY WARNING: this server gives the connected MCP client (and the language model behind it) read access to the audit events, mesh nodes and readings of this hub. Privacy-gated events are visible only with the roles in MCP_ROLES; questions to the ask tool may go to LLM_BASE_URL. Connect only clients you trust.';

export interface McpRun {
  /** Resolves when the client closes the connection. */
  closed: Promise<void>;
  close(): Promise<void>;
}

export async function runMcpServer(
  env: NodeJS.ProcessEnv = process.env,
  io: { stdin?: Readable; stdout?: Writable; stderr?: Writable } = {},
): Promise<McpRun> {
  const stderr = io.stderr ?? process.stderr;
  // Log lines go to stderr (the given stream in tests), never stdout: that is the protocol's.
  const log = pino({ level: env.LOG_LEVEL ?? 'warn' }, io.stderr ?? pino.destination({ fd: 2, sync: true }));
  stderr.write(`${MCP_SECURITY_WARNING}\n`);
  const hub = loadConfig(env);
  const auditConfig = auditMcpSettings(env);
  // Said on stderr; a missing database is refused, never created in a wrong place.
  const db = openHubDatabase({
    dataDir: hub.DATA_DIR,
    dataDirFrom: dataDirFrom(env),
    stdin: io.stdin ?? process.stdin,
    out: () => {},
    err: (text) => stderr.write(text),
  });
  const audit = await openAuditMcp(auditConfig, { db, log });
  const server = createMcpServer({ version: readVersion(), log, tools: [audit.tools, meshTools(db)] });
  const transport = new StdioServerTransport(io.stdin, io.stdout);
  let resolveClosed: () => void = () => {};
  const closed = new Promise<void>((r) => {
    resolveClosed = r;
  });
  let done = false;
  const close = async () => {
    if (done) return;
    done = true;
    await server.close().catch(() => undefined);
    await audit.close();
    closeDatabase(db);
    resolveClosed();
  };
  transport.onclose = () => void close();
  (io.stdin ?? process.stdin).once('end', () => void close());
  await server.connect(transport);
  return { closed, close };
}
