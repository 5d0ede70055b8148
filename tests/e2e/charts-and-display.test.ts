/**
 * What a newcomer meets first on the map and the node pages, in real Chromium against a real hub
 * with a day of simulated history: the x axis spans the range chosen (not the data), a node with
 * one reading shows it as a point, the display settings (units, theme) apply and survive a
 * reload, the node list's search, and a sensor that posted over HTTP listed without "Message".
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { formatMetric } from '../../src/web/src/lib/format.js';
import { DEFAULT_DISPLAY, displayMetrics } from '../../src/web/src/lib/units.js';
import type { TestHub } from '../helpers/hub.js';
import { call, subscriber } from '../messaging/helpers.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import type { DomCanvas } from './helpers/dom.js';
import { type ApiNode, apiJson, simulatedNodes, startUiHub } from './helpers/hubs.js';

const DAY_S = 86_400;
const SENSOR = 'garden';

/** The x scale a chart drew (seconds), as the figure publishes it. */
async function xSpan(page: Page, metric: string): Promise<{ min: number; max: number }> {
  const figure = page.locator(`figure[data-metric="${metric}"]`);
  await expect.poll(() => figure.getAttribute('data-x-max'), { timeout: 15_000 }).toMatch(/^\d/);
  return {
    min: Number(await figure.getAttribute('data-x-min')),
    max: Number(await figure.getAttribute('data-x-max')),
  };
}

/** Pixels of the chart's own line colour (axes and grid are drawn in other colours). */
function seriesPixels(page: Page, metric: string): Promise<number> {
  return page.locator(`figure[data-metric="${metric}"] canvas`).evaluate((element, key) => {
    const g = globalThis as unknown as {
      getComputedStyle(el: unknown): { getPropertyValue(name: string): string };
      document: { documentElement: unknown };
    };
    const hex = g.getComputedStyle(g.document.documentElement).getPropertyValue(`--chart-${key}`).trim();
    const [r, gr, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
    const canvas = element as unknown as DomCanvas;
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] === r && data[i + 1] === gr && data[i + 2] === b && data[i + 3] === 255) n++;
    }
    return n;
  }, metric);
}

async function openDisplay(page: Page): Promise<void> {
  const menu = page.getByTestId('display-settings');
  if ((await menu.getAttribute('open')) === null) await menu.locator('summary').click();
}

