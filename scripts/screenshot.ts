/**
 * Regenerates the README's screenshots (docs/dashboard.png, docs/node-page.png): a hub on the
 * simulator with a day of history, photographed in headless Chromium. `npm run screenshot`.
 *
 * The browser talks only to this hub: requests to other hosts are blocked, so the map shows
 * the offline background (coordinate grid) unless MAP_TILES names a local .pmtiles/.mbtiles
 * file, whose tiles the hub serves. SCREENSHOT_ONLINE=1 lets online tiles through.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { chromium } from 'playwright-core';
import { createHub } from '../hub/main.js';
import { loadConfig } from '../src/config/load.js';
import { projectRoot } from '../src/version.js';

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p): p is string => !!p && existsSync(p),
);

async function main(): Promise<void> {
  if (!CHROMIUM) throw new Error('Chromium not found: apt-get install -y chromium (or set CHROMIUM_PATH)');
  const out = join(projectRoot(), 'docs');
  mkdirSync(out, { recursive: true });
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-screenshot-'));
  const config = loadConfig({
    ...process.env,
    DATA_DIR: dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MQTT_PORT: '0',
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_BACKFILL: '24h',
    LOG_LEVEL: 'silent',
  });
  const hub = await createHub(config, { log: pino({ level: 'silent' }), defaultMetrics: false });
  await hub.start();
  const base = `http://127.0.0.1:${hub.http.port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 }, deviceScaleFactor: 1 });
    if (process.env.SCREENSHOT_ONLINE !== '1') {
      await page.route(
        (url) => url.hostname !== '127.0.0.1',
        (route) => route.abort('internetdisconnected'),
      );
    }
    // Wait until the simulated nodes are known and their readings are in.
    for (let i = 0; i < 100; i++) {
      const { data } = (await (await fetch(`${base}/api/v1/weather/latest`)).json()) as { data: unknown[] };
      if (data.length >= 6) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.goto(`${base}/`);
    await page.locator('.node-marker').nth(5).waitFor();
    await page.waitForTimeout(800);
    // The node with the most kinds of readings that has a position: the richest tooltip.
    const nodes = (await (await fetch(`${base}/api/v1/nodes`)).json()) as {
      data: Array<{ node_id: string; latitude?: number }>;
    };
    const latest = (await (await fetch(`${base}/api/v1/weather/latest`)).json()) as {
      data: Array<Record<string, unknown>>;
    };
    const placed = new Set(nodes.data.filter((n) => n.latitude !== undefined).map((n) => n.node_id));
    const richest = latest.data
      .filter((r) => placed.has(r.node_id as string))
      .sort((a, b) => Object.keys(b).length - Object.keys(a).length)[0];
    const station = page.locator(`.node-marker[data-node-id="${richest?.node_id as string}"]`);
    await station.hover();
    await page.locator('.map-tooltip').waitFor();
    await page.screenshot({ path: join(out, 'dashboard.png') });

    const nodeId = await station.getAttribute('data-node-id');
    // The page scrolls inside <main>, not the document: a tall window shows every chart.
    await page.setViewportSize({ width: 1280, height: 1360 });
    await page.goto(`${base}/nodes/${nodeId}`);
    await page.locator('figure.chart canvas').first().waitFor();
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(out, 'node-page.png') });
    process.stdout.write(`wrote ${join(out, 'dashboard.png')} and ${join(out, 'node-page.png')}\n`);
  } finally {
    await browser.close();
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`screenshot: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
