/**
 * What a newcomer sees when `meshhub start` cannot start (issue 25): one plain line on stderr
 * naming the setting or file and what to do, a non-zero exit, no stack trace (unless
 * LOG_LEVEL=debug), and no restarts of what cannot work: a DATA_DIR that cannot be used, a
 * damaged database, a taken port (every port the hub listens on), a second hub on one DATA_DIR,
 * a setting with a value of the wrong kind.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, CLI } from '../helpers/cli.js';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres } from '../helpers/postgres.js';
import { skipBecauseMissing } from '../helpers/skips.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
const blockers: Server[] = [];
const immutable: string[] = [];
const mounted: string[] = [];

beforeAll(buildCli, 180_000);

afterEach(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of immutable) spawnSync('chattr', ['-i', d]);
  for (const d of mounted) spawnSync('umount', [d]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  await Promise.all(blockers.map((b) => new Promise((r) => b.close(r))));
  children.length = 0;
  dirs.length = 0;
  blockers.length = 0;
  immutable.length = 0;
  mounted.length = 0;
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-startup-'));
  dirs.push(dir);
  return dir;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The settings of a hub on loopback with free ports and no radio. */
const HUB_ENV = {
  HTTP_HOST: '127.0.0.1',
  HTTP_PORT: '0',
  MQTT_PORT: '0',
  MESH_API: 'false',
  RADIO: 'none',
  LOG_LEVEL: 'info',
  LOG_FORMAT: 'json',
};

/** `file args…` with `env` over this process's, its output collected; `live` is what it wrote so far. */
function spawnCommand(
  file: string,
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; done: Promise<Run>; live: () => string } {
  const child = spawn(file, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done, live: () => stdout };
}

/** `meshhub start` with HUB_ENV; `env` adds or overrides settings. */
const spawnHub = (env: Record<string, string>) =>
  spawnCommand(process.execPath, [CLI, 'start'], { ...HUB_ENV, ...env });

const runHub = (env: Record<string, string>) => spawnHub(env).done;

/** Exit non-zero, exactly one line on stderr matching `line`, no stack trace anywhere. */
function expectOneLine(run: Run, line: RegExp): void {
  expect(run.code, run.stderr + run.stdout).not.toBe(0);
  expect(run.code).not.toBeNull();
  expect(run.stderr.endsWith('\n')).toBe(true);
  expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
  expect(run.stderr).toMatch(/^meshhub: /);
  expect(run.stderr).toMatch(line);
  expect(`${run.stderr}${run.stdout}`).not.toMatch(/\n\s+at |\\n\s+at /);
  // No restarts of what cannot work.
  expect(run.stdout).not.toMatch(/actor crashed; restarting/);
}

/**
 * A folder this process may not write: mode 0500 for a user; for root (who ignores modes) the
 * folder made immutable (`chattr +i`, ext4 and the like), else a read-only tmpfs mounted on it.
 * Undefined when neither works here (the test then skips, or fails under CI=true).
 */
function readOnlyDir(): string | undefined {
  const dir = tempDir();
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o500);
    return dir;
  }
  if (spawnSync('chattr', ['+i', dir]).status === 0) {
    immutable.push(dir);
    return dir;
  }
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', dir]).status === 0) {
    mounted.push(dir);
    return dir;
  }
  return undefined;
}