describeInBrowser('charts, display settings and the node list', () => {
  let hub: TestHub;
  let station: ApiNode;
  let nodes: ApiNode[];
  const pages = useGuardedPages();

  beforeAll(async () => {
    hub = await startUiHub();
    nodes = await simulatedNodes(hub);
    station = nodes.find((n) => n.long_name?.includes('Barometer'))!;
    // A plain sensor posts one reading over HTTP, with a token that carries the ingest role.
    const token = await subscriber(hub, 'sensor', { roles: ['ingest'], nodes: 'none' });
    const posted = await call(hub.baseUrl, 'POST', '/api/v1/ingest/readings', {
      token,
      body: { node_id: SENSOR, temperature_c: 21.5, pm25_ugm3: 12 },
    });
    expect(posted.status).toBe(202);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('spans the chart over the 7 days chosen when the node has only a day of history', async () => {
    const { page } = await pages.open();
    const asked: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/weather/history')) asked.push(r.url());
    });
    await page.goto(`${hub.baseUrl}/nodes/${station.node_id}?range=7d`);
    const span = await xSpan(page, 'temperature_c');
    const query = new URL(asked.at(-1)!).searchParams;
    expect(query.get('interval')).toBe('1h');
    expect(span.min).toBe(Date.parse(query.get('start')!) / 1000);
    expect(span.max).toBe(Date.parse(query.get('end')!) / 1000);
    expect(span.max - span.min).toBe(7 * DAY_S);
    // The simulator's history is one day: the data starts about six days into the axis.
    const { data } = await apiJson<{ data: Array<{ timestamp: string }> }>(
      hub,
      `/api/v1/weather/history?node_id=${encodeURIComponent(station.node_id)}&interval=1h&start=${query.get('start')}&end=${query.get('end')}`,
    );
    expect(Date.parse(data[0]!.timestamp) / 1000 - span.min).toBeGreaterThan(5.5 * DAY_S);
    await expect.poll(() => seriesPixels(page, 'temperature_c')).toBeGreaterThan(20);
  });

  it('shows a sensor’s one reading as a point on the chosen 24 h, and offers no message to it', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/nodes/${SENSOR}`);
    await expect.poll(() => page.locator('h1').innerText()).toContain(SENSOR);
    const span = await xSpan(page, 'temperature_c');
    expect(span.max - span.min).toBe(DAY_S);
    expect(Math.abs(span.max - Date.now() / 1000)).toBeLessThan(300);
    await expect.poll(() => seriesPixels(page, 'temperature_c')).toBeGreaterThan(4);
    await expect.poll(() => page.locator('.chart-summary').first().innerText()).toContain('21.5 °C');
    expect(await page.locator('h1 .chip-sensor').innerText()).toBe('sensor');
    expect(await page.getByText('Message this node').count()).toBe(0);
    expect(await page.getByTestId('sensor-note').count()).toBe(1);
  });

  it('lists a sensor known only from its readings, marked as a sensor, PM values named', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const item = page.locator(`li.node-item[data-node-id="${SENSOR}"]`);
    await expect.poll(() => item.count(), { timeout: 15_000 }).toBe(1);
    expect(await item.getAttribute('data-sensor')).toBe('true');
    expect(await item.locator('.chip-sensor').innerText()).toBe('sensor');
    expect(await item.locator('.node-summary').innerText()).toContain('PM2.5 12 µg/m³');
    // The mesh nodes are not marked.
    expect(await page.locator('li.node-item[data-sensor]').count()).toBe(1);
  });

  it('keeps every marker when zoomed out, showing crowded ones as dots whose labels do not overlap', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const placed = nodes.filter((n) => n.latitude !== undefined).length;
    const markers = page.locator('.node-marker');
    await expect.poll(() => markers.count(), { timeout: 15_000 }).toBe(placed);
    /** Pairs of labelled markers whose badges overlap, and how many markers are dots. */
    const crowding = () =>
      markers.evaluateAll((els) => {
        type Rect = { left: number; right: number; top: number; bottom: number };
        const shown = els
          .filter((el) => !el.classList.contains('node-marker-dot'))
          .map((el) => (el as unknown as { getBoundingClientRect(): Rect }).getBoundingClientRect());
        let overlapping = 0;
        for (let i = 0; i < shown.length; i++)
          for (let j = i + 1; j < shown.length; j++) {
            const [a, b] = [shown[i]!, shown[j]!];
            if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlapping++;
          }
        return { overlapping, dots: els.length - shown.length };
      });
    expect((await crowding()).overlapping).toBe(0);
    for (let i = 0; i < 5; i++) {
      await page.locator('.leaflet-control-zoom-out').click();
      // Measured once Leaflet's zoom animation (a CSS transform of every marker) is over.
      await expect.poll(() => page.locator('.leaflet-zoom-anim').count()).toBe(0);
    }
    await expect
      .poll(async () => {
        const { overlapping, dots } = await crowding();
        return overlapping === 0 && dots > 0;
      })
      .toBe(true);
    expect(await markers.count()).toBe(placed);
    // The hub's radio keeps its label.
    const hubMarker = page.locator('.node-marker-hub');
    expect(await hubMarker.evaluate((el) => el.classList.contains('node-marker-dot'))).toBe(false);
  });

  it('filters the node list by name, short name or id', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const items = page.locator('li.node-item');
    const all = nodes.length + 1; // and the sensor
    await expect.poll(() => items.count(), { timeout: 15_000 }).toBe(all);
    const search = page.getByTestId('node-search');
    const ids = () => items.evaluateAll((els) => els.map((el) => el.getAttribute('data-node-id')));
    await search.fill(station.short_name!.toLowerCase());
    await expect.poll(ids).toEqual([station.node_id]);
    await search.fill(station.node_id.slice(-5).toUpperCase());
    await expect.poll(ids).toEqual([station.node_id]);
    // A simulated node may have "Garden" in its name too: the search finds each of them.
    const named = nodes.filter((n) => `${n.long_name} ${n.short_name}`.toLowerCase().includes('gard'));
    await search.fill('GARD');
    await expect
      .poll(async () => (await ids()).sort())
      .toEqual([SENSOR, ...named.map((n) => n.node_id)].sort());
    expect(await page.getByTestId('node-count').innerText()).toBe(`${named.length + 1} of ${all}`);
    await search.fill('no such node');
    await expect.poll(() => page.getByTestId('no-search-match').count()).toBe(1);
    await search.fill('');
    await expect.poll(() => items.count()).toBe(all);
  });

  it('shows temperatures in °F once chosen, on the node page and its charts, and still after a reload', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/nodes/${SENSOR}`);
    const card = page.locator('.value-card[data-metric="temperature_c"] .value-number');
    await expect.poll(() => card.innerText()).toBe('21.5 °C');
    await openDisplay(page);
    await page.getByTestId('display-temperature').selectOption('f');
    const fahrenheit = displayMetrics({ ...DEFAULT_DISPLAY, temperature: 'f' }).find(
      (m) => m.key === 'temperature_c',
    )!;
    expect(formatMetric(fahrenheit, 21.5)).toBe('70.7 °F');
    await expect.poll(() => card.innerText()).toBe('70.7 °F');
    await expect
      .poll(() => page.locator('figure[data-metric="temperature_c"] figcaption').innerText())
      .toContain('°F');
    await page.reload();
    await expect.poll(() => card.innerText()).toBe('70.7 °F');
    // The map's list says the same.
    await page.goto(`${hub.baseUrl}/`);
    await expect
      .poll(() => page.locator(`li.node-item[data-node-id="${SENSOR}"] .node-summary`).innerText())
      .toContain('70.7 °F');
    await openDisplay(page);
    await page.getByTestId('display-temperature').selectOption('c');
    await expect
      .poll(() => page.locator(`li.node-item[data-node-id="${SENSOR}"] .node-summary`).innerText())
      .toContain('21.5 °C');
  });

  it('switches to the dark or light scheme beside the system’s, and keeps the choice after a reload', async () => {
    const { page } = await pages.open();
    await page.emulateMedia({ colorScheme: 'light' });
    await page.goto(`${hub.baseUrl}/`);
    const root = page.locator('html');
    const background = () =>
      root.evaluate(
        (el) =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
          ).getComputedStyle(el).backgroundColor,
      );
    await expect.poll(() => root.getAttribute('data-theme')).toBe('light');
    const light = await background();
    await openDisplay(page);
    await page.getByTestId('display-theme').selectOption('dark');
    await expect.poll(() => root.getAttribute('data-theme')).toBe('dark');
    expect(await background()).not.toBe(light);
    // The menu closes with Escape, like any menu.
    await page.keyboard.press('Escape');
    expect(await page.getByTestId('display-settings').getAttribute('open')).toBeNull();
    await page.reload();
    await expect.poll(() => root.getAttribute('data-theme')).toBe('dark');
    expect(await page.getByTestId('display-theme').inputValue()).toBe('dark');
    // Back to the system's: it follows the system again.
    await openDisplay(page);
    await page.getByTestId('display-theme').selectOption('auto');
    await expect.poll(() => root.getAttribute('data-theme')).toBe('light');
    await page.emulateMedia({ colorScheme: 'dark' });
    await expect.poll(() => root.getAttribute('data-theme')).toBe('dark');
  });
});
