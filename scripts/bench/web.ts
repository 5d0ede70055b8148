import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import autocannon from 'autocannon';
import type { Page } from 'playwright-core';
import { openAuditRepositories } from '../../plugins/audit/store/audit-store.js';
import { LiveBroadcaster, sseEvent } from '../../src/live/live-broadcaster.js';
import { DEFAULT_WEB_ROOT } from '../../src/ui-server/map-tiles.js';
import { projectRoot } from '../../src/version.js';
import { normalizeAll, upstreamRecords } from './audit-fixture.js';
import { findChromium, launchHeadlessChromium } from './lib/chromium.js';
import { serveOnLoopback } from './lib/http.js';
import { auditHubEnv } from './lib/hub-env.js';
import { startInProcessHub } from './lib/in-process-hub.js';
import { liveApp } from './lib/live-app.js';
import { forkServers, stopServers } from './lib/server-child.js';
import { absolute, type BenchResult, compare, median } from './report.js';

const CLIENTS = 100;
const EVENTS = 1_000;
const CONNECTIONS = 10;
const DURATION_S = 4;

function gzipSize(path: string): number {
  return existsSync(`${path}.gz`)
    ? statSync(`${path}.gz`).size
    : gzipSync(readFileSync(path), { level: 9 }).length;
}

function assetsMatching(prefix: string): string[] {
  const dir = join(DEFAULT_WEB_ROOT, 'assets');
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && /\.(js|css)$/.test(f))
    .map((f) => join(dir, f));
}

const kib = (bytes: number) => bytes / 1024;

/**
 * The files a browser fetches to run `chunks`: each chunk, every chunk it imports statically (the
 * bundler moves code shared by several pages into chunks of their own), and each one's CSS
 * (`name-<hash>.css` beside `name-<hash>.js`). Dynamic `import("./…")` is not followed.
 */
function withImports(chunks: string[]): Set<string> {
  const dir = join(DEFAULT_WEB_ROOT, 'assets');
  const names = readdirSync(dir);
  const files = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const base = file.split('/').pop()!;
    const name = /^(.*)-[\w-]{8}\.js$/.exec(base)?.[1];
    if (name) {
      for (const css of names.filter((n) => new RegExp(`^${name}-[\\w-]{8}\\.css$`).test(n)))
        files.add(join(dir, css));
    }
    for (const [, imported] of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*"\.\/([^"]+\.js)"/g))
      visit(join(dir, imported!));
  };
  for (const chunk of chunks) visit(chunk);
  return files;
}

/** What index.html itself loads: its script, its modulepreloads and its stylesheets. */
function entryFiles(): string[] {
  const html = readFileSync(join(DEFAULT_WEB_ROOT, 'index.html'), 'utf8');
  return [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) =>
    join(DEFAULT_WEB_ROOT, m[1]!),
  );
}

/** A lazily loaded page's chunks, without what the dashboard already brought. */
function pageAdds(prefix: string, dashboard: Set<string>): string[] {
  const js = assetsMatching(prefix).filter((f) => f.endsWith('.js'));
  return [...withImports(js)].filter((f) => !dashboard.has(f));
}

function shippedBytes(): BenchResult[] {
  if (!existsSync(join(DEFAULT_WEB_ROOT, 'index.html')))
    throw new Error('dist/web is missing: run npm run build');
  const sum = (files: string[]) => files.reduce((n, f) => n + gzipSize(f), 0);
  const dashboardFiles = withImports([...entryFiles(), ...assetsMatching('leaflet-map-')]);
  const dashboard = sum([join(DEFAULT_WEB_ROOT, 'index.html'), ...dashboardFiles]);
  const nodePage = sum(pageAdds('node-page-', dashboardFiles));
  const chat = sum(pageAdds('chat-page-', dashboardFiles));
  const plans = sum(pageAdds('plans-page-', dashboardFiles));
  const adminBilling = sum(pageAdds('admin-billing-page-', dashboardFiles));
  // Issue 15: the audit console's first visit beyond the shared app shell.
  const auditConsole = sum(pageAdds('audit-console-', dashboardFiles));
  const leaflet = join(projectRoot(), 'node_modules', 'leaflet', 'dist');
  const leafletAlone = gzipSize(join(leaflet, 'leaflet.js')) + gzipSize(join(leaflet, 'leaflet.css'));
  /** What a page's chunks add to the first visit, gzipped, against a budget of `atMost` KiB. */
  const adds = (what: string, label: string, bytes: number, atMost: number, note = '') =>
    absolute(
      `web: ${what}, gzip`,
      { label, value: kib(bytes), unit: 'KiB' },
      { atMost, text: `≤ ${atMost} KiB${note}` },
    );
  return [
    compare(
      'web: dashboard first visit, gzip (html, app, CSS, map with Leaflet)',
      { label: 'Leaflet alone (leaflet.js + leaflet.css)', value: kib(leafletAlone), unit: 'KiB' },
      { label: 'meshhub dashboard', value: kib(dashboard), unit: 'KiB' },
      { atMost: 2, text: '≤ 200% of Leaflet alone' },
    ),
    absolute(
      'web: dashboard first visit, gzip',
      { label: 'meshhub dashboard', value: kib(dashboard), unit: 'KiB' },
      {
        atMost: 100,
        text: '≤ 100 KiB',
      },
    ),
    adds('node page adds (charts, uPlot)', 'node page chunk', nodePage, 40),
    adds('chat adds', 'chat chunk', chat, 15),
    adds('plans page adds (billing)', 'plans chunks', plans, 10),
    adds('admin billing page adds', 'admin billing chunks', adminBilling, 10),
    adds('audit console adds', 'audit console chunks', auditConsole, 60, ' (issue 15)'),
  ];
}