/** A port on 127.0.0.1 that another program holds. */
async function takenPort(): Promise<number> {
  const server = createServer();
  blockers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

describe('DATA_DIR and the database', () => {
  it('a DATA_DIR that is a file, or under one, names DATA_DIR and says what to do', async () => {
    const file = join(tempDir(), 'not-a-folder');
    writeFileSync(file, 'x');
    expectOneLine(
      await runHub({ DATA_DIR: file }),
      new RegExp(`DATA_DIR=${file} is not a folder .*: set DATA_DIR to a folder`),
    );
    expectOneLine(
      await runHub({ DATA_DIR: join(file, 'data') }),
      new RegExp(`DATA_DIR=${file}/data is not a folder`),
    );
  }, 30_000);

  it('a DATA_DIR that cannot be written, or made, names DATA_DIR and says what to do', async (ctx) => {
    const locked = readOnlyDir();
    if (!locked) {
      skipBecauseMissing('a read-only folder', 'neither chattr +i nor a read-only tmpfs mount works here');
      return ctx.skip();
    }
    expectOneLine(
      await runHub({ DATA_DIR: locked! }),
      new RegExp(
        `^meshhub: DATA_DIR=${locked} is not writable \\((EPERM|EACCES|EROFS)[^)]*\\): make it writable by this user or set DATA_DIR to another folder\\n$`,
      ),
    );
    expectOneLine(
      await runHub({ DATA_DIR: join(locked!, 'data') }),
      new RegExp(
        `DATA_DIR=${locked}/data cannot be created or written \\((EPERM|EACCES|EROFS)[^)]*\\): make it writable`,
      ),
    );
    // LOG_LEVEL=debug adds the stack after the line.
    const debug = await runHub({ DATA_DIR: locked!, LOG_LEVEL: 'debug' });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/^meshhub: DATA_DIR=.* is not writable/);
    expect(debug.stderr).toMatch(/\n\s+at /);
  }, 30_000);

  it('a text file in place of the database, or a damaged one, names the file', async () => {
    const dataDir = tempDir();
    const file = join(dataDir, 'meshhub.sqlite');
    writeFileSync(file, 'these are my notes, not a database\n'.repeat(20));
    chmodSync(file, 0o600);
    expectOneLine(
      await runHub({ DATA_DIR: dataDir }),
      new RegExp(
        `^meshhub: ${file} is not a SQLite database or is damaged \\(SQLITE_NOTADB\\): move it aside and restore a backup`,
      ),
    );

    // A real database whose schema page was overwritten: "database disk image is malformed".
    rmSync(file);
    const db = new Database(file);
    db.exec('CREATE TABLE a (x); CREATE TABLE b (y); INSERT INTO a VALUES (1)');
    db.close();
    const bytes = readFileSync(file);
    bytes.fill(0x41, 100, 4096);
    writeFileSync(file, bytes);
    expectOneLine(
      await runHub({ DATA_DIR: dataDir }),
      new RegExp(`${file} is not a SQLite database or is damaged \\(SQLITE_CORRUPT\\)`),
    );
  }, 30_000);
});

describe('ports', () => {
  /** The hub with `setting` on the taken `port` (and `env`) stops with the one line that names it. */
  async function expectPortTaken(
    setting: string,
    port: number,
    env: Record<string, string> = {},
  ): Promise<void> {
    expectOneLine(
      await runHub({ DATA_DIR: tempDir(), ...env, [setting]: String(port) }),
      new RegExp(
        `^meshhub: ${setting} ${port} on 127.0.0.1 is in use by another program: stop it or set ${setting}\\n$`,
      ),
    );
  }

  it('a taken HTTP_PORT stops the start at once with one line', async () => {
    await expectPortTaken('HTTP_PORT', await takenPort());
  }, 30_000);

  it('a taken MQTT_PORT, SIM_PORT, MESH_API_PORT or component port stops the start too (no silent move)', async () => {
    const port = await takenPort();
    await expectPortTaken('MQTT_PORT', port);
    await expectPortTaken('SIM_PORT', port, { RADIO: 'sim' });
    await expectPortTaken('MESH_API_PORT', port, { MESH_API: 'true' });
    expectOneLine(
      await runHub({ DATA_DIR: tempDir(), HTTP_COMPONENT_PORTS: `weather=${port}` }),
      new RegExp(`^meshhub: HTTP_COMPONENT_PORTS ${port} on 127.0.0.1 is in use by another program`),
    );
  }, 40_000);
});

describe.skipIf(await skipWithoutPostgres())('the upstream', () => {
  it('a taken HTTP_PORT stops `meshhub upstream` with one line', async () => {
    const schema = await createTestSchema('startup');
    try {
      const port = await takenPort();
      const { stdout, stderr, code } = await spawnCommand(process.execPath, [CLI, 'upstream'], {
        UPSTREAM_DATABASE_URL: schema.url,
        DATA_DIR: tempDir(),
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(port),
        LOG_LEVEL: 'info',
      }).done;
      expect(code).toBe(1);
      expect(stderr).toBe(
        `meshhub upstream: HTTP_PORT ${port} on 127.0.0.1 is in use by another program: stop it or set HTTP_PORT\n`,
      );
      expect(stdout).not.toMatch(/\\n\s+at /);
    } finally {
      await schema.drop();
    }
  }, 60_000);
});

