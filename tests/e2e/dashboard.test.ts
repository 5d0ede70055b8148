/**
 * The dashboard in real Chromium against a real hub on the simulator: the live map of the
 * mesh, the list beside it, the header, live updates, the offline-tiles fallback and a phone.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import type { BrowserWindow, DomElement } from './helpers/dom.js';
import { type ApiNode, apiJson, simulatedNodes, startUiHub } from './helpers/hubs.js';

describeInBrowser('the dashboard', () => {
  let hub: TestHub;
  let nodes: ApiNode[];
  const pages = useGuardedPages();
  const positioned = () => nodes.filter((n) => n.latitude !== undefined && n.longitude !== undefined);

  beforeAll(async () => {
    hub = await startUiHub();
    // Six simulated sensor nodes (one without a position) and the hub's own radio.
    nodes = await simulatedNodes(hub);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('shows every simulated node with a position on the map, and the others beside it', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    const markers = page.locator('.node-marker');
    await expect.poll(() => markers.count(), { timeout: 15_000 }).toBe(positioned().length);
    const onMap = await markers.evaluateAll((els) =>
      els.map((el) => (el as unknown as DomElement).dataset.nodeId).sort(),
    );
    expect(onMap).toEqual(
      positioned()
        .map((n) => n.node_id)
        .sort(),
    );
    // Each marker is labelled with the node's short name.
    for (const node of positioned()) {
      await expect
        .poll(() => page.locator(`.node-marker[data-node-id="${node.node_id}"]`).innerText())
        .toBe(node.short_name);
    }

    const unplaced = nodes.filter((n) => n.latitude === undefined);
    expect(unplaced).toHaveLength(1);
    const listed = page.getByTestId('unplaced-nodes').locator('li');
    await expect
      .poll(() => listed.evaluateAll((els) => els.map((el) => (el as unknown as DomElement).dataset.nodeId)))
      .toEqual([unplaced[0]!.node_id]);
    await expect
      .poll(() => page.getByTestId('unplaced-nodes').innerText())
      .toContain(unplaced[0]!.long_name!);

    // The local tile file drew the background; nothing was fetched from the internet.
    await expect.poll(() => page.getByTestId('map').getAttribute('data-background')).toBe('tiles');
    expect(await page.getByTestId('tiles-unavailable').count()).toBe(0);
    expect(guarded.external).toEqual([]);
  });

  it('shows the radio link, the simulator and the hub’s version in the header', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    const { version } = await apiJson<{ version: string }>(hub, '/api/version');
    await expect.poll(() => page.getByTestId('radio-state').innerText()).toMatch(/Radio\s+connected/);
    expect(await page.getByTestId('radio-state').getAttribute('title')).toMatch(
      /^Radio link connected \(the built-in simulator\)\nRadio: tcp:127\.0\.0\.1:\d+$/,
    );
    await expect
      .poll(() => page.getByTestId('simulator-banner').innerText())
      .toMatch(/Simulator.*no radio attached/);
    await expect.poll(() => page.getByTestId('version').innerText()).toBe(`v${version}`);
  });

  it('shows a node’s latest readings on hover, opens them on click (or Enter) with a link to its page', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    const latest = await apiJson<{
      data: Array<{ node_id: string; temperature_c?: number; humidity_percent?: number }>;
    }>(hub, '/api/v1/weather/latest');
    const withBoth = latest.data.find(
      (r) =>
        r.temperature_c !== undefined &&
        r.humidity_percent !== undefined &&
        positioned().some((n) => n.node_id === r.node_id),
    )!;
    const node = nodes.find((n) => n.node_id === withBoth.node_id)!;
    await page.goto(`${hub.baseUrl}/`);
    const marker = page.locator(`.node-marker[data-node-id="${node.node_id}"]`);
    await marker.waitFor();

    await marker.hover();
    const tooltip = page.locator('.map-tooltip');
    await tooltip.waitFor();
    expect(await tooltip.innerText()).toContain(node.long_name);
    // The node's latest values as the hub has them now: the simulator may have sent a newer
    // reading since the list above was read, and the page shows it live (CI met that race).
    await expect
      .poll(async () => {
        const now = (
          await apiJson<{ data: Array<{ temperature_c?: number; humidity_percent?: number }> }>(
            hub,
            `/api/v1/weather/latest?node_id=${encodeURIComponent(node.node_id)}`,
          )
        ).data[0]!;
        const text = await tooltip.innerText();
        return (
          text.includes(`${now.temperature_c!.toFixed(1)} °C`) &&
          text.includes(`${Math.round(now.humidity_percent!)} %`)
        );
      })
      .toBe(true);

    await marker.click();
    const popup = page.locator('.map-popup');
    await popup.waitFor();
    expect(await popup.locator('h2').innerText()).toBe(node.long_name);
    expect(await popup.innerText()).toMatch(/\d+\.\d{5}° [NS], \d+\.\d{5}° [EW]/);
    await page.keyboard.press('Escape');
    await popup.waitFor({ state: 'detached' });

    // Keyboard: a marker takes focus and Enter opens the same readings.
    await marker.focus();
    await page.keyboard.press('Enter');
    await popup.waitFor();
    await popup.getByRole('link', { name: 'Open node page' }).click();
    await page.waitForURL(`${hub.baseUrl}/nodes/${node.node_id}`);
    await expect.poll(() => page.locator('h1').first().innerText()).toContain(node.long_name);
  });

  it('updates readings and nodes live, without reloading the page', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    const node = positioned().find((n) => n.node_id !== nodes.find((x) => x.short_name === 'HUB')?.node_id)!;
    const item = page.locator(`.node-item[data-node-id="${node.node_id}"]`);
    await item.waitFor();
    await page.evaluate(() => {
      (globalThis as unknown as BrowserWindow).stillTheSamePage = true;
    });
    // Wait for the live stream before telling the hub anything.
    await expect.poll(() => page.getByTestId('radio-state').innerText()).toMatch(/connected/);

    // A reading as the radio path stores it: through the bus (`readings.commit`), the writer and `reading.stored`.
    const at = Date.now();
    await hub.hub.bus.ask(
      'readings.commit',
      { source: 'http', readings: [{ nodeId: node.node_id, timestamp: at, temperatureC: 33.3 }] },
      { timeoutMs: 10_000 },
    );
    await expect.poll(() => item.innerText(), { timeout: 10_000 }).toContain('33.3 °C');
    await expect.poll(() => item.getAttribute('data-reading-at')).toBe(String(at));

    // A node heard for the first time appears on the map.
    hub.hub.bus.emit('node.updated', {
      nodeNum: 0x0badcafe,
      nodeId: '!0badcafe',
      shortName: 'NEW1',
      longName: 'New Sensor',
      latitude: 47.38,
      longitude: 8.53,
      lastHeard: Date.now(),
    });
    await page.locator('.node-marker[data-node-id="!0badcafe"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('.node-marker[data-node-id="!0badcafe"]').innerText()).toBe('NEW1');
    expect(await page.evaluate(() => (globalThis as unknown as BrowserWindow).stillTheSamePage)).toBe(true);
  });

  it('is usable on a 360-px-wide phone: nothing wider than the screen, map and list both reachable', async () => {
    const guarded = await pages.open({ width: 360, height: 740 });
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    await expect.poll(() => page.locator('.node-marker').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('map').getAttribute('data-background')).toBe('tiles');
    await screenshot(page, 'dashboard-360');
    const widths = await page.evaluate(() => {
      const { document } = globalThis as unknown as BrowserWindow;
      return {
        document: document.documentElement.scrollWidth,
        main: document.querySelector('main')!.scrollWidth,
      };
    });
    expect(widths.document).toBeLessThanOrEqual(360);
    expect(widths.main).toBeLessThanOrEqual(360);
    for (const name of ['Map', 'Chat'])
      await expect.poll(() => page.getByRole('link', { name, exact: true }).isVisible()).toBe(true);
    const lastItem = page.locator('.node-item').last();
    await lastItem.scrollIntoViewIfNeeded();
    expect(await lastItem.isVisible()).toBe(true);
    // Touch-sized targets for "show on map".
    const box = await page.locator('.node-item .icon-button').first().boundingBox();
    expect(box!.width).toBeGreaterThanOrEqual(44);
    expect(box!.height).toBeGreaterThanOrEqual(44);
  });

  it('gives every control an accessible name', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    await page.locator('.node-marker').first().waitFor();
    const unnamed = await page.evaluate(() => {
      const { document } = globalThis as unknown as BrowserWindow;
      return [...document.querySelectorAll('a[href], button, input, select, textarea, [role="button"]')]
        .filter((el) => {
          const label =
            el.getAttribute('aria-label') ??
            (el.id ? document.querySelector(`label[for="${el.id}"]`)?.textContent : null) ??
            el.getAttribute('title') ??
            el.innerText;
          return !label?.trim();
        })
        .map((el) => el.outerHTML.slice(0, 120));
    });
    expect(unnamed).toEqual([]);
    expect(await page.getAttribute('html', 'lang')).toBe('en');
  });
});

describeInBrowser('the dashboard without map tiles', () => {
  const pages = useGuardedPages();
  let hub: TestHub;

  beforeAll(async () => {
    // The default MAP_TILES (OpenStreetMap online) on a machine with no internet.
    hub = await startUiHub({ MAP_TILES: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png' });
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('still shows every node, on a plain background with coordinates, and says why', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/^https:\/\/tile\.openstreetmap\.org\//);
    const nodes = await waitFor(async () => {
      const { data } = await apiJson<{ data: ApiNode[] }>(hub, '/api/v1/nodes');
      return data.length >= 7 ? data : undefined;
    });
    const positioned = nodes.filter((n) => n.latitude !== undefined);
    await page.goto(`${hub.baseUrl}/`);
    await page.getByTestId('tiles-unavailable').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('tiles-unavailable').innerText()).toMatch(
      /No map background \(offline\?\)/,
    );
    expect(await page.getByTestId('map').getAttribute('data-background')).toBe('grid');
    await expect.poll(() => page.locator('.node-marker').count()).toBe(positioned.length);
    // The grid's labels give coordinates around the simulated mesh (47.38° N, 8.54° E).
    const labels = await page.locator('.graticule-label').allInnerTexts();
    expect(labels.some((l) => /^47\.\d+° N$/.test(l))).toBe(true);
    expect(labels.some((l) => /^8\.\d+° E$/.test(l))).toBe(true);
    // It did try the tile server (and only that), then stopped asking.
    expect(guarded.external.length).toBeGreaterThan(0);
    expect(guarded.external.every((u) => u.startsWith('https://tile.openstreetmap.org/'))).toBe(true);
    await screenshot(page, 'dashboard-offline-tiles');
    guarded.assertClean();
    await guarded.close();
  });
});