async function load(url: string, duration = DURATION_S): Promise<number> {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration,
    headers: { 'accept-encoding': 'br, gzip' },
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

async function serving(): Promise<BenchResult> {
  const entry = assetsMatching('index-').find((f) => f.endsWith('.js'))!;
  const path = `/assets/${entry.split('/').pop()}`;
  const { child, ours, bare } = await forkServers(
    fileURLToPath(new URL('./lib/web-server.js', import.meta.url)),
    [],
    'web-bench',
  );
  try {
    const [a, b] = await Promise.all([
      fetch(ours + path, { headers: { 'accept-encoding': 'br' } }),
      fetch(bare + path, { headers: { 'accept-encoding': 'br' } }),
    ]);
    if (a.headers.get('content-encoding') !== 'br' || b.headers.get('content-encoding') !== 'br') {
      throw new Error('both servers must send the precompressed brotli file');
    }
    await load(ours + path, 1);
    await load(bare + path, 1);
    const bareRps = await load(bare + path);
    const oursRps = await load(ours + path);
    return compare(
      `web: GET ${path.replace(/-[\w-]+\.js$/, '-….js')} (brotli)`,
      { label: 'bare Hono + serveStatic (precompressed)', value: bareRps, unit: 'req/s' },
      { label: 'hub HTTP app + web UI routes', value: oursRps, unit: 'req/s' },
      { atLeast: 0.8, text: '≥ 80% of baseline req/s' },
    );
  } finally {
    await stopServers(child);
  }
}

/** Opens `CLIENTS` streams on `url`; resolves when each has read `bytes` body bytes. */
async function fanOut(
  url: string,
  bytes: number,
  ready: () => Promise<void>,
  send: () => void,
): Promise<number> {
  const responses: IncomingMessage[] = [];
  const done: Array<Promise<void>> = [];
  for (let i = 0; i < CLIENTS; i++) {
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(url, resolve).once('error', reject),
    );
    responses.push(res);
    done.push(
      new Promise((resolve) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen >= bytes) resolve();
        });
      }),
    );
  }
  await ready();
  const started = process.hrtime.bigint();
  send();
  await Promise.all(done);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  for (const res of responses) res.destroy();
  return ms;
}