describe('one hub per DATA_DIR', () => {
  it('a second hub on the same DATA_DIR refuses, naming DATA_DIR and the first one; a killed hub leaves no lock', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const first = spawnHub({ DATA_DIR: dataDir, HTTP_PORT: String(port) });
    await waitFor(
      () => getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined),
      20_000,
      'the first hub answering',
    );
    expectOneLine(
      await runHub({ DATA_DIR: dataDir }),
      new RegExp(
        `^meshhub: DATA_DIR=${dataDir} is in use by another meshhub \\(pid ${first.child.pid}\\): stop it, or set DATA_DIR to another folder\\n$`,
      ),
    );
    // SIGKILL: the operating system drops the lock with the process.
    first.child.kill('SIGKILL');
    await first.done;
    const port2 = await freePort();
    const second = spawnHub({ DATA_DIR: dataDir, HTTP_PORT: String(port2) });
    const health = await waitFor(
      () => getJson(`http://127.0.0.1:${port2}/health`).catch(() => undefined),
      20_000,
      'a hub on the DATA_DIR of the killed one',
    );
    expect(health.status).toBe(200);
    second.child.kill('SIGTERM');
    expect((await second.done).code).toBe(0);
  }, 60_000);
});

describe('settings', () => {
  it('a value of the wrong kind reads in words, by name, on one line', async () => {
    const run = await runHub({ DATA_DIR: tempDir(), HTTP_PORT: 'abc' });
    expectOneLine(
      run,
      /^meshhub: HTTP_PORT: must be a whole number from 1 to 65535, or 0 for any free port \(got "abc"\)\n$/,
    );
    expect(run.code).toBe(1);
  }, 20_000);

  it('a missing required setting says it is required and what to set it to', async () => {
    const run = await runHub({
      DATA_DIR: tempDir(),
      PLUGINS: 'billing',
      BTCPAY_URL: 'https://btcpay.example.org',
      BTCPAY_API_KEY: 'k'.repeat(20),
      BTCPAY_WEBHOOK_SECRET: 's'.repeat(20),
    });
    expectOneLine(
      run,
      /^meshhub: BTCPAY_STORE_ID: is required: set it to the store id from BTCPay \(Store settings → General\)\n$/,
    );
  }, 20_000);
});

describe('logs on a terminal', () => {
  it.skipIf(
    spawnSync('script', ['--version']).status !== 0 &&
      skipBecauseMissing('script (util-linux)', 'the `script` command is missing'),
  )(
    'a hub started on a terminal (LOG_FORMAT unset) writes readable lines',
    async () => {
      const port = await freePort();
      // `script` gives the hub a pseudo-terminal for stdout, as a shell would.
      const hub = spawnCommand('script', ['-qfec', `${process.execPath} ${CLI} start`, '/dev/null'], {
        ...HUB_ENV,
        DATA_DIR: tempDir(),
        HTTP_PORT: String(port),
        LOG_FORMAT: '',
      });
      await waitFor(() => hub.live().includes('meshhub running'), 20_000, 'the hub running');
      const output = hub.live();
      const lines = output.split(/\r?\n/).filter((l) => l.includes('meshhub'));
      expect(lines.find((l) => l.includes('meshhub starting'))).toMatch(
        /^\d\d:\d\d:\d\d INFO {2}meshhub: meshhub starting version=/,
      );
      expect(lines.find((l) => l.includes('http listening'))).toMatch(
        /INFO {2}meshhub\/http: http listening .*port=/,
      );
      expect(output).not.toMatch(/^\{"level"/m);
      // `script` ends the hub it started when it is ended itself.
      hub.child.kill('SIGTERM');
      await hub.done;
    },
    30_000,
  );

  it('LOG_FORMAT=pretty writes readable lines, json (and auto on a pipe) JSON lines', async () => {
    const port = await freePort();
    const dataDir = tempDir();
    mkdirSync(dataDir, { recursive: true });
    for (const [format, check] of [
      [
        'pretty',
        (line: string) => expect(line).toMatch(/^\d\d:\d\d:\d\d INFO {2}meshhub: meshhub starting /),
      ],
      ['json', (line: string) => expect(JSON.parse(line)).toMatchObject({ msg: 'meshhub starting' })],
      ['auto', (line: string) => expect(JSON.parse(line)).toMatchObject({ msg: 'meshhub starting' })],
    ] as const) {
      const hub = spawnHub({ DATA_DIR: dataDir, HTTP_PORT: String(port), LOG_FORMAT: format });
      await waitFor(
        () => getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined),
        20_000,
        `a hub with LOG_FORMAT=${format}`,
      );
      hub.child.kill('SIGTERM');
      const run = await hub.done;
      expect(run.code).toBe(0);
      const starting = run.stdout.split('\n').find((l) => l.includes('meshhub starting'));
      check(starting ?? '');
    }
  }, 60_000);
});
