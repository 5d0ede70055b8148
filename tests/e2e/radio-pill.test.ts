/**
 * The radio pill in real Chromium when the radio cannot be reached: it says so, and a tap (or
 * hover) tells where the hub looks for the radio (as the RADIO setting names it) and the last
 * error; /health says the same (a hub's reads are open, and /health always carried the radio's
 * address and last error).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { freePort } from '../helpers/hub.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startUiHub } from './helpers/hubs.js';

describeInBrowser('the radio pill', () => {
  let hub: TestHub;
  let radio: string;
  const pages = useGuardedPages();

  beforeAll(async () => {
    // Nothing listens there: every attempt is refused.
    radio = `tcp:127.0.0.1:${await freePort()}`;
    hub = await startUiHub({ RADIO: radio });
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('says where the radio is and why it is disconnected, on hover and on a tap', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const pill = page.getByTestId('radio-state');
    await expect.poll(() => pill.innerText(), { timeout: 15_000 }).toMatch(/Radio\s+disconnected/);
    await expect.poll(() => pill.getAttribute('title')).toMatch(/Last error: /);
    const title = (await pill.getAttribute('title')) ?? '';
    expect(title).toContain(`Radio: ${radio}`);
    expect(title).toMatch(/^Radio link disconnected/);

    // A tap opens the same, for touch screens and screen readers.
    expect(await pill.getAttribute('aria-expanded')).toBe('false');
    await pill.click();
    expect(await pill.getAttribute('aria-expanded')).toBe('true');
    const details = page.getByTestId('radio-details');
    const lines = await details.locator('p').allInnerTexts();
    expect(lines[0]).toBe('Radio link disconnected');
    expect(lines[1]).toBe(`Radio: ${radio}`);
    expect(lines[2]).toMatch(/^Last error: .*ECONNREFUSED/);
    await pill.click();
    expect(await details.count()).toBe(0);

    // The API says the same (503 while a required actor is down, 200 when only degraded).
    const body = (await (await fetch(`${hub.baseUrl}/health`)).json()) as {
      radio: { address?: string; lastError?: string };
    };
    expect(`tcp:${body.radio.address}`).toBe(radio);
    expect(body.radio.lastError).toMatch(/ECONNREFUSED/);
  });
});
