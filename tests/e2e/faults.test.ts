/**
 * Faults as a user meets them: the hub restarts (or the Wi-Fi drops) under an open page. The
 * page says it is reconnecting, keeps what it shows, explains failed requests in plain words,
 * and recovers by itself when the hub is back, without a reload.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { freePort, waitFor } from '../helpers/hub.js';
import { describeInBrowser, launchBrowser, openPage, screenshot } from './helpers/browser.js';
import type { BrowserWindow } from './helpers/dom.js';
import { type ApiNode, apiJson, startUiHub } from './helpers/hubs.js';

describeInBrowser('when the hub goes away', () => {
  let browser: Browser;
  let hub: TestHub | undefined;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    [browser, hub] = await Promise.all([launchBrowser(), startUiHub({ HTTP_PORT: String(port) })]);
  });

  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('shows "reconnecting", explains failed requests, and recovers by itself when the hub restarts', async () => {
    const guarded = await openPage(browser);
    const { page } = guarded;
    // While the hub is down the browser logs its refused connections (API, stream, favicon): expected.
    guarded.expectFailedRequests(new RegExp(`^http://127\\.0\\.0\\.1:${port}/`));
    const nodes = await waitFor(async () => {
      const { data } = await apiJson<{ data: ApiNode[] }>(hub!, '/api/v1/nodes');
      return data.length >= 7 && data.every((n) => n.long_name) ? data : undefined;
    });
    const station = nodes.find((n) => n.long_name?.includes('Barometer'))!;
    await page.goto(`http://127.0.0.1:${port}/nodes/${station.node_id}`);
    await page.locator('figure[data-metric="temperature_c"] canvas').waitFor();
    await page.evaluate(() => {
      (globalThis as unknown as BrowserWindow).stillTheSamePage = true;
    });
    const firstStart = await page.evaluate(() => performance.now());
    expect(firstStart).toBeGreaterThan(0);

    await hub!.stop();
    hub = undefined;
    await page.getByTestId('reconnecting').waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('reconnecting').innerText()).toMatch(
      /Connection to the hub lost\. Reconnecting/,
    );
    expect(await page.getByTestId('radio-state').innerText()).toMatch(/unknown/);
    // What was on screen stays there.
    expect(await page.locator('.value-card').count()).toBe(3);

    // A request that cannot be answered is explained, with a way to retry.
    await page.locator('.segmented label', { hasText: '7 d' }).click();
    await expect
      .poll(() => page.locator('.history [role="alert"]').innerText())
      .toMatch(
        /The history could not be loaded\. The hub can't be reached\. Check your Wi-Fi or network connection\. It loads by itself once the hub is back\./,
      );
    await screenshot(page, 'reconnecting');

    hub = await startUiHub({ HTTP_PORT: String(port) });
    await page.getByTestId('reconnecting').waitFor({ state: 'detached', timeout: 30_000 });
    await expect
      .poll(() => page.getByTestId('radio-state').innerText(), { timeout: 15_000 })
      .toMatch(/connected/);
    // The failed history loads again by itself once the hub answers.
    await page.locator('figure[data-metric="temperature_c"] canvas').waitFor({ timeout: 15_000 });
    expect(await page.locator('.history-range').innerText()).toContain('hourly means');

    // Live again: a new reading shows on the same page, never reloaded.
    await hub.hub.bus.ask(
      'readings.commit',
      { source: 'http', readings: [{ nodeId: station.node_id, timestamp: Date.now(), temperatureC: -7.7 }] },
      { timeoutMs: 10_000 },
    );
    await expect
      .poll(() => page.locator('.value-card[data-metric="temperature_c"] .value-number').innerText(), {
        timeout: 10_000,
      })
      .toBe('-7.7 °C');
    expect(await page.evaluate(() => (globalThis as unknown as BrowserWindow).stillTheSamePage)).toBe(true);
    guarded.assertClean();
    await guarded.close();
  });
});
