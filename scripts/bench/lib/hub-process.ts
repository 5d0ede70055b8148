/**
 * The hub and its baseline as separate processes, measured from outside (issue 17, "Edge
 * fitness"): the hub started the way a newcomer starts it (`node scripts/start.mjs start`, what
 * `npm start` runs) or as `meshhub start` (dist/hub/cli.js), and a bare Node process that has
 * loaded and started better-sqlite3 (a WAL database file), Hono (served by @hono/node-server) and
 * Aedes (on a TCP port). RSS and bytes written come from /proc.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HUB_NODE_FLAGS } from '../../../hub/node-flags.js';
import { projectRoot } from '../../../src/version.js';

export const root = projectRoot();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

/** Bytes the process caused to be written to the block device (`write_bytes` of /proc/PID/io). */
export function writeBytes(pid: number): number {
  return Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1]);
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** The lowest of 5 samples 200 ms apart, after `settleMs`. */
export async function settledRss(pid: number, settleMs: number): Promise<number> {
  await sleep(settleMs);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid));
    await sleep(200);
  }
  return Math.min(...samples);
}

export interface Proc {
  child: ChildProcess;
  pid: number;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

function wrap(child: ChildProcess): Proc {
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    pid: child.pid!,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * The baseline: better-sqlite3 on a WAL file with a table and a query, a Hono app served on a
 * loopback port and answering once, an Aedes broker listening on another. Sends "ready" on stdout.
 */
export async function startBare(dataDir: string): Promise<Proc & { httpPort: number; mqttPort: number }> {
  const httpPort = await freePort();
  const mqttPort = await freePort();
  const code = `
    const Database = require('better-sqlite3');
    const db = new Database(${JSON.stringify(join(dataDir, 'bare.sqlite'))});
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)');
    db.prepare('SELECT count(*) FROM t').get();
    const { Hono } = require('hono');
    const { serve } = require('@hono/node-server');
    const { Aedes } = require('aedes');
    const { createServer } = require('node:net');
    const app = new Hono();
    app.get('/health', (c) => c.json({ status: 'ok', rows: db.prepare('SELECT count(*) AS n FROM t').get().n }));
    (async () => {
      const broker = await Aedes.createBroker();
      await new Promise((r) => createServer(broker.handle).listen(${mqttPort}, '127.0.0.1', r));
      serve({ fetch: app.fetch, hostname: '127.0.0.1', port: ${httpPort} }, async () => {
        await fetch('http://127.0.0.1:${httpPort}/health').then((r) => r.text());
        process.stdout.write('ready\\n');
      });
    })();
  `;
  return { ...(await spawnUntilReady(code, 'bare process')), httpPort, mqttPort };
}

/** Runs `code` in a node child (in the project's folder) and waits for it to print "ready". */
export async function spawnUntilReady(code: string, what: string): Promise<Proc> {
  const child = spawn(process.execPath, ['-e', code], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`${what} exited with ${c}`)));
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
  });
  child.removeAllListeners('exit');
  return wrap(child);
}

export interface HubProc extends Proc {
  url: string;
  port: number;
  dataDir: string;
}

/**
 * Starts the hub in its own process: `how: 'npm'` runs scripts/start.mjs (what `npm start` runs:
 * one process, the hub imported into it), `how: 'cli'` runs dist/hub/cli.js. Resolves once
 * /health answers (and, with `until`, once the report satisfies it).
 */
export async function startHub(options: {
  how: 'npm' | 'cli';
  dataDir: string;
  env?: Record<string, string>;
  until?: (health: Record<string, unknown>) => boolean;
  timeoutMs?: number;
  /** Node flags beside HUB_NODE_FLAGS, e.g. `--cpu-prof` (which NODE_OPTIONS does not take). */
  nodeFlags?: string[];
}): Promise<HubProc & { healthyAfterMs: number }> {
  const port = await freePort();
  const entry =
    options.how === 'npm' ? join(root, 'scripts', 'start.mjs') : join(root, 'dist', 'hub', 'cli.js');
  const t0 = performance.now();
  const child = spawn(process.execPath, [...HUB_NODE_FLAGS, ...(options.nodeFlags ?? []), entry, 'start'], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: options.dataDir,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      MESH_API_PORT: '0',
      RADIO: 'none',
      LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const proc = wrap(child);
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const health = await fetch(`${url}/health`)
      .then((r) => (r.ok ? (r.json() as Promise<Record<string, unknown>>) : undefined))
      .catch(() => undefined);
    if (health && (!options.until || options.until(health))) break;
    if (child.exitCode !== null) throw new Error(`the hub exited with ${child.exitCode}`);
    if (Date.now() > until) {
      await proc.stop('SIGKILL');
      throw new Error('the hub did not become healthy');
    }
    await sleep(20);
  }
  return { ...proc, url, port, dataDir: options.dataDir, healthyAfterMs: performance.now() - t0 };
}

export function tempData(prefix: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `meshhub-bench-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
