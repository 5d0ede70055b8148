/**
 * The built hub process (what `npm start` runs): every QoS 1 reading the broker acknowledged is
 * in SQLite after the process is killed with SIGKILL right after the PUBACKs, and the API serves
 * it after a restart; a publish with the `mqtt` package's command-line client (`mqtt pub`) and
 * one with Debian's `mosquitto_pub` (as a device user made with `meshhub user add`) show up in
 * /api/v1/weather/latest. `.ci/run` installs mosquitto-clients; outside CI the mosquitto test is
 * skipped when `mosquitto_pub` is missing.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, CLI } from '../helpers/cli.js';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { skipBecauseMissing } from '../helpers/skips.js';
import { connect, endClients, latestOf } from './helpers.js';

const MQTT_CLI = join(process.cwd(), 'node_modules', 'mqtt', 'build', 'bin', 'mqtt.js');
const MOSQUITTO_PUB = ['/usr/bin/mosquitto_pub', '/usr/local/bin/mosquitto_pub'].find((p) => existsSync(p));
const noMosquitto =
  !MOSQUITTO_PUB && skipBecauseMissing('mosquitto_pub', 'not installed (apt-get install mosquitto-clients)');
/** The flags (mosquitto_pub's, which the mqtt CLI takes too) to publish with QoS 1 to the broker on `port`. */
const qos1To = (port: number) => ['-h', '127.0.0.1', '-p', String(port), '-q', '1'];
const children: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(buildCli, 180_000);

afterEach(async () => {
  await endClients();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  children.length = 0;
  dirs.length = 0;
});

/** Waits (10 s at most) for the node's reading in /api/v1/weather/latest. */
function readingShowsUp(httpPort: number, nodeId: string) {
  return waitFor(() => latestOf(`http://127.0.0.1:${httpPort}`, nodeId), 10_000, `the reading of ${nodeId}`);
}

async function startProcess(
  dataDir: string,
  httpPort: number,
  mqttPort: number,
  { anonymous = true } = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, 'start'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(httpPort),
      MESH_API_PORT: '0',
      MQTT_PORT: String(mqttPort),
      MQTT_ALLOW_ANONYMOUS: String(anonymous),
      RADIO: 'none',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  await waitFor(
    async () => {
      const health = await getJson(`http://127.0.0.1:${httpPort}/health`).catch(() => undefined);
      return health?.body?.actors?.some(
        (a: { name: string; state: string }) => a.name === 'mqtt' && a.state === 'running',
      );
    },
    20_000,
    'the hub process to run its broker',
  );
  return child;
}

describe('QoS 1 durability in the hub process', () => {
  it('has every acknowledged reading in SQLite after SIGKILL right after the PUBACKs', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-durable-'));
    dirs.push(dataDir);
    const [httpPort, mqttPort] = [await freePort(), await freePort()];
    const child = await startProcess(dataDir, httpPort, mqttPort);

    const client = await connect(`mqtt://127.0.0.1:${mqttPort}`);
    const start = Date.UTC(2026, 5, 1);
    const acknowledged: number[] = [];
    for (let i = 0; i < 400; i++) {
      const timestamp = start + i * 1000;
      const body = JSON.stringify({
        node_id: 'durable',
        timestamp: new Date(timestamp).toISOString(),
        temperature_c: i / 10,
      });
      // Publishes still in the client's queue when the hub dies never settle: only PUBACKs count.
      void client.publishAsync('meshhub/ingest/readings', body, { qos: 1 }).then(
        () => acknowledged.push(timestamp),
        () => {},
      );
    }
    // Kill as soon as the first half is acknowledged: the rest may or may not have been.
    await waitFor(() => acknowledged.length >= 200, 20_000, 'PUBACKs');
    child.kill('SIGKILL');
    const ackedBeforeKill = [...acknowledged];
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    await Promise.race([client.endAsync(true).catch(() => {}), new Promise((r) => setTimeout(r, 5_000))]);

    const db = new Database(join(dataDir, 'meshhub.sqlite'));
    const stored = new Set(
      (db.prepare("SELECT ts FROM readings WHERE node_id = 'durable'").all() as Array<{ ts: number }>).map(
        (r) => r.ts,
      ),
    );
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    const missing = ackedBeforeKill.filter((ts) => !stored.has(ts));
    expect(missing).toEqual([]);
    expect(ackedBeforeKill.length).toBeGreaterThanOrEqual(200);

    // Started again on the same data, the API serves what was acknowledged.
    await startProcess(dataDir, httpPort, mqttPort);
    const latest = await latestOf(`http://127.0.0.1:${httpPort}`, 'durable');
    const newest = Math.max(...stored);
    expect(latest).toMatchObject({ node_id: 'durable', timestamp: new Date(newest).toISOString() });
  }, 90_000);

  it('shows a reading published with the mqtt command-line client in /api/v1/weather/latest', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-cli-'));
    dirs.push(dataDir);
    const [httpPort, mqttPort] = [await freePort(), await freePort()];
    await startProcess(dataDir, httpPort, mqttPort);
    // Same as: mosquitto_pub -h 127.0.0.1 -p PORT -q 1 -t meshhub/ingest/readings -m '{…}'
    await promisify(execFile)(process.execPath, [
      MQTT_CLI,
      'pub',
      ...qos1To(mqttPort),
      '-t',
      'meshhub/ingest/readings',
      '-m',
      '{"node_id":"cli-sensor","temperature_c":18.5,"humidity_percent":52}',
    ]);
    const latest = await readingShowsUp(httpPort, 'cli-sensor');
    expect(latest).toMatchObject({ node_id: 'cli-sensor', temperature_c: 18.5, humidity_percent: 52 });
  }, 60_000);

  it.skipIf(noMosquitto)(
    'shows a reading published with mosquitto_pub by a device user in /api/v1/weather/latest',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-mosquitto-'));
      dirs.push(dataDir);
      const [httpPort, mqttPort] = [await freePort(), await freePort()];
      const run = promisify(execFile);
      const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
      // The README's way: a device account, password on stdin; anonymous access stays off.
      const add = spawn(
        process.execPath,
        [CLI, 'user', 'add', 'weather-station', '--roles', 'device', '--password-stdin'],
        {
          env,
          stdio: ['pipe', 'ignore', 'inherit'],
        },
      );
      add.stdin.end('station-password-1\n');
      expect(await new Promise((r) => add.once('exit', r))).toBe(0);
      await startProcess(dataDir, httpPort, mqttPort, { anonymous: false });
      const publish = (password: string) =>
        run(MOSQUITTO_PUB!, [
          ...qos1To(mqttPort),
          '-u',
          'weather-station',
          '-P',
          password,
          '-t',
          'meshhub/ingest/readings',
          '-m',
          '{"node_id":"mosquitto-sensor","temperature_c":7.25,"pressure_pa":101325}',
        ]);
      // A wrong password is refused at the broker (CONNACK 5): mosquitto_pub exits non-zero.
      await expect(publish('not-the-password')).rejects.toThrow();
      await publish('station-password-1');
      const latest = await readingShowsUp(httpPort, 'mosquitto-sensor');
      expect(latest).toMatchObject({ node_id: 'mosquitto-sensor', temperature_c: 7.25, pressure_pa: 101325 });
    },
    60_000,
  );
});
