/**
 * Two sites on one machine: each hub's built-in simulator gets its own seed and centre from its
 * site id (SYNC_SITE_ID) unless SIM_SEED / SIM_CENTER say otherwise, so the two simulate
 * different nodes at different places; a second hub's simulator moves to a free port, and a
 * second `meshhub sim` on a taken port stops with one line naming SIM_PORT (--port).
 */

import { spawn, spawnSync } from 'node:child_process';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import {
  DEFAULT_SIM_CENTER,
  DEFAULT_SIM_SEED,
  simulatorOptionsFrom,
} from '../../src/mesh/simulator/simulator-actor.js';
import { freePort, getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { CLI } from '../reliability/helpers/hub-process.js';

const hubs: TestHub[] = [];
const stops: Array<() => void> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  for (const hub of hubs.splice(0)) await hub.stop();
});

describe('the simulated mesh of a site', () => {
  it('is drawn from the site id when SIM_SEED and SIM_CENTER are not set', () => {
    const north = simulatorOptionsFrom(loadConfig({}), 'north');
    const south = simulatorOptionsFrom(loadConfig({}), 'south');
    expect(north.seed).not.toBe(south.seed);
    expect(north.center).not.toEqual(south.center);
    expect(simulatorOptionsFrom(loadConfig({}), 'north')).toMatchObject({
      seed: north.seed,
      center: north.center,
    });
    for (const { center } of [north, south]) {
      expect(Math.abs(center.latitude - DEFAULT_SIM_CENTER.latitude)).toBeLessThan(0.2);
      expect(Math.abs(center.longitude - DEFAULT_SIM_CENTER.longitude)).toBeLessThan(0.3);
    }
    expect(simulatorOptionsFrom(loadConfig({}))).toMatchObject({
      seed: DEFAULT_SIM_SEED,
      center: DEFAULT_SIM_CENTER,
    });
    const pinned = simulatorOptionsFrom(loadConfig({ SIM_SEED: '9', SIM_CENTER: '46.5,7.1' }), 'north');
    expect(pinned).toMatchObject({ seed: 9, center: { latitude: 46.5, longitude: 7.1 } });
  });

  it('two hubs with different site ids on one machine simulate different nodes', async () => {
    // Each its own simulator port (0: a free one); a taken SIM_PORT stops a hub's start
    // (tests/hub/startup-failures.test.ts).
    for (const site of ['north', 'south']) {
      hubs.push(await startTestHub({ SYNC_SITE_ID: site, SIM_PORT: '0', SIM_BACKFILL: '0s' }));
    }
    const nodeIds = async (hub: TestHub) =>
      waitFor(
        async () => {
          const r = await getJson(`${hub.baseUrl}/api/v1/nodes`);
          return r.body.data.length >= 6
            ? (r.body.data as Array<{ node_id: string }>).map((n) => n.node_id)
            : undefined;
        },
        15_000,
        'six nodes',
      );
    const [north, south] = [await nodeIds(hubs[0]!), await nodeIds(hubs[1]!)];
    expect(north.filter((id) => south.includes(id))).toEqual([]);
  }, 40_000);
});

describe('meshhub sim on a taken port', () => {
  beforeAll(() => {
    const result = spawnSync(process.execPath, ['scripts/start.mjs', '--build-only'], { stdio: 'inherit' });
    if (result.status !== 0) throw new Error('building dist/ failed');
  }, 120_000);

  it('stops with one line naming --port and SIM_PORT', async () => {
    const port = String(await freePort());
    const first = spawn(process.execPath, [CLI, 'sim', '--port', port, '--backfill', '0s'], {
      env: { ...process.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    stops.push(() => first.kill('SIGKILL'));
    let output = '';
    first.stdout?.on('data', (d) => (output += d));
    await waitFor(
      async () => output.includes('simulator listening') || undefined,
      10_000,
      'the first simulator',
    );
    const second = spawnSync(process.execPath, [CLI, 'sim', '--port', port, '--backfill', '0s'], {
      env: { ...process.env, LOG_LEVEL: 'info' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(second.status).toBe(1);
    const lines = second.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^meshhub sim: SIM_PORT \(--port\) \d+ on 127\.0\.0\.1 is in use by another program: stop it or set SIM_PORT \(--port\)$/,
    );
    expect(second.stderr).not.toMatch(/\n\s+at /);
  }, 40_000);
});
