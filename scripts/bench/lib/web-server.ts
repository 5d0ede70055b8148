/**
 * Child process of the web benchmark: serves the built web app (dist/web) on two loopback
 * ports: the hub's own HTTP app with the web UI routes (request ids, metrics, CSP, in-memory
 * precompressed assets), and a bare Hono app with @hono/node-server's serveStatic over the same
 * folder with `precompressed: true`. Sends `{ ours, bare }` over IPC; exits on disconnect.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { pino } from 'pino';
import { standaloneApp, standaloneModuleHost } from '../../../hub/module-host.js';
import { openDatabase } from '../../../src/store/database.js';
import { DEFAULT_WEB_ROOT } from '../../../src/ui-server/map-tiles.js';
import { webUiModule } from '../../../src/ui-server/module.js';
import { webUiSettings } from '../../../src/ui-server/settings.js';
import { serveForParent } from './server-child.js';

async function main(): Promise<void> {
  if (!process.send) throw new Error('run forked by scripts/bench/web.ts');
  const log = pino({ level: 'silent' });
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-bench-web-'));
  const db = openDatabase(':memory:');
  const { host, mounts, metrics } = await standaloneModuleHost({ db, dataDir, log });
  await host.create(webUiModule, webUiSettings.parse({}));
  const ours = standaloneApp(mounts, metrics, 'bench');

  const bare = new Hono();
  bare.use('/*', serveStatic({ root: DEFAULT_WEB_ROOT, precompressed: true }));

  await serveForParent(ours, bare);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
