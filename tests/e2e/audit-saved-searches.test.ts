/**
 * Saved searches in the audit console, in real Chromium (issue 29): a hub with PLUGINS=audit whose
 * events come from the loopback Microsoft fake through the real collector. The current filters
 * are saved under a name; after a reload the saved search is open with its filters and events;
 * it opens again from the list and by its URL (`/audit?saved=<id>`); deleted, it leaves the list
 * and the filters stay on screen as plain filters. Every page fails its test on a console error.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

const MIN = 60_000;
const EVENTS = 10;
const ERIN_EVENTS = 3;

const rows = (page: Page) => page.locator('[data-testid="audit-events"] tbody tr');
const actors = (page: Page) => rows(page).locator('td[data-label="Actor"]').allTextContents();

/** A hub whose collector fetched the fake's events (erin's first), and a JSON getter on it. */
async function hubWithEvents() {
  const fake = new FakeMicrosoft();
  await fake.start();
  const now = Date.now();
  const user = (i: number) => (i < ERIN_EVENTS ? 'erin@contoso.com' : `user${i}@contoso.com`);
  fake.directoryAudits.push(
    ...Array.from({ length: EVENTS }, (_, i) =>
      directoryAudit(i + 1, now - (i + 2) * 10 * MIN, { user: user(i) }),
    ),
  );
  const hub = await startAuditUiHub(fake, { AUDIT_SOURCES: 'directory' });
  // biome-ignore lint/suspicious/noExplicitAny: the test reads JSON bodies of many shapes
  const get = async (path: string): Promise<any> => (await fetch(`${hub.baseUrl}${path}`)).json();
  expect((await fetch(`${hub.baseUrl}/api/fetch`, { method: 'POST' })).status).toBe(202);
  const stored = async () => ((await get('/api/events?limit=500')).data.length >= EVENTS ? true : undefined);
  await waitFor(stored, 20_000, `${EVENTS} events stored`);
  return { fake, hub, get };
}

describeInBrowser('audit console saved searches', () => {
  const pages = useGuardedPages();
  let started: Awaited<ReturnType<typeof hubWithEvents>> | undefined;
  beforeAll(async () => {
    started = await hubWithEvents();
  });
  afterAll(async () => {
    await started?.hub.stop();
    await started?.fake.stop();
  });

  it('saves the current filters, reopens them after a reload, from the list and by URL, and deletes them', async () => {
    const { hub, get } = started!;
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/audit`);
    await expect.poll(() => rows(page).count()).toBe(EVENTS);

    // Filter, then save the filters under a name.
    await page.getByLabel('Actor').fill('erin');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => rows(page).count()).toBe(ERIN_EVENTS);
    await page.getByText('Save search…').click();
    await page.getByLabel('Name').fill('Erin’s changes');
    await page.getByLabel('Who sees it').selectOption({ label: 'Only me' });
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await expect.poll(() => page.url()).toMatch(/[?&]saved=\d+/);
    const id = new URL(page.url()).searchParams.get('saved')!;
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Saved as' }).count()).toBe(1);
    const stored = await get(`/api/saved-searches/${id}`);
    expect(stored).toMatchObject({
      name: 'Erin’s changes',
      shared_with: null,
      filters: { actor: 'erin', last: '7d' },
    });

    // A reload opens it again: its name, its filters, its events.
    await page.reload();
    await expect
      .poll(() => page.getByTestId('search-summary').textContent())
      .toContain('Saved search: Erin’s changes');
    await expect.poll(() => rows(page).count()).toBe(ERIN_EVENTS);
    expect(await page.getByLabel('Actor').inputValue()).toBe('erin');
    expect(new Set(await actors(page))).toEqual(new Set(['erin@contoso.com']));

    // Back to every event, then open it from the list.
    await page.getByRole('button', { name: 'Clear' }).click();
    await expect.poll(() => rows(page).count()).toBe(EVENTS);
    expect(page.url()).not.toContain('saved=');
    await page.getByText('Saved searches (1)').click();
    await page.getByRole('link', { name: 'Erin’s changes' }).click();
    await expect.poll(() => page.url()).toContain(`saved=${id}`);
    await expect.poll(() => rows(page).count()).toBe(ERIN_EVENTS);
    await screenshot(page, 'audit-saved-search');

    // By URL, in a page of its own.
    const other = (await pages.open()).page;
    await other.goto(`${hub.baseUrl}/audit?saved=${id}`);
    await expect.poll(() => rows(other).count()).toBe(ERIN_EVENTS);
    expect(await other.getByLabel('Actor').inputValue()).toBe('erin');
    expect(new Set(await actors(other))).toEqual(new Set(['erin@contoso.com']));

    // Deleted: gone from the list; the filters stay as plain filters.
    await page.getByRole('button', { name: 'Delete the saved search Erin’s changes' }).click();
    await expect.poll(() => page.getByText('No saved searches yet.').count()).toBe(1);
    await expect.poll(() => page.url()).not.toContain('saved=');
    expect(page.url()).toContain('actor=erin');
    await expect.poll(() => rows(page).count()).toBe(ERIN_EVENTS);
    expect((await get('/api/saved-searches')).data).toEqual([]);
  });
});
