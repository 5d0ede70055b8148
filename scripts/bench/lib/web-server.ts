/**
 * Child process of the web benchmark: serves the built web app (dist/web) on two loopback
 * ports: the hub's own HTTP app with the web UI routes (request ids, metrics, CSP, in-memory
 * precompressed assets), and a bare Hono app with @hono/node-server's serveStatic over the same
 * folder with `precompressed: true`. Sends `{ ours, bare }` over IPC; exits on disconnect.
 */
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { pino } from 'pino';
import type { HubBus } from '../../../src/events.js';
import { createHttpApp } from '../../../src/http/app.js';
import { Bus } from '../../../src/kernel/bus.js';
import { HubMetrics } from '../../../src/metrics.js';
import { DEFAULT_WEB_ROOT, openMapTiles, webUiRouteProvider } from '../../../src/ui-server/mount.js';
import { serveOnLoopback } from './http.js';

async function main(): Promise<void> {
  if (!process.send) throw new Error('run forked by scripts/bench/web.ts');
  const log = pino({ level: 'silent' });
  const bus: HubBus = new Bus();
  const ui = webUiRouteProvider({
    tiles: await openMapTiles('https://tile.openstreetmap.org/{z}/{x}/{y}.png'),
    log,
  });
  const ours = createHttpApp({
    log,
    metrics: new HubMetrics({ defaultMetrics: false }),
    version: 'bench',
    health: () => ({
      status: 'ok',
      version: 'bench',
      uptime_s: 0,
      radio: { state: 'connected', transport: 'none', simulated: false },
      actors: [],
    }),
    routes: [ui({ bus, owner: 'http' })].flat(),
  });

  const bare = new Hono();
  bare.use('/*', serveStatic({ root: DEFAULT_WEB_ROOT, precompressed: true }));

  const servers = [await serveOnLoopback(ours), await serveOnLoopback(bare)];
  process.send({ ours: servers[0]!.url, bare: servers[1]!.url });
  process.on('disconnect', () => {
    void Promise.all(servers.map((s) => s.close())).finally(() => process.exit(0));
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
