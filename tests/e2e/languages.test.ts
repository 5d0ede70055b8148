/**
 * The UI's languages in real Chromium: a person picks Deutsch in the header's Display menu, and
 * the header and the pages speak German (a plural, a date written the German way); the choice
 * survives a reload. A browser whose language is Polish gets Polish the first time, unasked.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { type ApiNode, simulatedNodes, startUiHub } from './helpers/hubs.js';

describeInBrowser('languages', () => {
  const pages = useGuardedPages();
  let hub: TestHub;
  let station: ApiNode;

  beforeAll(async () => {
    hub = await startUiHub();
    const nodes = await simulatedNodes(hub);
    // The barometer profile sends readings every few seconds: its history has some.
    station = nodes.find((n) => n.long_name?.includes('Barometer'))!;
  });

  afterAll(async () => {
    await hub?.stop();
  });

  const navWords = (page: import('playwright-core').Page) =>
    page.locator('.site-header nav .nav-link').allInnerTexts();

  it('switches to German from the header picker, and keeps it after a reload', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const heard = page.locator(`.node-item[data-node-id="${station.node_id}"] .node-meta`);
    await expect.poll(() => heard.innerText(), { timeout: 15_000 }).toMatch(/^heard /);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    expect(await navWords(page)).toContain('Map');

    // The language is the first choice of the header's Display menu; the page changes at once.
    await page.getByTestId('display-settings').locator('summary').click();
    await page.getByTestId('language').selectOption('de');
    await expect.poll(() => heard.innerText()).toMatch(/^gehört /);
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    expect(await navWords(page)).toEqual(expect.arrayContaining(['Karte', 'Pakete']));
    await page.locator('.site-header nav .nav-link', { hasText: 'Pakete' }).click();
    await expect.poll(() => page.locator('h1').innerText()).toBe('Pakete');
    expect(await page.getByRole('button', { name: 'Anwenden' }).count()).toBe(1);

    await page.reload();
    await expect.poll(() => page.locator('h1').innerText()).toBe('Pakete');
    expect(await page.getByTestId('language').inputValue()).toBe('de');
    expect(await page.locator('html').getAttribute('lang')).toBe('de');

    // The node page: German words, the count of readings in its plural, dates as Germans write them.
    await page.goto(`${hub.baseUrl}/nodes/${station.node_id}`);
    await expect.poll(() => page.locator('#history-heading').innerText()).toBe('Verlauf');
    const range = page.locator('.history-range');
    await expect.poll(() => range.innerText(), { timeout: 15_000 }).toMatch(/· \d+ Messwerte?\b/);
    const text = await range.innerText();
    const count = Number(/· (\d+) Messwert/.exec(text)![1]);
    expect(text).toContain(count === 1 ? '· 1 Messwert' : `· ${count} Messwerte`);
    // `28. Nov. 2026, 14:05 – 29. Nov. 2026, 14:05` (de-DE: day first, a dot after it).
    expect(text).toMatch(
      /^\d{1,2}\. \S+ \d{4}, \d{2}:\d{2} – \d{1,2}\. \S+ \d{4}, \d{2}:\d{2}, jeder Messwert/,
    );
    expect(await page.locator('#latest-heading').innerText()).toBe('Aktuelle Werte');
  });

  it('speaks Polish the first time to a browser whose language is Polish', async () => {
    const { page } = await pages.open({ locale: 'pl-PL' });
    await page.goto(`${hub.baseUrl}/packets`);
    await expect.poll(() => page.locator('h1').innerText()).toBe('Pakiety');
    expect(await page.locator('html').getAttribute('lang')).toBe('pl');
    expect(await navWords(page)).toEqual(expect.arrayContaining(['Mapa', 'Czat', 'Pakiety']));
    expect(await page.getByTestId('language').inputValue()).toBe('pl');
  });
});
