/**
 * The built hub as a real process (what `npm start` runs): it serves readings from the
 * simulator, stops within 5 s of SIGTERM with its readings committed, and refuses a bad config
 * by listing every error and exiting non-zero.
 */

import {
  type ChildProcess,
  type SpawnSyncReturns,
  type StdioOptions,
  spawn,
  spawnSync,
} from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { buildCli, CLI, outputOf } from '../helpers/cli.js';
import { freePort, getJson, waitFor } from '../helpers/hub.js';

const dirs: string[] = [];

// The process tests run the built hub, exactly as `npm start` does: build dist/ when stale.
beforeAll(buildCli, 120_000);
const children: ChildProcess[] = [];

/** `meshhub start` (the built hub) on a free loopback HTTP port with its data in a new temp dir; `env` adds settings. */
async function startHub(
  env: Record<string, string>,
  stdio: StdioOptions,
): Promise<{ child: ChildProcess; port: number; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-proc-'));
  dirs.push(dataDir);
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'start'], {
    env: { ...process.env, ...loopbackListeners(dataDir, port), ...env },
    stdio,
  });
  children.push(child);
  return { child, port, dataDir };
}

/** `meshhub start` with `env` added, run to its end (killed after 10 s): for a start that is refused. */
function startAndWait(env: Record<string, string>): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, 'start'], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 10_000,
  });
}

afterEach(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  children.length = 0;
  dirs.length = 0;
});

describe('the meshhub process', () => {
  it('serves simulated readings and stops within 5 s of SIGTERM with readings committed', async () => {
    const { child, port, dataDir } = await startHub(
      {
        RADIO: 'auto',
        SIM_PORT: '0',
        SIM_TELEMETRY_SECONDS: '1',
        RADIO_PROBE_TIMEOUT_MS: '500',
        LOG_LEVEL: 'info',
      },
      ['ignore', 'pipe', 'pipe'],
    );
    const output = outputOf(child);

    const latest = await waitFor(
      async () => {
        const r = await getJson(`http://127.0.0.1:${port}/api/v1/weather/latest`).catch(() => undefined);
        return r &&
          r.body.data.filter((x: { temperature_c?: number }) => typeof x.temperature_c === 'number').length >=
            3
          ? r
          : undefined;
      },
      15_000,
      'three nodes with temperature',
    );
    expect(latest.status).toBe(200);
    // RADIO=auto with no serial radio says it runs the simulator, in the log and in /health.
    expect(output()).toMatch(/running the built-in simulator/);
    const health = await getJson(`http://127.0.0.1:${port}/health`);
    expect(health.body.radio.simulated).toBe(true);

    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    // Past its 5 s shutdown deadline the hub exits 1 without "meshhub stopped": 0 and the line
    // say the stop finished in time.
    expect(code).toBe(0);
    expect(output()).toMatch(/meshhub stopped/);

    const db = new Database(join(dataDir, 'meshhub.sqlite'), { readonly: true });
    const { n } = db.prepare('SELECT count(*) AS n FROM readings').get() as { n: number };
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    expect(n).toBeGreaterThan(0);
  }, 30_000);

  it('connects to a separately running `meshhub sim` over TCP (RADIO=tcp:…)', async () => {
    const simPort = await freePort();
    const sim = spawn(
      process.execPath,
      [CLI, 'sim', '--port', String(simPort), '--nodes', '4', '--backfill', '2h'],
      {
        env: { ...process.env, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(sim);
    let simOutput = '';
    sim.stdout?.on('data', (d) => (simOutput += d));
    await waitFor(
      () => (simOutput.includes('simulator listening') ? true : undefined),
      10_000,
      'simulator listening',
    );

    const { port } = await startHub({ RADIO: `tcp:127.0.0.1:${simPort}`, LOG_LEVEL: 'warn' }, 'ignore');
    const health = await waitFor(
      async () => {
        const h = await getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined);
        return h?.body.radio.state === 'connected' ? h : undefined;
      },
      15_000,
      'hub connected to the standalone simulator',
    );
    // A radio named by RADIO=tcp is not known to be a simulator: the hub must not claim it is.
    expect(health.body.radio).toMatchObject({
      transport: 'tcp',
      address: `127.0.0.1:${simPort}`,
      simulated: false,
    });
    const nodes = await waitFor(
      async () => {
        const r = await getJson(`http://127.0.0.1:${port}/api/v1/nodes`);
        return r.body.data.length >= 5 ? r : undefined;
      },
      10_000,
      'four simulated nodes and the simulated radio',
    );
    expect(nodes.body.data.length).toBe(5);
  }, 40_000);

  it('lists every invalid setting at once and exits non-zero', () => {
    const result = startAndWait({ HTTP_PORT: 'eighty', RADIO: 'carrier-pigeon', LOG_LEVEL: 'chatty' });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('invalid configuration');
    expect(result.stderr).toMatch(/HTTP_PORT: /);
    expect(result.stderr).toMatch(/RADIO: .*carrier-pigeon/);
    expect(result.stderr).toMatch(/LOG_LEVEL: /);
  });

  it('refuses an unknown plugin', () => {
    const result = startAndWait({ PLUGINS: 'teleport', RADIO: 'none', HTTP_PORT: '0' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/PLUGINS: unknown plugin "teleport"/);
  });

  it('prints help and version', () => {
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/meshhub <command>/);
    expect(help.stdout).toMatch(/sim \[options\]/);
    const version = spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const unknown = spawnSync(process.execPath, [CLI, 'fly'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command "fly"/);
  });
});
