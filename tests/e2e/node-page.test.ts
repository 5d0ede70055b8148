/**
 * A node's page in real Chromium: latest values with units, one chart per metric over the
 * chosen range with the interval that suits it (raw history followed across Link pages), the
 * CSV of what the charts show, and plain words for a range that cannot be shown.
 */
import { readFileSync } from 'node:fs';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { formatMetric } from '../../src/web/src/lib/format.js';
import { metricInfo } from '../../src/web/src/lib/metrics.js';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import type { DomCanvas } from './helpers/dom.js';
import { type ApiNode, apiJson, startUiHub } from './helpers/hubs.js';

type Reading = { node_id: string; timestamp: string } & Record<string, number | string>;

/** All history rows the API has for the query, following its Link header, as the page must. */
async function apiHistory(hub: TestHub, query: string): Promise<Reading[]> {
  const rows: Reading[] = [];
  let path: string | undefined = `/api/v1/weather/history?${query}&limit=10000`;
  while (path) {
    const res = await fetch(`${hub.baseUrl}${path}`);
    rows.push(...((await res.json()) as { data: Reading[] }).data);
    path = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return rows;
}

function historyRequests(page: Page): Request[] {
  const seen: Request[] = [];
  page.on('request', (r) => {
    if (r.url().includes('/api/v1/weather/history')) seen.push(r);
  });
  return seen;
}

/** Pixels the chart drew (a blank canvas has none). */
function drawnPixels(page: Page, metric: string): Promise<number> {
  return page.locator(`figure[data-metric="${metric}"] canvas`).evaluate((element) => {
    const canvas = element as unknown as DomCanvas;
    const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
    return n;
  });
}

describeInBrowser('a node’s page', () => {
  let hub: TestHub;
  let station: ApiNode;
  const pages = useGuardedPages();

  beforeAll(async () => {
    hub = await startUiHub();
    const nodes = await waitFor(async () => {
      const { data } = await apiJson<{ data: ApiNode[] }>(hub, '/api/v1/nodes');
      return data.length >= 7 && data.every((n) => n.long_name) ? data : undefined;
    });
    // The barometer profile sends temperature, humidity and pressure.
    station = nodes.find((n) => n.long_name?.includes('Barometer'))!;
    await waitFor(async () => {
      const { data } = await apiJson<{ data: Reading[] }>(
        hub,
        `/api/v1/weather/latest?node_id=${encodeURIComponent(station.node_id)}`,
      );
      return data[0]?.pressure_pa !== undefined;
    });
  });

  afterAll(async () => {
    await hub?.stop();
  });

  /** The station's page, asked for with its history requests recorded from the start. */
  async function openStation(): Promise<{ page: Page; requests: Request[] }> {
    const { page } = await pages.open();
    const requests = historyRequests(page);
    await page.goto(`${hub.baseUrl}/nodes/${station.node_id}`);
    return { page, requests };
  }

  it('shows the latest values with their units', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/nodes/${station.node_id}`);
    await expect.poll(() => page.locator('h1').innerText()).toContain(station.long_name);
    const card = (metric: string) => page.locator(`.value-card[data-metric="${metric}"] .value-number`);
    // The simulator keeps reporting: compare the page with the API's latest of the same moment,
    // read again on every poll, so a reading that lands in between cannot fail the test.
    const shown = async () => [
      await card('temperature_c').innerText(),
      await card('humidity_percent').innerText(),
      await card('pressure_pa').innerText(),
    ];
    const expected = async () => {
      const { data } = await apiJson<{ data: Reading[] }>(
        hub,
        `/api/v1/weather/latest?node_id=${encodeURIComponent(station.node_id)}`,
      );
      const latest = data[0]!;
      // The UI's own formatter (decimal rounding, half away from zero: -2.05 → -2.1, which
      // `toFixed` gets wrong for binary reasons); tests/web checks the formatter itself.
      return (['temperature_c', 'humidity_percent', 'pressure_pa'] as const).map((key) =>
        formatMetric(metricInfo(key), latest[key] as number),
      );
    };
    let last = '';
    await expect
      .poll(
        async () => {
          const [onPage, fromApi] = [JSON.stringify(await shown()), JSON.stringify(await expected())];
          last = `page ${onPage}, API ${fromApi}`;
          return onPage === fromApi;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(true)
      .catch((error: unknown) => {
        throw new Error(`${(error as Error).message}: ${last}`);
      });
    expect(await page.locator('.value-card').count()).toBe(3);
  });

  it('draws a chart of each metric over the last 24 h from raw readings, and downloads exactly that as CSV', async () => {
    const guarded = await pages.open({ acceptDownloads: true });
    const { page } = guarded;
    const requests = historyRequests(page);
    await page.goto(`${hub.baseUrl}/nodes/${station.node_id}`);
    for (const metric of ['temperature_c', 'humidity_percent', 'pressure_pa']) {
      await page.locator(`figure[data-metric="${metric}"] canvas`).waitFor();
      await expect.poll(() => drawnPixels(page, metric)).toBeGreaterThan(200);
    }
    expect(await page.locator('.history figure.chart').count()).toBe(3);
    const url = new URL(requests[0]!.url());
    expect(url.searchParams.get('interval')).toBe('raw');
    const span = Date.parse(url.searchParams.get('end')!) - Date.parse(url.searchParams.get('start')!);
    expect(span).toBe(24 * 3_600_000);

    const rows = await apiHistory(hub, url.searchParams.toString().replace(/&limit=\d+/, ''));
    expect(rows.length).toBeGreaterThan(200);
    await expect.poll(() => page.locator('.history-range').innerText()).toContain(`${rows.length} readings`);
    await screenshot(page, 'node-page');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('download-csv').click(),
    ]);
    expect(download.suggestedFilename()).toMatch(new RegExp(`^meshhub-${station.node_id}-.*-raw\\.csv$`));
    const lines = readFileSync((await download.path())!, 'utf8')
      .trimEnd()
      .split('\r\n');
    expect(lines[0]).toBe('timestamp,temperature_c,humidity_percent,pressure_hpa');
    // Live readings may have joined the chart since: the CSV holds at least what was fetched, in order.
    expect(lines.length - 1).toBeGreaterThanOrEqual(rows.length);
    for (const [i, row] of rows.slice(0, 50).entries()) {
      const [timestamp, temperature, humidity, pressure] = lines[i + 1]!.split(',');
      expect(timestamp).toBe(row.timestamp);
      expect(Number(temperature)).toBeCloseTo(row.temperature_c as number, 6);
      expect(Number(humidity)).toBeCloseTo(row.humidity_percent as number, 6);
      expect(Number(pressure)).toBeCloseTo((row.pressure_pa as number) / 100, 6);
    }
  });

  it('asks for hourly means over 7 and 30 days and daily means over a year', async () => {
    const { page, requests } = await openStation();
    await page.locator('figure[data-metric="temperature_c"] canvas').waitFor();
    for (const [label, interval, days, words] of [
      ['7 d', '1h', 7, 'hourly means'],
      ['30 d', '1h', 30, 'hourly means'],
      ['1 y', '1d', 365, 'daily means'],
      ['24 h', 'raw', 1, 'every reading'],
    ] as const) {
      const before = requests.length;
      await page.locator('.segmented label', { hasText: label }).click();
      await expect.poll(() => requests.length).toBeGreaterThan(before);
      const url = new URL(requests.at(-1)!.url());
      expect(url.searchParams.get('interval')).toBe(interval);
      expect(Date.parse(url.searchParams.get('end')!) - Date.parse(url.searchParams.get('start')!)).toBe(
        days * 86_400_000,
      );
      await expect.poll(() => page.locator('.history-range').innerText()).toContain(words);
      await page.locator('figure[data-metric="temperature_c"] canvas').waitFor();
      await expect.poll(() => drawnPixels(page, 'temperature_c')).toBeGreaterThan(50);
      expect(page.url()).toMatch(
        interval === 'raw' ? /\/nodes\/![0-9a-f]{8}$/ : new RegExp(`\\?range=${label.replace(' ', '')}$`),
      );
    }
  });

  it('takes a custom range, explains one that cannot be shown, and says when it is empty', async () => {
    const { page, requests } = await openStation();
    await page.locator('figure[data-metric="temperature_c"] canvas').waitFor();
    await page.locator('.segmented label', { hasText: 'Custom' }).click();
    const from = page.getByLabel('From', { exact: true });
    const to = page.getByLabel('To', { exact: true });
    await from.fill('2026-03-10T12:00');
    await to.fill('2026-03-09T12:00');
    const before = requests.length;
    await page.getByRole('button', { name: 'Show' }).click();
    await expect
      .poll(() => page.locator('.custom-range .form-error').innerText())
      .toBe('The end must be after the start.');
    expect(requests.length).toBe(before);

    // Three days: hourly means; long before the simulator's history: nothing, said in words.
    await to.fill('2020-01-04T00:00');
    await from.fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => requests.length).toBeGreaterThan(before);
    const url = new URL(requests.at(-1)!.url());
    expect(url.searchParams.get('interval')).toBe('1h');
    expect(Date.parse(url.searchParams.get('end')!) - Date.parse(url.searchParams.get('start')!)).toBe(
      3 * 86_400_000,
    );
    await expect
      .poll(() => page.getByTestId('no-history').innerText())
      .toBe('No readings from this node in this range.');
    expect(page.url()).toContain('start=');
  });

  it('follows the Link header through every page of raw history', async () => {
    // 12 000 more readings in the last 24 h: more than one page of 10 000.
    const now = Date.now();
    const extra = Array.from({ length: 12_000 }, (_, i) => ({
      nodeId: station.node_id,
      timestamp: now - 23 * 3_600_000 + i * 6_000 + 1_234,
      temperatureC: 10 + Math.sin(i / 500) * 5,
    }));
    await hub.hub.bus.ask('readings.commit', { source: 'http', readings: extra }, { timeoutMs: 20_000 });
    const since = new Date(now - 24 * 3_600_000).toISOString();
    const until = new Date(now + 60_000).toISOString();
    await waitFor(
      async () =>
        (await apiHistory(hub, `node_id=${encodeURIComponent(station.node_id)}&start=${since}&end=${until}`))
          .length > 12_000,
      20_000,
      'the extra readings to be stored',
    );

    const { page, requests } = await openStation();
    await page.locator('figure[data-metric="temperature_c"] canvas').waitFor({ timeout: 20_000 });
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(new URL(requests[1]!.url()).searchParams.get('cursor')).toBeTruthy();
    const first = new URL(requests[0]!.url()).searchParams;
    first.delete('limit');
    const rows = await apiHistory(hub, first.toString());
    expect(rows.length).toBeGreaterThan(12_000);
    await expect.poll(() => page.locator('.history-range').innerText()).toContain(`${rows.length} readings`);
  });

  it('says so when the node is unknown', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/nodes/!deadbeef`);
    await expect.poll(() => page.locator('h1').innerText()).toBe('Unknown node');
    expect(await page.locator('main').innerText()).toContain('No node !deadbeef is known to this hub.');
  });
});
