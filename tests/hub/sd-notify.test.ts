/**
 * systemd's notify protocol and watchdog (issue 17): READY=1 once the hub runs, WATCHDOG=1 only
 * while the hub answers, STOPPING=1 on the way down, nothing without $NOTIFY_SOCKET. The logic
 * with a recording sender; the real path (`systemd-notify` to a unix datagram socket, and the
 * built hub under a fake NOTIFY_SOCKET) with Debian's `socat` listening, since Node's core cannot
 * bind a unix datagram socket. Under CI=true a missing socat or systemd-notify fails the test.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { extendStartTimeout, SystemdNotifier, systemdNotifySend } from '../../hub/sd-notify.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { buildCli, CLI } from '../helpers/cli.js';
import { freePort, waitFor } from '../helpers/hub.js';
import { skipBecauseMissing } from '../helpers/skips.js';

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const tools = has('socat') && has('systemd-notify');
const ci = process.env.CI === 'true';
const noTools =
  !tools &&
  !ci &&
  skipBecauseMissing('socat and systemd-notify', 'not installed (apt-get install socat systemd)');

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  children.length = 0;
  dirs.length = 0;
});

function recorder() {
  const sent: string[][] = [];
  return { sent, send: async (lines: readonly string[]) => void sent.push([...lines]) };
}

describe('SystemdNotifier', () => {
  it('sends nothing and starts no watchdog without NOTIFY_SOCKET', async () => {
    const { sent, send } = recorder();
    const n = new SystemdNotifier({ env: { WATCHDOG_USEC: '2000000' }, send, healthy: () => true });
    expect(n.enabled).toBe(false);
    await n.ready();
    await n.stopping();
    expect(sent).toEqual([]);
  });

  it('says READY=1, feeds the watchdog only while healthy, and says STOPPING=1', async () => {
    vi.useFakeTimers();
    const { sent, send } = recorder();
    let healthy = true;
    const problems: string[] = [];
    const n = new SystemdNotifier({
      env: { NOTIFY_SOCKET: '/run/x', WATCHDOG_USEC: '20000000', WATCHDOG_PID: '4242' },
      pid: 4242,
      send,
      healthy: () => healthy,
      onProblem: (p) => problems.push(p),
    });
    expect(n.watchdogIntervalMs).toBe(10_000);
    await n.ready();
    expect(sent).toEqual([['READY=1', 'STATUS=running']]);
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent.slice(1)).toEqual([['WATCHDOG=1'], ['WATCHDOG=1']]);
    healthy = false;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(sent).toHaveLength(3);
    expect(problems).toHaveLength(3);
    healthy = true;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent).toHaveLength(4);
    await n.stopping();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(sent.slice(4)).toEqual([['STOPPING=1']]);
  });

  it('feeds no watchdog when the health check throws, or when WATCHDOG_PID names another process', async () => {
    vi.useFakeTimers();
    const a = recorder();
    const throwing = new SystemdNotifier({
      env: { NOTIFY_SOCKET: '/run/x', WATCHDOG_USEC: '2000000' },
      send: a.send,
      healthy: () => {
        throw new Error('store gone');
      },
    });
    await throwing.ready();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(a.sent).toEqual([['READY=1', 'STATUS=running']]);
    const b = recorder();
    const other = new SystemdNotifier({
      env: { NOTIFY_SOCKET: '/run/x', WATCHDOG_USEC: '2000000', WATCHDOG_PID: '1' },
      pid: 4242,
      send: b.send,
      healthy: () => true,
    });
    expect(other.watchdogIntervalMs).toBeUndefined();
    await other.ready();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(b.sent).toEqual([['READY=1', 'STATUS=running']]);
    await throwing.stopping();
    await other.stopping();
  });
});

/** A unix datagram socket that socat listens on; each datagram's text is appended to `received`. */
async function fakeNotifySocket(): Promise<{ path: string; received: () => string }> {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-notify-'));
  dirs.push(dir);
  const path = join(dir, 'notify');
  const socat = spawn('socat', ['-u', `UNIX-RECV:${path}`, 'STDOUT'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(socat);
  let text = '';
  socat.stdout!.on('data', (d: Buffer) => (text += `${d.toString()}\n`));
  await waitFor(async () => existsSync(path) || undefined, 5_000);
  return { path, received: () => text };
}

/** The built hub on `dataDir` without a radio, telling `notifySocket` as systemd's socket. */
function startHub(
  dataDir: string,
  port: number,
  notifySocket: string,
  env: Record<string, string> = {},
): ChildProcess {
  const hub = spawn(process.execPath, [CLI, 'start'], {
    env: {
      ...process.env,
      ...loopbackListeners(dataDir, port),
      RADIO: 'none',
      LOG_LEVEL: 'warn',
      NOTIFY_SOCKET: notifySocket,
      ...env,
    },
    stdio: 'ignore',
  });
  children.push(hub);
  return hub;
}

describe.skipIf(noTools)('sd_notify through systemd-notify, with socat as systemd', () => {
  beforeAll(() => {
    if (!tools) throw new Error('socat and systemd-notify are needed (apt-get install socat systemd)');
    buildCli();
  }, 180_000);

  it('delivers a message as a datagram to NOTIFY_SOCKET', async () => {
    const socket = await fakeNotifySocket();
    // --no-block: socat keeps the barrier's pipe open where systemd would close it.
    await systemdNotifySend(process.pid, {
      env: { ...process.env, NOTIFY_SOCKET: socket.path },
      block: false,
    })(['STATUS=hello']);
    await waitFor(async () => socket.received().includes('STATUS=hello') || undefined, 5_000);
    expect(socket.received()).toContain(`MAINPID=${process.pid}`);
  });

  it('asks systemd for more time for a long migration, with what it is doing, and without NOTIFY_SOCKET sends nothing', async () => {
    const socket = await fakeNotifySocket();
    extendStartTimeout(120, 'migrating the database to schema 7: 20000 of 60000 rows', {
      env: { ...process.env, NOTIFY_SOCKET: socket.path },
      block: false,
    });
    await waitFor(
      async () => socket.received().includes('EXTEND_TIMEOUT_USEC=120000000') || undefined,
      5_000,
    );
    expect(socket.received()).toContain('STATUS=migrating the database to schema 7: 20000 of 60000 rows');
    const { NOTIFY_SOCKET: _, ...without } = process.env;
    extendStartTimeout(120, 'not sent', { env: without, block: false });
    await new Promise((r) => setTimeout(r, 300));
    expect(socket.received()).not.toContain('not sent');
  });

  it('the built hub, migrating a database with readings as it starts, asks for more time until it is ready', async () => {
    const socket = await fakeNotifySocket();
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-notify-migrate-'));
    dirs.push(dataDir);
    const db = openDatabase(join(dataDir, 'meshhub.sqlite'), { migrate: false });
    migrate(db, MIGRATIONS.slice(0, 6));
    db.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!00000001', 1, 20.5)").run();
    closeDatabase(db);
    startHub(dataDir, await freePort(), socket.path);
    await waitFor(async () => socket.received().includes('READY=1') || undefined, 30_000);
    const text = socket.received();
    expect(text).toContain('EXTEND_TIMEOUT_USEC=120000000');
    expect(text).toContain('STATUS=migrating the database to schema 7: 1 of 1 rows');
    expect(text.indexOf('EXTEND_TIMEOUT_USEC')).toBeLessThan(text.indexOf('READY=1'));
  }, 60_000);

  it('the built hub says READY=1 once it runs, feeds the watchdog, and says STOPPING=1 on SIGTERM', async () => {
    const socket = await fakeNotifySocket();
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-notify-hub-'));
    dirs.push(dataDir);
    const port = await freePort();
    // 1 s: a ping every 500 ms; here each waits for its barrier, which socat never releases,
    // until it is killed after 5 s, so the pings come every ~5 s.
    const hub = startHub(dataDir, port, socket.path, { WATCHDOG_USEC: '1000000' });
    await waitFor(async () => socket.received().includes('READY=1') || undefined, 30_000);
    const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as { status: string };
    expect(health.status).not.toBe('down');
    await waitFor(
      async () => (socket.received().match(/WATCHDOG=1/g)?.length ?? 0) >= 2 || undefined,
      15_000,
    );
    const exited = new Promise<number | null>((r) => hub.once('exit', (code) => r(code)));
    hub.kill('SIGTERM');
    expect(await exited).toBe(0);
    await waitFor(async () => socket.received().includes('STOPPING=1') || undefined, 5_000);
  }, 60_000);
});