async function liveFanOut(): Promise<BenchResult> {
  const data = JSON.stringify({
    data: Array.from({ length: 6 }, (_, i) => ({
      node_id: `!0000000${i}`,
      timestamp: '2026-11-21T10:00:00.000Z',
      temperature_c: 21.5 + i,
      humidity_percent: 60,
      pressure_pa: 101325,
      wind_speed_ms: 3.2,
    })),
  });
  const chunk = sseEvent('readings', data);
  const total = chunk.byteLength * EVENTS;

  // Baseline: node:http, every event written to every response.
  const plain = new Set<ServerResponse>();
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    plain.add(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const baselineMs = await fanOut(
    baseUrl,
    total,
    async () => {
      while (plain.size < CLIENTS) await new Promise((r) => setTimeout(r, 5));
    },
    () => {
      for (let i = 0; i < EVENTS; i++) for (const res of plain) res.write(chunk);
    },
  );
  server.closeAllConnections();
  await new Promise((r) => server.close(r));

  // Ours: the LiveBroadcaster behind Hono on @hono/node-server.
  const live = new LiveBroadcaster({ maxClients: CLIENTS, maxBufferedBytes: total * 2 });
  const served = await serveOnLoopback(liveApp(live));
  // `retry:` opens each stream: count it in.
  const retryBytes = `retry: ${live.limits.retryMs}\n\n`.length;
  const oursMs = await fanOut(
    `${served.url}/live`,
    total + retryBytes,
    async () => {
      while (live.clientCount < CLIENTS) await new Promise((r) => setTimeout(r, 5));
    },
    () => {
      for (let i = 0; i < EVENTS; i++) live.broadcast('readings', data);
    },
  );
  live.closeAll();
  await served.close();
  const rate = (ms: number) => (CLIENTS * EVENTS) / (ms / 1000);
  return compare(
    `web: live stream, ${EVENTS} events of ${chunk.byteLength} B to ${CLIENTS} dashboards`,
    { label: 'node:http res.write to each', value: rate(baselineMs), unit: 'events/s' },
    { label: 'LiveBroadcaster (Hono SSE)', value: rate(oursMs), unit: 'events/s' },
    { atLeast: 0.5, text: '≥ 50% of baseline events/s' },
  );
}

const RENDER_ROUNDS = 21;
const RENDER_EVENTS = 300;

/** Waits for the console's next render measure after `measures` of them; answers its duration and rows. */
async function nextRender(page: Page, measures: number): Promise<{ ms: number; rows: number }> {
  const handle = await page.waitForFunction(
    (n) => {
      const entries = performance.getEntriesByName('audit-events-render');
      const e = entries[n] as { duration: number; detail?: { rows?: number } } | undefined;
      return e ? { ms: e.duration, rows: e.detail?.rows ?? 0 } : undefined;
    },
    measures,
    { timeout: 10_000 },
  );
  return (await handle.jsonValue()) as { ms: number; rows: number };
}

/** A page of 100 events in the audit console, data arrival to rows painted, in Chromium. */
async function auditRender(): Promise<BenchResult[]> {
  const chromiumPath = findChromium();
  if (!chromiumPath) {
    process.stderr.write('web: audit console render skipped: no Chromium (apt-get install -y chromium)\n');
    return [];
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-bench-audit-web-'));
  const env = auditHubEnv(dataDir, {
    AUDIT_FETCH_CRON: '0 0 1 1 *',
    AUDIT_MAINTENANCE_CRON: '0 0 1 1 *',
    // The bench pages far more often than a person: out of the way of the read tier.
    RATE_LIMIT_DEFAULT: '100000/1m',
  });
  const hub = await startInProcessHub(env);
  // Events from the benchmark fixture's generator (Graph and Management API shapes), dated
  // within the last day so the console's default range (7 days) shows them.
  const events = normalizeAll(upstreamRecords(RENDER_EVENTS, 15));
  const now = Date.now();
  events.forEach((e, i) => {
    e.timestamp = now - (i + 1) * 60_000;
  });
  openAuditRepositories(hub.store.db).writer.writeNow(events);
  const browser = await launchHeadlessChromium(chromiumPath);
  const base = `http://127.0.0.1:${hub.http.port}`;
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const firstLoad: number[] = [];
    const paging: number[] = [];
    const check = (r: { ms: number; rows: number }) => {
      if (r.rows !== 100) throw new Error(`the console painted ${r.rows} rows, not 100`);
      return r.ms;
    };
    // Fresh loads: the console's code is cold in each (the browser's cache keeps the files).
    for (let i = 0; i < RENDER_ROUNDS + 2; i++) {
      await page.goto(`${base}/audit?limit=100&perf`);
      const ms = check(await nextRender(page, 0));
      if (i >= 2) firstLoad.push(ms);
    }
    // Paging in one load: Older, Newer, Older… each a different 100 rows.
    for (let i = 0; i < RENDER_ROUNDS + 2; i++) {
      await page.getByRole('button', { name: i % 2 ? /Newer/ : /Older/ }).click();
      const ms = check(await nextRender(page, i + 1));
      if (i >= 2) paging.push(ms);
    }
    return [
      absolute(
        `web: audit console, 100 events from data to painted rows, fresh load (median of ${RENDER_ROUNDS})`,
        { label: 'Chromium', value: median(firstLoad), unit: 'ms' },
        { atMost: 50, text: '≤ 50 ms (issue 15)' },
      ),
      absolute(
        `web: audit console, 100 events from data to painted rows, Older/Newer (median of ${RENDER_ROUNDS})`,
        { label: 'Chromium', value: median(paging), unit: 'ms' },
        { atMost: 50, text: '≤ 50 ms (issue 15)' },
      ),
    ];
  } finally {
    await browser.close();
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult[]> {
  return [...shippedBytes(), ...(await auditRender()), await serving(), await liveFanOut()];
}
