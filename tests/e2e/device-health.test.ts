/**
 * Device health on the node page, in real Chromium against a real hub with a day of simulated
 * history: a node's battery, voltage and SNR charts drawn from its DEVICE_METRICS and the packets
 * the radio heard from it, its uptime as text, and on the hub's own node its airtime against the
 * budget.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { apiJson, startUiHub } from './helpers/hubs.js';

type Latest = {
  data: Array<{ node_id: string; battery_level?: number; snr?: number; noise_floor?: number }>;
};

describeInBrowser('device health on the node page', () => {
  const pages = useGuardedPages();
  let hub: TestHub;
  /** A node with battery and SNR, and the hub's own radio. */
  const ids = { node: '', radio: '' };

  beforeAll(async () => {
    hub = await startUiHub({ SIM_TELEMETRY_SECONDS: '5' });
    const latest = await waitFor(
      async () => {
        const { data } = await apiJson<Latest>(hub, '/api/v1/device-health/latest');
        const node = data.find((r) => r.battery_level !== undefined && r.snr !== undefined);
        const radio = data.find((r) => r.noise_floor !== undefined);
        return node && radio ? { node, radio } : undefined;
      },
      20_000,
      'a node with battery and SNR, and the radio’s LocalStats',
    );
    ids.node = latest.node.node_id;
    ids.radio = latest.radio.node_id;
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('charts battery, voltage and SNR over the day, and says how long the node has been up', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/nodes/${ids.node}`);
    const panel = page.getByTestId('device-health');
    for (const metric of ['battery_level', 'voltage', 'snr']) {
      const figure = panel.locator(`figure[data-metric="${metric}"]`);
      await expect.poll(() => figure.getAttribute('data-points'), { timeout: 15_000 }).toMatch(/^\d+$/);
      expect(Number(await figure.getAttribute('data-points'))).toBeGreaterThan(10);
      await expect.poll(() => figure.locator('.chart-summary').textContent()).toMatch(/^lowest .*highest/);
    }
    await expect
      .poll(() => panel.getByTestId('uptime').textContent(), { timeout: 10_000 })
      .toMatch(/^up \d+ (d|h|min|s)/);
    await screenshot(page, 'device-health-node');
  });

  it('shows the hub’s own airtime against its budget on the hub’s node page', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/nodes/${ids.radio}`);
    const airtime = page.getByTestId('airtime');
    await expect.poll(() => airtime.textContent(), { timeout: 15_000 }).toMatch(/of a 10 % budget/);
    expect(await airtime.textContent()).toMatch(/channel in use \d/);
    expect(await page.locator('meter.airtime-bar').getAttribute('max')).toBe('10');
  });
});
