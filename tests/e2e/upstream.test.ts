/**
 * The web UI in upstream mode (issue 12), in real Chromium against a real upstream
 * (`createUpstream`, the built web app) on a real PostgreSQL, fed through the real sync path:
 * two registered sites whose batches the BatchApplier applies. North is online, South went
 * offline three hours ago; node A is heard by both. The map shows every site's nodes (A once,
 * naming both sites), the Sites page says how each site is doing and filters the map to one, the
 * node page charts one site's series, and the chat, which has no messaging stream here, sends a
 * text that is queued for North and follows its status by polling. Reading the upstream needs a
 * sign-in (README "The upstream's reads"): an anonymous visitor gets the sign-in form, not errors.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../src/auth/local-issuer.js';
import { DEFAULT_WEB_ROOT } from '../../src/ui-server/map-tiles.js';
import type { SyncRecord } from '../../sync/protocol.js';
import { UpstreamUserService } from '../../sync/upstream/auth/user-service.js';
import { BatchApplier } from '../../sync/upstream/batch-apply.js';
import { grantUpstreamSubscription } from '../../sync/upstream/commands.js';
import { createUpstream, type UpstreamServer } from '../../sync/upstream/main.js';
import { upstreamLiveRoutes } from '../../sync/upstream/routes/live-routes.js';
import { loadUpstreamSettings } from '../../sync/upstream/settings.js';
import { SiteRegistry } from '../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../helpers/postgres.js';
import { readSse, type SseEvent } from '../helpers/sse.js';
import { batchSequence } from '../sync/helpers/batches.js';
import { readingBody } from '../sync/helpers/records.js';
import { describeInBrowser, type GuardedPage, launchBrowser, openPage } from './helpers/browser.js';
import type { BrowserWindow, DomCanvas, DomElement } from './helpers/dom.js';
import { localTiles, SIM_CENTER } from './helpers/hubs.js';

const skip = await skipWithoutPostgres();

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const A = '!0000a0a0'; // heard by both sites, by North most recently
const B = '!0000b0b0'; // South only
const C = '!0000c0c0'; // North only
const PASSWORD = 'field-radio-42';

interface NodeSpec {
  id: string;
  short: string;
  long: string;
  lat: number;
  lon: number;
  lastHeard: number;
}

function nodeRecord(seq: number, node: NodeSpec): SyncRecord {
  return {
    seq,
    kind: 'node',
    at: node.lastHeard,
    body: {
      node_num: Number.parseInt(node.id.slice(1), 16),
      node_id: node.id,
      short_name: node.short,
      long_name: node.long,
      hw_model: 'HELTEC_V3',
      latitude: node.lat,
      longitude: node.lon,
      altitude: null,
      last_heard: node.lastHeard,
      battery_level: 87,
      snr: 6.25,
      updated_at: node.lastHeard,
    },
  };
}

/** `count` readings of `nodeId`, one every `stepMs`, the newest at `newest`. */
function readingRecords(seq: () => number, nodeId: string, newest: number, count: number, stepMs: number) {
  return Array.from({ length: count }, (_, i): SyncRecord => {
    const ts = newest - (count - 1 - i) * stepMs;
    return {
      seq: seq(),
      kind: 'reading',
      at: ts,
      body: readingBody(nodeId, ts, {
        temperature_c: 12 + (i % 7) * 0.4,
        humidity_percent: 60 + (i % 5),
        pressure_pa: 101_300 + i * 2,
      }),
    };
  });
}

/** What a site's batch says of a text the upstream sent through it (`owner` upstream:ana). */
function outboundRecord(
  seq: number,
  text: { id: string; nodeId: string; text: string; at: number },
  status: 'queued' | 'delivered' | 'failed',
  failure: { code: string; reason: string } | null = null,
): SyncRecord {
  return {
    seq,
    kind: 'message',
    at: text.at,
    body: {
      id: text.id,
      owner: 'upstream:ana',
      owner_name: 'ana',
      node_id: text.nodeId,
      direction: 'outbound',
      sender_node_id: null,
      target_node_id: text.nodeId,
      text: text.text,
      status,
      failure_code: failure?.code ?? null,
      failure_reason: failure?.reason ?? null,
      created_at: text.at - 5_000,
      updated_at: text.at,
    },
  };
}

