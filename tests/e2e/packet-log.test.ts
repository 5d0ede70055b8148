/**
 * The packet log page in real Chromium on the simulator: reached from the header, it lists the
 * packets the hub heard (as `GET /api/v1/packets` does, newest on top), a new one appears without
 * a reload, Pause holds the table still and counts what waits, and a node filter narrows it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { apiJson, startUiHub } from './helpers/hubs.js';

interface PacketItem {
  id: number;
  from: string;
  to: string;
  packet_id: number;
}

describeInBrowser('the packet log page', () => {
  let hub: TestHub;
  const pages = useGuardedPages();
  const newest = async () => (await apiJson<{ data: PacketItem[] }>(hub, '/api/v1/packets?limit=1')).data[0];

  beforeAll(async () => {
    // Telemetry every 2 s: new packets keep coming while the page is open.
    hub = await startUiHub({ SIM_NODES: '3', SIM_TELEMETRY_SECONDS: '2', SIM_BACKFILL: '1h' });
    await waitFor(newest, 15_000, 'a packet in the log');
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('lists the packets the hub heard, newest on top, and a new one appears live', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    await page.getByRole('link', { name: 'Packets' }).click();
    await expect.poll(() => page.url()).toMatch(/\/packets$/);
    const rows = page.getByTestId('packet-row');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.getByTestId('packet-stream-state').innerText()).toBe('Live');

    const top = Number(await rows.first().getAttribute('data-packet-id'));
    const before = await rows.count();
    // Without a reload, a packet heard now comes in on top.
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBeGreaterThan(before);
    await expect
      .poll(async () => Number(await rows.first().getAttribute('data-packet-id')), { timeout: 10_000 })
      .not.toBe(top);
    // The row on top is one the API lists among its newest, shown with its sender.
    const recent = (await apiJson<{ data: PacketItem[] }>(hub, '/api/v1/packets?limit=20')).data;
    const shownId = Number(await rows.first().getAttribute('data-packet-id'));
    const item = recent.find((p) => p.packet_id === shownId);
    expect(item).toBeDefined();
    expect(await rows.first().innerText()).toContain(item!.from);
    await screenshot(page, 'packet-log');
  });

  it('holds still while paused, counting what waits, and catches up on Resume', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/packets`);
    const rows = page.getByTestId('packet-row');
    await expect
      .poll(() => page.getByTestId('packet-stream-state').innerText(), { timeout: 10_000 })
      .toBe('Live');
    await page.getByRole('button', { name: 'Pause' }).click();
    const held = await rows.count();
    const heldTop = await rows.first().getAttribute('data-packet-id');
    await expect
      .poll(() => page.getByTestId('packet-stream-state').innerText(), { timeout: 15_000 })
      .toMatch(/^Paused · \d+ new$/);
    expect(await rows.count()).toBe(held);
    expect(await rows.first().getAttribute('data-packet-id')).toBe(heldTop);
    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => page.getByTestId('packet-stream-state').innerText()).toBe('Live');
    await expect
      .poll(() => rows.first().getAttribute('data-packet-id'), { timeout: 10_000 })
      .not.toBe(heldTop);
  });

  it('narrows the table to one node with the filter', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/packets`);
    const node = (await newest())!.from;
    await page.getByLabel('Node').fill(node);
    await page.getByRole('button', { name: 'Apply' }).click();
    const rows = page.getByTestId('packet-row');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await expect
      .poll(async () => (await rows.allInnerTexts()).every((text) => text.includes(node)))
      .toBe(true);
  });
});
