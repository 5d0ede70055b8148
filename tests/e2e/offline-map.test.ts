/**
 * The map with no internet at all: the browser reaches only the hub (every other request is
 * aborted), MAP_TILES is the default online OpenStreetMap URL that cannot load, and the map
 * still shows land, lakes, borders and place names from the app's own world layer, under the
 * nodes.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Box, overlaps } from '../../src/web/src/dashboard/map-labels.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import type { DomElement } from './helpers/dom.js';
import { simulatedNodes, startUiHub } from './helpers/hubs.js';

describeInBrowser('the map with no internet', () => {
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    // The default MAP_TILES: OpenStreetMap's online tiles, which this browser cannot reach.
    hub = await startUiHub({ MAP_TILES: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png' });
    await simulatedNodes(hub);
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('draws land, lakes, borders and place names of its own beneath the nodes', async () => {
    const guarded = await pages.open();
    guarded.expectFailedRequests(/^https:\/\/tile\.openstreetmap\.org\//);
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    const notice = page.getByTestId('tiles-unavailable');
    await expect.poll(() => notice.count(), { timeout: 15_000 }).toBe(1);
    expect(await notice.innerText()).toMatch(/built-in world outline/);
    await expect.poll(() => page.locator('.node-marker').count(), { timeout: 15_000 }).toBeGreaterThan(0);

    // Around the simulated mesh (Zürich): land under the nodes, and the city's name.
    const land = page.locator('path.world-land');
    await expect.poll(() => land.count(), { timeout: 15_000 }).toBeGreaterThan(0);
    const names = () => page.locator('.world-place-name').allInnerTexts();
    await expect.poll(names).toContain('Zürich');

    // Zoomed out to the region: country borders, and more towns, none over another.
    for (let i = 0; i < 6; i++) {
      await page.locator('.leaflet-control-zoom-out').click();
      await page.waitForTimeout(300);
    }
    const borders = page.locator('path.world-border');
    await expect.poll(() => borders.count()).toBeGreaterThan(0);
    const drawn = await borders.first().getAttribute('d');
    expect(drawn?.length ?? 0).toBeGreaterThan(200);
    // The large lakes nearby (Constance, Geneva), in the sea's colour.
    const lakes = await page
      .locator('path.world-lake')
      .evaluateAll((els) => els.map((el) => (el as unknown as DomElement).getAttribute('d') ?? ''));
    expect(lakes.some((d) => d.length > 50)).toBe(true);
    await expect.poll(async () => (await names()).length).toBeGreaterThan(3);
    const boxes = await page.locator('.world-place-name').evaluateAll((els) =>
      els
        .filter(
          (el) =>
            (el as unknown as DomElement & { style: { visibility: string } }).style.visibility !== 'hidden',
        )
        .map((el) => {
          const r = (el as unknown as { getBoundingClientRect(): Box }).getBoundingClientRect();
          return { left: r.left, right: r.right, top: r.top, bottom: r.bottom };
        }),
    );
    const shown = boxes.filter((b) => b.right > b.left);
    expect(shown.length).toBeGreaterThan(3);
    for (const [i, a] of shown.entries()) {
      for (const b of shown.slice(i + 1)) expect(overlaps(a, b)).toBe(false);
    }
    await screenshot(page, 'offline-map');

    // Everything came from the hub: the only requests that tried to leave were the tiles.
    expect(guarded.external.length).toBeGreaterThan(0);
    expect(guarded.external.every((u) => u.startsWith('https://tile.openstreetmap.org/'))).toBe(true);
  });

  it('with MAP_TILES=off asks nobody for tiles, says nothing is missing, and shows the world layer', async () => {
    const off = await startTestHub({ SIM_BACKFILL: '1h', MAP_TILES: 'off' });
    try {
      const guarded = await pages.open();
      const { page } = guarded;
      await page.goto(`${off.baseUrl}/`);
      await expect.poll(() => page.getByTestId('map').getAttribute('data-background')).toBe('world');
      await expect
        .poll(() => page.locator('path.world-land').count(), { timeout: 15_000 })
        .toBeGreaterThan(0);
      await expect.poll(() => page.locator('.world-place-name').count()).toBeGreaterThan(0);
      expect(await page.getByTestId('tiles-unavailable').count()).toBe(0);
      expect(guarded.external).toEqual([]);
    } finally {
      await off.stop();
    }
  });
});