/** Sends `text` in the open thread; its bubble and the message id the upstream gave it. */
async function sendText(page: Page, text: string) {
  await page.getByLabel(/^Message to /).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  const bubble = page.locator('.message', { hasText: text });
  await bubble.waitFor();
  return { bubble, id: (await bubble.getAttribute('data-message-id'))! };
}

/** The ids of the nodes the map shows, sorted. */
const markerIds = (page: Page) =>
  page
    .locator('.node-marker')
    .evaluateAll((els) => els.map((el) => (el as unknown as DomElement).dataset.nodeId).sort());
const pixelsOf = (page: Page, metric: string) =>
  page.locator(`figure[data-metric="${metric}"] canvas`).evaluate((element) => {
    const canvas = element as unknown as DomCanvas;
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
    return n;
  });

/** The SSE events a stream sends (their data parsed) until `until` says enough. */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  until: (events: Array<{ event: string; data: unknown }>) => boolean,
): Promise<Array<{ event: string; data: unknown }>> {
  const parsed = (events: SseEvent[]) =>
    events.map((e) => ({ event: e.event, data: JSON.parse(e.data) as unknown }));
  return parsed((await readSse(body, (events) => until(parsed(events)))).events);
}

(skip ? describe.skip : describeInBrowser)('the web UI on the upstream', () => {
  let browser: Browser;
  let schema: TestSchema;
  let dataDir: string;
  let upstream: UpstreamServer;
  let base: string;
  let applier: BatchApplier;
  let guarded: GuardedPage | undefined;
  const { batchOf } = batchSequence();
  const now = Date.now();
  const offlineSince = now - 3 * HOUR;
  const at = (dLat: number, dLon: number) => ({
    lat: SIM_CENTER.latitude + dLat,
    lon: SIM_CENTER.longitude + dLon,
  });
  const north = {
    A: { id: A, short: 'RDG', long: 'Ridge Station', ...at(0.01, 0.01), lastHeard: now - MINUTE },
    C: { id: C, short: 'CRK', long: 'Creek Gauge', ...at(-0.015, 0.02), lastHeard: now - 5 * MINUTE },
  };
  const south = {
    A: { ...north.A, lastHeard: offlineSince - 10 * MINUTE },
    B: {
      id: B,
      short: 'DAM',
      long: 'Dam Outflow',
      ...at(0.02, -0.02),
      lastHeard: offlineSince - 30 * MINUTE,
    },
  };
  /** Readings in the last 24 h per site of node A (what its node page charts). */
  const counts = { northA: 36, southA: 20 };

  async function apply(
    siteId: string,
    make: (seq: () => number) => SyncRecord[],
    by: BatchApplier = applier,
  ): Promise<void> {
    const outcome = await by.apply(siteId, batchOf(siteId, make));
    expect(outcome.kind).toBe('applied');
  }

  /** A page whose user signed in, as the map asks an anonymous visitor to. */
  async function signedInPage(path: string, size?: { width: number; height: number }): Promise<GuardedPage> {
    const opened = await openPage(browser, size);
    await opened.page.goto(`${base}${path}`);
    await opened.page.getByLabel('Username').fill('ana');
    await opened.page.getByLabel('Password').fill(PASSWORD);
    await opened.page.getByRole('button', { name: 'Sign in' }).click();
    return opened;
  }

  beforeAll(async () => {
    browser = await launchBrowser();
    schema = await createTestSchema('e2e_up');
    dataDir = mkdtempSync(join(tmpdir(), 'meshhub-e2e-upstream-'));
    const settings = loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: schema.url,
      HTTP_PORT: '0',
      DATA_DIR: join(dataDir, 'upstream'),
      WEB_ROOT: DEFAULT_WEB_ROOT,
      MAP_TILES: localTiles(),
      LOG_LEVEL: 'silent',
    });
    upstream = await createUpstream(settings, { log: pino({ level: 'silent' }), defaultMetrics: false });
    await upstream.start();
    base = `http://127.0.0.1:${upstream.port}`;

    // Two sites, registered as an operator would, each with its own key.
    const registry = new SiteRegistry(upstream.pool);
    for (const [siteId, name] of [
      ['north', 'North Farm'],
      ['south', 'South Ridge'],
    ] as const) {
      const issuer = await LocalIssuer.open(join(dataDir, siteId));
      await registry.add({ siteId, name, publicJwks: issuer.jwks() });
    }
    applier = new BatchApplier(upstream.pool);
    await apply('north', (seq) => [
      nodeRecord(seq(), north.A),
      nodeRecord(seq(), north.C),
      ...readingRecords(seq, A, north.A.lastHeard, counts.northA, 10 * MINUTE),
      ...readingRecords(seq, C, north.C.lastHeard, 12, HOUR),
    ]);
    // South's last batch arrived just before it went quiet.
    await apply(
      'south',
      (seq) => [
        nodeRecord(seq(), south.A),
        nodeRecord(seq(), south.B),
        ...readingRecords(seq, A, south.A.lastHeard, counts.southA, 15 * MINUTE),
        ...readingRecords(seq, B, south.B.lastHeard, 8, HOUR),
      ],
      new BatchApplier(upstream.pool, { now: () => offlineSince }),
    );
    // North's link is up (it probed just now); South last called three hours ago.
    await registry.touch('north');
    await new SiteRegistry(upstream.pool, { now: () => offlineSince }).touch('south');

    await new UpstreamUserService(upstream.pool).add({
      username: 'ana',
      password: PASSWORD,
      roles: ['subscriber'],
    });
    await grantUpstreamSubscription(upstream.pool, {
      subscriber: 'ana',
      nodes: 'all',
      expiresAt: null,
      source: 'test',
    });
  });

  afterAll(async () => {
    await browser?.close();
    await upstream?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  afterEach(async () => {
    guarded?.assertClean();
    await guarded?.close();
    guarded = undefined;
  });

  it('greets the page as the upstream, with its sites, on the live stream', async () => {
    const signIn = await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'ana', password: PASSWORD }),
    });
    const { access_token } = (await signIn.json()) as { access_token: string };
    const controller = new AbortController();
    const res = await fetch(`${base}/api/v1/live`, {
      signal: controller.signal,
      headers: { authorization: `Bearer ${access_token}` },
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = await readEvents(res.body!, (seen) => seen.length >= 2);
    controller.abort();
    const { version } = (await (await fetch(`${base}/api/version`)).json()) as { version: string };
    expect(events[0]).toEqual({
      event: 'hello',
      data: {
        version,
        started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        radio: { state: 'connected', transport: 'none', simulated: false },
        plugins: [],
        mode: 'upstream',
      },
    });
    expect(events[1]?.event).toBe('sites');
    const sites = events[1]!.data as { data: Array<{ site_id: string }> };
    expect(sites.data.map((s) => s.site_id)).toEqual(['north', 'south']);
  });

  it('sends what the process publishes as readings and node events', async () => {
    const live = upstreamLiveRoutes({ version: '9.9.9', startedAt: 0, listSites: async () => [] });
    const res = await live.app.request('/');
    const reading = {
      site_id: 'north',
      node_id: A,
      timestamp: new Date(now).toISOString(),
      temperature_c: 9,
    };
    const node = { site_id: 'south', node_id: B, last_heard: new Date(now).toISOString() };
    let published = false;
    const events = await readEvents(res.body!, (seen) => {
      if (seen.length === 2 && !published) {
        published = true;
        live.publishReadings([]);
        live.publishReadings([reading]);
        live.publishNode(node);
      }
      return seen.length >= 4;
    });
    live.closeAll();
    expect(events.map((e) => e.event)).toEqual(['hello', 'sites', 'readings', 'node']);
    expect(events[2]?.data).toEqual({ data: [reading] });
    expect(events[3]?.data).toEqual(node);
  });

  it('asks an anonymous visitor to sign in instead of showing errors', async () => {
    guarded = await openPage(browser);
    const { page } = guarded;
    const asked: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    for (const path of ['/', `/nodes/${A}`, '/sites']) {
      await page.goto(`${base}${path}`);
      await expect.poll(() => page.locator('h1').first().innerText()).toBe('Sign in to see the mesh');
    }
    expect(await page.locator('.node-marker').count()).toBe(0);
    expect(await page.getByTestId('reconnecting').count()).toBe(0);
    expect(await page.getByText('Connecting to the hub…').count()).toBe(0);
    expect(await page.getByTestId('upstream-state').innerText()).toMatch(/Upstream\s*·\s*sign in to see/);
    // Nothing was asked that the upstream would refuse (the version and the map's tiles are open).
    const refusable = asked.filter(
      (p) => p.startsWith('/api/') && p !== '/api/version' && !p.startsWith('/api/v1/map/'),
    );
    expect(refusable).toEqual([]);
  });

  it('maps every site’s nodes, one marker per node, naming the sites that heard each', async () => {
    guarded = await signedInPage('/');
    const { page } = guarded;
    const markers = page.locator('.node-marker');
    await expect.poll(() => markers.count(), { timeout: 15_000 }).toBe(3);
    const onMap = await markers.evaluateAll((els) =>
      els.map((el) => (el as unknown as DomElement).dataset.nodeId).sort(),
    );
    expect(onMap).toEqual([A, B, C]);

    // The header: the upstream and its sites instead of a radio.
    await expect
      .poll(() => page.getByTestId('upstream-state').innerText())
      .toMatch(/Upstream\s*·\s*2 sites, 1 offline/);
    expect(await page.getByTestId('radio-state').count()).toBe(0);
    expect(await page.getByTestId('simulator-banner').count()).toBe(0);

    // Node A, heard by both: North heard it last, so it is named first.
    const sitesOf = (id: string) =>
      page.locator(`.node-item[data-node-id="${id}"] [data-testid="node-sites"]`);
    await expect.poll(() => sitesOf(A).innerText()).toBe('Heard by North Farm and South Ridge');
    expect(await sitesOf(B).innerText()).toBe('Heard by South Ridge');
    expect(await sitesOf(C).innerText()).toBe('Heard by North Farm');

    await page.locator(`.node-marker[data-node-id="${A}"]`).click();
    const popup = page.locator('.map-popup');
    await popup.waitFor();
    expect(await popup.locator('h2').innerText()).toBe('Ridge Station');
    expect(await popup.locator('.popup-sites').innerText()).toBe('Heard by North Farm and South Ridge');
    await expect.poll(() => page.getByTestId('map').getAttribute('data-background')).toBe('tiles');
    await page.screenshot({ path: '/tmp/upstream-dashboard.png' });
    expect(guarded.external).toEqual([]);
  });

  it('lists the sites with their health, and shows one site’s nodes on the map', async () => {
    guarded = await signedInPage('/');
    const { page } = guarded;
    await page.getByRole('link', { name: 'Sites', exact: true }).click();
    await page.waitForURL(`${base}/sites`);
    const card = (id: string) => page.locator(`.site-card[data-site-id="${id}"]`);
    await expect.poll(() => card('north').getByTestId('site-health').innerText()).toBe('Online');
    expect(await card('north').locator('h2').innerText()).toBe('North Farm');
    expect(await card('north').getByTestId('site-node-count').innerText()).toBe('2');
    expect(await card('south').getByTestId('site-health').innerText()).toMatch(
      /^Offline since .+ \(3 h ago\)$/,
    );
    expect(await card('south').getAttribute('data-health')).toBe('offline');
    expect(await card('south').getByTestId('site-node-count').innerText()).toBe('2');
    await page.screenshot({ path: '/tmp/upstream-sites.png' });

    await card('south').getByRole('link', { name: 'Show its 2 nodes on the map' }).click();
    await page.waitForURL(`${base}/?site=south`);
    await expect.poll(() => markerIds(page)).toEqual([A, B]);
    expect(await page.getByTestId('site-filter').innerText()).toContain('Only the nodes South Ridge heard.');
    // A node page opened from the filtered map shows that site's series.
    await page.locator(`.node-item[data-node-id="${A}"] a.node-name`).click();
    await page.waitForURL(`${base}/nodes/${A}?site=south`);
    await expect.poll(() => page.getByTestId('history-site').innerText()).toBe(' · as South Ridge heard it');

    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Sites', exact: true }).click();
    await card('north').getByRole('link', { name: 'Show its 2 nodes on the map' }).click();
    await expect.poll(() => markerIds(page)).toEqual([A, C]);
  });

  it('fits a 360-px-wide phone: the header with its Sites link, the map and the Sites page', async () => {
    guarded = await signedInPage('/', { width: 360, height: 740 });
    const { page } = guarded;
    const widths = () =>
      page.evaluate(() => {
        const { document } = globalThis as unknown as BrowserWindow;
        return [document.documentElement.scrollWidth, document.querySelector('main')!.scrollWidth];
      });
    await expect.poll(() => page.locator('.node-marker').count(), { timeout: 15_000 }).toBe(3);
    await expect.poll(() => page.getByTestId('upstream-state').innerText()).toMatch(/2 sites, 1 offline/);
    for (const name of ['Map', 'Chat', 'Sites'])
      expect(await page.getByRole('link', { name, exact: true }).isVisible()).toBe(true);
    expect(Math.max(...(await widths()))).toBeLessThanOrEqual(360);
    await page.getByRole('link', { name: 'Sites', exact: true }).click();
    await page.locator('.site-card').first().waitFor();
    await page.screenshot({ path: '/tmp/upstream-sites-360.png' });
    expect(Math.max(...(await widths()))).toBeLessThanOrEqual(360);
  });

  it('charts a node’s history, from the site that heard it last or from the one chosen', async () => {
    guarded = await signedInPage(`/nodes/${A}`);
    const { page } = guarded;
    await expect.poll(() => page.locator('h1').first().innerText()).toContain('Ridge Station');
    const sites = page.getByTestId('node-page-sites');
    await expect.poll(() => sites.innerText()).toMatch(/Sites\s*North Farm, South Ridge/);

    const range = page.locator('.history-range');
    await expect.poll(() => range.innerText()).toContain(`${counts.northA} readings`);
    expect(await page.getByTestId('history-site').innerText()).toBe(' · as North Farm heard it');
    await expect.poll(() => pixelsOf(page, 'temperature_c')).toBeGreaterThan(100);

    await sites.getByRole('link', { name: 'South Ridge' }).click();
    await page.waitForURL(`${base}/nodes/${A}?site=south`);
    await expect.poll(() => range.innerText()).toContain(`${counts.southA} readings`);
    expect(await page.getByTestId('history-site').innerText()).toBe(' · as South Ridge heard it');
    await expect.poll(() => pixelsOf(page, 'temperature_c')).toBeGreaterThan(100);

    // Another range keeps the site.
    await page.getByText('7 d', { exact: true }).click();
    await page.waitForURL(`${base}/nodes/${A}?site=south&range=7d`);
    await expect.poll(() => page.getByTestId('history-site').innerText()).toBe(' · as South Ridge heard it');
  });

  it('sends a text that is queued for the site that heard the node last, and follows its status by polling', async () => {
    guarded = await openPage(browser);
    const { page } = guarded;
    const asked: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/messages')) asked.push(new URL(r.url()).pathname);
    });
    await page.goto(`${base}/chat`);
    await page.getByLabel('Username').fill('ana');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.conversations').waitFor();
    await page.getByRole('button', { name: 'New message' }).click();
    await page.getByLabel('To node').selectOption(A);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.waitForURL(`${base}/chat/${A}`);
    const { bubble, id } = await sendText(page, 'Is the ridge road open?');
    expect(await bubble.getAttribute('data-status')).toBe('queued');
    const { rows } = await upstream.pool.query<{ site_id: string; status: string; subscriber: string }>(
      'SELECT site_id, status, subscriber FROM messages WHERE id = $1',
      [id],
    );
    expect(rows).toEqual([{ site_id: 'north', status: 'queued', subscriber: 'ana' }]);

    // North's radio delivered it; its next batch says so, and the open thread follows.
    const sent = { id, nodeId: A, text: 'Is the ridge road open?', at: Date.now() };
    await apply('north', (seq) => [outboundRecord(seq(), sent, 'delivered')]);
    await expect.poll(() => bubble.getAttribute('data-status'), { timeout: 20_000 }).toBe('delivered');
    // Polled, never streamed: the upstream has no messaging stream to ask for.
    expect(asked.some((path) => path.includes('/stream'))).toBe(false);
    expect(asked.filter((path) => path === `/api/v1/messages/conversations/${A}`).length).toBeGreaterThan(1);

    // A text that fails at the site shows why, and keeps showing it while the thread is polled.
    const { bubble: second, id: secondId } = await sendText(page, 'Then call the hut.');
    const failed = { id: secondId, nodeId: A, text: 'Then call the hut.', at: Date.now() };
    await apply('north', (seq) => [
      outboundRecord(seq(), failed, 'failed', {
        code: 'MAX_RETRANSMIT',
        reason: 'the radio repeated it but no node acknowledged it [MAX_RETRANSMIT]',
      }),
    ]);
    const reason = second.getByTestId('failure-reason');
    const said = 'The radio repeated it but no node acknowledged it';
    await expect.poll(() => reason.innerText(), { timeout: 20_000 }).toBe(said);
    const polls = () => asked.filter((path) => path === `/api/v1/messages/conversations/${A}`).length;
    const shownAt = polls();
    await expect.poll(polls, { timeout: 20_000 }).toBeGreaterThanOrEqual(shownAt + 2);
    expect(await reason.innerText()).toBe(said);
  });

  it('says a queued text waits for its offline site, not merely "Queued"', async () => {
    guarded = await signedInPage(`/chat/${B}`);
    const { page } = guarded;
    const { bubble } = await sendText(page, 'Is the dam gate shut?');
    expect(await bubble.getAttribute('data-status')).toBe('queued');
    // B is heard by South alone, which went quiet three hours ago.
    await expect
      .poll(() =>
        bubble
          .getByTestId('waiting-for')
          .innerText()
          .catch(() => ''),
      )
      .toMatch(/^South Ridge is offline since .+; the text goes out when it is back$/);
    // The conversation says a text waits.
    await expect
      .poll(() =>
        page.locator(`.conversation-list li[data-node-id="${B}"]`).getByTestId('waiting-badge').innerText(),
      )
      .toBe('◷ 1 waiting');
  });

  it('says what an online site last said of a queued text, and as of when', async () => {
    guarded = await signedInPage(`/chat/${C}`);
    const { page } = guarded;
    const { bubble, id } = await sendText(page, 'Is the creek rising?');
    // North is online and has said nothing of it yet: simply queued.
    await expect.poll(() => bubble.locator('.status').innerText()).toMatch(/Queued$/);
    expect(await bubble.getByTestId('waiting-for').count()).toBe(0);

    // North took it, its first attempt went unanswered, and it now waits for C; its next batch
    // says so (a retry that stays queued sends only its transition).
    const tookAt = Date.now();
    await apply('north', (seq) => [
      outboundRecord(seq(), { id, nodeId: C, text: 'Is the creek rising?', at: tookAt }, 'queued'),
      {
        seq: seq(),
        kind: 'message_transition',
        at: tookAt,
        body: { message_id: id, seq: 1, status: 'queued', reason: null, at: tookAt },
      },
      {
        seq: seq(),
        kind: 'message_transition',
        at: tookAt + 1_000,
        body: {
          message_id: id,
          seq: 2,
          status: 'queued',
          reason:
            'the radio repeated it but no node acknowledged it (the node may be out of range or off) [MAX_RETRANSMIT]; waiting for Creek Gauge to come in range (last heard 5 min ago): sent again as soon as it is heard, at the latest in 5 min',
          at: tookAt + 1_000,
        },
      },
    ]);
    // The open thread learns it while it is polled, without a reload.
    await expect
      .poll(() => bubble.locator('.status').innerText(), { timeout: 40_000 })
      .toContain('Waiting for Creek Gauge');
    expect(await bubble.getByTestId('waiting-for').innerText()).toMatch(
      /^Waiting for Creek Gauge to come in range \(last heard 5 min ago\), as of \S.*$/,
    );
    expect(await bubble.getAttribute('data-status')).toBe('queued');
  });

  it('lists a sensor known only from its readings under the site they came from', async () => {
    const sensor = '!0000f00d';
    await apply('north', (seq) => readingRecords(seq, sensor, Date.now() - MINUTE, 3, 10 * MINUTE));
    guarded = await signedInPage('/?site=north');
    const { page } = guarded;
    const item = page.locator(`.node-item[data-node-id="${sensor}"]`);
    await expect.poll(() => item.count(), { timeout: 15_000 }).toBe(1);
    expect(await page.locator(`.node-item[data-node-id="${C}"]`).count()).toBe(1);
    // Not South's: South never reported it.
    await page.goto(`${base}/?site=south`);
    await expect.poll(() => page.locator(`.node-item[data-node-id="${B}"]`).count()).toBe(1);
    expect(await item.count()).toBe(0);
  });

  it('labels each site’s radio by its site when both are called HUB (it adds two nodes)', async () => {
    const radios = {
      north: {
        id: '!0000d0d0',
        short: 'HUB',
        long: 'meshhub Radio',
        ...at(0.03, 0.04),
        lastHeard: now - MINUTE,
      },
      south: {
        id: '!0000e0e0',
        short: 'HUB',
        long: 'meshhub Radio',
        ...at(-0.03, -0.04),
        lastHeard: offlineSince - MINUTE,
      },
    };
    await apply('north', (seq) => [nodeRecord(seq(), radios.north)]);
    await apply(
      'south',
      (seq) => [nodeRecord(seq(), radios.south)],
      new BatchApplier(upstream.pool, { now: () => offlineSince }),
    );
    guarded = await signedInPage('/');
    const { page } = guarded;
    await expect.poll(() => page.locator('.node-marker').count(), { timeout: 15_000 }).toBe(5);
    const label = (id: string) =>
      page.locator(`.node-marker[data-node-id="${id}"] .node-marker-label`).textContent();
    await expect.poll(() => label(radios.north.id)).toBe('North Farm');
    expect(await label(radios.south.id)).toBe('South Ridge');
    // The other nodes keep their short names.
    expect(await label(B)).toBe('DAM');
  });

  // Last: North is offline from here on.
  it('shows a site that stopped cleanly as offline at once, not "Online" for minutes', async () => {
    // What the downlink does when North closes it saying it is stopping (tests/sync/site/downlink-upstream.test.ts).
    await new SiteRegistry(upstream.pool).markStopped('north');
    guarded = await signedInPage('/sites');
    const { page } = guarded;
    const card = page.locator('.site-card[data-site-id="north"]');
    await expect
      .poll(() => card.getByTestId('site-health').innerText())
      .toMatch(/^Offline since .+ \(just now, stopped\)$/);
    expect(await card.getAttribute('data-health')).toBe('offline');
  });
});
