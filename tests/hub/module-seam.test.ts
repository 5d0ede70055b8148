/**
 * The module seam as a plugin author meets it: the README's example module, run through the
 * hub's own ModuleHost — typed settings, prefixed metrics, a scheduled job, mounted routes, bus
 * listeners — and the mistakes the hub refuses at start-up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { standaloneApp, standaloneModuleHost } from '../../hub/module-host.js';
import { ConfigError, loadSlices } from '../../src/config/load.js';
import { ModuleMountError } from '../../src/http/mounts.js';
import { checkModules, ModuleDefinitionError } from '../../src/kernel/module.js';
import { cronSetting, ScheduleError } from '../../src/kernel/scheduler.js';
import { defineModule } from '../../src/module.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';

/** The README's example ("The module seam: a new feature in one folder"). */
const packetStatsModule = defineModule({
  name: 'packet-stats',
  settings: z.object({ PACKET_STATS_RESET_CRON: cronSetting.default('0 0 * * *') }),
  create(ctx) {
    const seen = ctx.metrics.counter({ name: 'packets_total', help: 'Packets heard', labelNames: ['port'] });
    ctx.bus.on(ctx.owner, 'mesh.packet', (p) => seen.inc({ port: String(p.portnum) }));
    ctx.schedule('reset', ctx.settings.PACKET_STATS_RESET_CRON, () => seen.reset());
    ctx.mount(
      '/api/packet-stats',
      new Hono().get('/', async (c) => c.json(await seen.get())),
    );
    return {};
  },
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function host() {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-seam-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'hub.sqlite'));
  const parts = await standaloneModuleHost({ db, dataDir: dir, log: pino({ level: 'silent' }) });
  return { ...parts, close: () => closeDatabase(db) };
}

describe('the module seam', () => {
  it('runs the README example: settings, prefixed metrics, bus listener, schedule and routes', async () => {
    const h = await host();
    const settings = loadSlices({ PACKET_STATS_RESET_CRON: '30 4 * * *' }, [packetStatsModule]).get(
      'packet-stats',
    );
    await h.host.create(packetStatsModule, settings, { plugin: true });
    h.bus.emit('mesh.packet', { portnum: 67, from: 1, to: 2, id: 3, receivedAt: 0, via: 'radio' });

    const app = standaloneApp(h.mounts, h.metrics);
    const body = (await (await app.request('/api/packet-stats')).json()) as {
      name: string;
      values: unknown[];
    };
    expect(body.name).toBe('meshhub_packet_stats_packets_total');
    expect(body.values).toEqual([{ value: 1, labels: { port: '67' } }]);
    expect(h.scheduler.describe()).toMatchObject({ jobs: { 'packet-stats.reset': { cron: '30 4 * * *' } } });
    await h.scheduler.runNow('packet-stats.reset');
    const after = (await (await app.request('/api/packet-stats')).json()) as { values: unknown[] };
    expect(after.values).toEqual([]);
    h.close();
  });

  it('reports an invalid setting by name, with the rest, before anything is built', () => {
    const other = defineModule({
      name: 'other',
      settings: z.object({ OTHER_LIMIT: z.coerce.number().int().min(1) }),
      create: () => ({}),
    });
    const error = (() => {
      try {
        loadSlices({ PACKET_STATS_RESET_CRON: 'hourly', OTHER_LIMIT: '0' }, [packetStatsModule, other]);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.split(':')[0])).toEqual([
      'PACKET_STATS_RESET_CRON',
      'OTHER_LIMIT',
    ]);
  });

  it('refuses a path another module serves, the hub’s own routes, and a job scheduled twice', async () => {
    const h = await host();
    await h.host.create(packetStatsModule, { PACKET_STATS_RESET_CRON: '0 0 * * *' });
    /** A module that only mounts an empty app at `path`. */
    const mounting = (name: string, path: string) =>
      defineModule({
        name,
        settings: z.object({}),
        create(ctx) {
          ctx.mount(path, new Hono());
          return {};
        },
      });
    await expect(h.host.create(mounting('squatter', '/api/packet-stats'), {})).rejects.toBeInstanceOf(
      ModuleMountError,
    );
    await expect(h.host.create(mounting('shadow', '/health'), {})).rejects.toThrow(
      /served by the hub itself/,
    );
    const twice = defineModule({
      name: 'twice',
      settings: z.object({}),
      create(ctx) {
        ctx.schedule('x', '* * * * *', () => {});
        ctx.schedule('x', '* * * * *', () => {});
        return {};
      },
    });
    await expect(h.host.create(twice, {})).rejects.toBeInstanceOf(ScheduleError);
    h.close();
  });

  it('refuses two modules claiming one setting, a name listed twice, or another seam version', () => {
    const a = defineModule({ name: 'a', settings: z.object({ SHARED: z.string() }), create: () => ({}) });
    const b = defineModule({ name: 'b', settings: z.object({ SHARED: z.string() }), create: () => ({}) });
    expect(() => checkModules([a, b])).toThrow(/SHARED is declared by both "a" and "b"/);
    expect(() => checkModules([a, a])).toThrow(ModuleDefinitionError);
    expect(() => checkModules([{ ...a, apiVersion: 1 as never }])).toThrow(/module API 1/);
  });
});
