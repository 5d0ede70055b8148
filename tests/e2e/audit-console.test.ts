/**
 * The audit console in real Chromium (issue 15) against a real hub with PLUGINS=audit whose
 * events come from the loopback Microsoft fake through the real collector: search with filters
 * in the URL, Prev/Next over the cursor, page size, outcome styling, new events announced; one
 * event's drawer (raw record, tags, comments); bulk tags; CSV and JSON export checked on disk;
 * source health with a failing source and "Fetch now"; the ask panel absent with AI off; the
 * auth button "Auth: OFF"; bad input shown next to its field; a phone-width layout. Every page
 * fails its test on a console error.
 */
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit, managementRecord } from '../fakes/microsoft/fixtures.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import type { BrowserWindow, DomElement } from './helpers/dom.js';
import { startAuditUiHub } from './helpers/hubs.js';

const MIN = 60_000;
const DIRECTORY_EVENTS = 120;
const CAROL_EVENTS = 12;

// biome-ignore lint/suspicious/noExplicitAny: the test reads JSON bodies of many shapes
async function api(hub: TestHub, path: string, init?: RequestInit): Promise<any> {
  const res = await fetch(`${hub.baseUrl}${path}`, init);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function fetchAndWait(hub: TestHub, total: number): Promise<void> {
  await api(hub, '/api/fetch', { method: 'POST' });
  await waitFor(
    async () => {
      const page = await api(hub, '/api/events?limit=500');
      return page.data.length >= total || undefined;
    },
    20_000,
    `${total} events stored`,
  );
}

const rows = (page: Page) => page.locator('[data-testid="audit-events"] tbody tr');

describeInBrowser('audit console', () => {
  let fake: FakeMicrosoft;
  let hub: TestHub;
  const pages = useGuardedPages();
  const now = Date.now();

  beforeAll(async () => {
    fake = new FakeMicrosoft();
    await fake.start();
    for (let i = 0; i < DIRECTORY_EVENTS; i++) {
      const carol = i < CAROL_EVENTS;
      fake.directoryAudits.push(
        directoryAudit(i + 1, now - (i + 2) * 5 * MIN, {
          user: carol ? 'carol@contoso.com' : `user${i % 7}@contoso.com`,
          result: i % 9 === 4 ? 'failure' : 'success',
          activity: i % 3 === 0 ? 'Update user' : 'Add member to group',
        }),
      );
    }
    // The blob became available a minute ago, as Microsoft's do (minutes after their events): a
    // blob created within the second the hub's first run lists content could fall past that
    // run's window end (whole seconds) and wait for the next run, which this test never starts.
    fake.publish(
      'Audit.Exchange',
      [
        managementRecord('Audit.Exchange', 1, now - 3 * MIN, {
          result: 'Succeeded',
          user: 'dave@contoso.com',
        }),
        managementRecord('Audit.Exchange', 2, now - 4 * MIN, { result: 'Failed', user: 'dave@contoso.com' }),
      ],
      now - MIN,
    );
    hub = await startAuditUiHub(fake, { AUDIT_SOURCES: 'directory,exchange' });
    await fetchAndWait(hub, DIRECTORY_EVENTS + 2);
  });

  afterAll(async () => {
    await hub?.stop();
    await fake?.stop();
  });

  it('searches with filters in the URL, pages over the cursor, styles outcomes, and announces new events', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit' }).click();
    await expect.poll(() => page.url()).toBe(`${hub.baseUrl}/audit`);
    await expect.poll(() => page.getByTestId('auth-button').textContent()).toBe('Auth: OFF');
    await expect.poll(() => rows(page).count()).toBe(50);
    // Newest first: the two Exchange events, "Succeeded" styled as success like "success".
    const first = rows(page).first();
    await expect.poll(() => first.locator('.outcome').textContent()).toBe('Succeeded');
    expect(await first.locator('.outcome').getAttribute('class')).toContain('outcome-success');
    expect(await rows(page).nth(1).locator('.outcome').getAttribute('class')).toContain('outcome-failure');
    expect(await rows(page).nth(2).locator('.outcome').textContent()).toBe('success');
    expect(await rows(page).nth(2).locator('.outcome').getAttribute('class')).toContain('outcome-success');
    await expect.poll(() => page.getByRole('button', { name: /Newer/ }).isDisabled()).toBe(true);

    // Older, older (the last page holds 22), and back.
    const firstIds = await rows(page).evaluateAll((trs) =>
      trs.map((tr) => (tr as unknown as DomElement).getAttribute('data-event-id')),
    );
    await page.getByRole('button', { name: /Older/ }).click();
    await expect.poll(() => page.url()).toContain('cursor=');
    await expect
      .poll(async () => (await rows(page).first().getAttribute('data-event-id')) !== firstIds[0])
      .toBe(true);
    await page.getByRole('button', { name: /Older/ }).click();
    await expect.poll(() => rows(page).count()).toBe(DIRECTORY_EVENTS + 2 - 100);
    await expect.poll(() => page.getByRole('button', { name: /Older/ }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: /Newer/ }).click();
    await page.getByRole('button', { name: /Newer/ }).click();
    await expect
      .poll(() =>
        rows(page).evaluateAll((trs) =>
          trs.map((tr) => (tr as unknown as DomElement).getAttribute('data-event-id')),
        ),
      )
      .toEqual(firstIds);

    // Page size.
    await page.getByLabel('Per page').selectOption('25');
    await expect.poll(() => rows(page).count()).toBe(25);
    expect(page.url()).toContain('limit=25');

    // Filters: a service, an actor, a result; the URL carries them and a reload keeps them.
    await page.getByText('Services: all').click();
    await page.getByLabel('directory').check();
    await page.getByLabel('Actor').fill('carol');
    await page.getByLabel('Result').fill('success');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.url()).toContain('actor=carol');
    expect(page.url()).toContain('services=directory');
    await expect.poll(() => rows(page).count()).toBe(CAROL_EVENTS - 1); // i=4 failed
    await page.reload();
    await expect.poll(() => rows(page).count()).toBe(CAROL_EVENTS - 1);
    expect(await page.getByLabel('Actor').inputValue()).toBe('carol');
    const actors = await rows(page).locator('td[data-label="Actor"]').allTextContents();
    expect(new Set(actors)).toEqual(new Set(['carol@contoso.com']));

    // A new event arrives: announced, the table stays as it is until asked.
    const before = await rows(page).count();
    fake.directoryAudits.push(directoryAudit(999, Date.now() - 1_000, { user: 'carol@contoso.com' }));
    await fetchAndWait(hub, DIRECTORY_EVENTS + 3);
    await page.evaluate("document.dispatchEvent(new Event('visibilitychange'))");
    await expect
      .poll(() => page.getByRole('status').filter({ hasText: 'new event' }).textContent())
      .toContain('1 new event since this page loaded');
    expect(await rows(page).count()).toBe(before);
    await page.getByRole('button', { name: 'Show them' }).click();
    await expect.poll(() => rows(page).count()).toBe(before + 1);

    // A custom range that ends before it starts: the hub's 400, next to "Until".
    guarded.expectFailedRequests(/\/api\/events\?/);
    await page.getByLabel('Time').selectOption('custom');
    await page.getByLabel('From').fill('2026-05-02T10:00');
    await page.getByLabel('Until').fill('2026-05-01T10:00');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('#f-end-error').textContent()).toBe('Must be after start.');
    expect(await page.getByLabel('Until').getAttribute('aria-invalid')).toBe('true');
  });

  it('opens one event in a drawer: fields, raw record, tags added and removed, a comment', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit?services=exchange`);
    await expect.poll(() => rows(page).count()).toBe(2);
    await rows(page).first().getByRole('button').focus();
    await page.keyboard.press('Enter');
    const drawer = page.getByRole('dialog');
    await expect
      .poll(() => drawer.getByRole('heading', { level: 2 }).textContent())
      .toBe('MailItemsAccessed');
    expect(page.url()).toMatch(/event=\d+/);
    await expect.poll(() => drawer.locator('dd').allTextContents()).toContain('dave@contoso.com');
    // The raw record: collapsed, then open with the source's own fields.
    expect(await drawer.locator('pre').isVisible()).toBe(false);
    await drawer.getByText('Raw record').click();
    expect(await drawer.locator('pre').textContent()).toContain('"Workload": "Exchange"');

    /** The event's tags as the drawer shows them (storedTags: as the API has them). */
    const chips = () => drawer.locator('.chips .chip').allTextContents();
    await drawer.getByLabel('Add a tag', { exact: true }).fill('reviewed');
    await drawer.getByLabel('Add a tag', { exact: true }).press('Enter');
    await expect.poll(chips).toEqual(['reviewed×']);
    const id = new URL(page.url()).searchParams.get('event')!;
    const storedTags = async () => (await api(hub, `/api/events/${id}`)).tags;
    await expect.poll(storedTags).toEqual(['reviewed']);
    // The table behind reloaded with the tag, and the keyboard stayed in the tag box.
    await expect.poll(() => rows(page).first().locator('.chip').allTextContents()).toEqual(['reviewed']);
    expect(
      await page.evaluate(() => (globalThis as unknown as BrowserWindow).document.activeElement?.id),
    ).toBe('event-tags');
    await drawer.getByLabel('Add a tag', { exact: true }).fill('suspicious');
    await drawer.getByLabel('Add a tag', { exact: true }).press('Enter');
    await expect.poll(storedTags).toEqual(['reviewed', 'suspicious']);
    await expect.poll(chips).toEqual(['reviewed×', 'suspicious×']);
    await drawer.getByRole('button', { name: 'Remove reviewed' }).click();
    await expect.poll(storedTags).toEqual(['suspicious']);
    // Quick edits, each before the server answered the one before: every one counts, in order.
    const tagBox = drawer.getByLabel('Add a tag', { exact: true });
    await tagBox.fill('quick-1');
    await tagBox.press('Enter');
    await tagBox.fill('quick-2');
    await tagBox.press('Enter');
    await drawer.getByRole('button', { name: 'Remove quick-1' }).click();
    await expect.poll(storedTags).toEqual(['suspicious', 'quick-2']);
    await expect.poll(chips).toEqual(['suspicious×', 'quick-2×']);
    await drawer.getByRole('button', { name: 'Remove quick-2' }).click();
    await expect.poll(storedTags).toEqual(['suspicious']);

    await drawer.getByLabel('Add a comment').fill('Checked with Dave: expected.');
    await drawer.getByRole('button', { name: 'Add comment' }).click();
    await expect
      .poll(() => drawer.locator('.comments li').first().textContent())
      .toMatch(/^anonymous.*Checked with Dave: expected\.$/);
    expect((await api(hub, `/api/events/${id}`)).comments[0].text).toBe('Checked with Dave: expected.');
    // No Explain with AI features off.
    expect(await drawer.getByRole('button', { name: 'Explain' }).count()).toBe(0);

    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(page.url()).not.toContain('event=');
    // The table shows the tag now.
    await expect.poll(() => rows(page).first().locator('.chip').allTextContents()).toEqual(['suspicious']);
  });

  it('bulk-tags what the filter matches, after saying how many and asking to confirm', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit?actor=carol&services=directory`);
    await expect.poll(() => rows(page).count()).toBe(CAROL_EVENTS + 1);
    await page.getByRole('button', { name: 'Tag all matching…' }).click();
    const dialog = page.getByRole('dialog');
    await expect
      .poll(() => dialog.getByTestId('bulk-count').textContent())
      .toBe(`${CAROL_EVENTS + 1} events match. At most 10,000 are tagged at once.`);
    await dialog.getByLabel('Tags', { exact: true }).fill('incident-7');
    await dialog.getByLabel('Tags', { exact: true }).press('Enter');
    await dialog.getByRole('button', { name: `Tag ${CAROL_EVENTS + 1} events…` }).click();
    await expect
      .poll(() => dialog.textContent())
      .toContain(`Add “incident-7” to ${CAROL_EVENTS + 1} events?`);
    await dialog.getByRole('button', { name: 'Yes, tag them' }).click();
    await expect
      .poll(() => dialog.getByTestId('bulk-result').textContent())
      .toContain(`Done: ${CAROL_EVENTS + 1} events tagged`);
    const tagged = await api(hub, '/api/events?include_tags=incident-7&limit=500');
    expect(tagged.data).toHaveLength(CAROL_EVENTS + 1);
    expect(new Set(tagged.data.map((e: { actor: string }) => e.actor))).toEqual(
      new Set(['carol@contoso.com']),
    );
    await dialog.getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => rows(page).first().locator('.chip').allTextContents()).toContain('incident-7');
  });

  it('exports the current filter as CSV and as JSON, named after the filter and the time', async () => {
    const guarded = await pages.open({ acceptDownloads: true });
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit?actor=carol&range=24h`);
    await expect.poll(() => rows(page).count()).toBe(CAROL_EVENTS + 1);

    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    expect(csv.suggestedFilename()).toMatch(
      /^audit-events_actor-carol_\d{4}-\d\d-\d\dT\d\d-\d\dZ_to_\d{4}-\d\d-\d\dT\d\d-\d\dZ\.csv$/,
    );
    const csvText = readFileSync((await csv.path())!, 'utf8');
    const lines = csvText.trimEnd().split('\r\n');
    expect(lines[0]).toMatch(/^id,timestamp,service,operation,result/);
    expect(lines).toHaveLength(CAROL_EVENTS + 2);
    expect(lines.slice(1).every((l) => l.includes('carol@contoso.com'))).toBe(true);

    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export JSON' }).click(),
    ]);
    expect(json.suggestedFilename()).toMatch(/^audit-events_actor-carol_.*\.json$/);
    const events = JSON.parse(readFileSync((await json.path())!, 'utf8')) as Array<{
      actor: string;
      tags: string[];
    }>;
    expect(events).toHaveLength(CAROL_EVENTS + 1);
    expect(events.every((e) => e.actor === 'carol@contoso.com' && e.tags.includes('incident-7'))).toBe(true);
  });

  it('shows each source’s health, a failing source with its error, and fetches on demand; no Ask without AI', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit/sources`);
    const directory = page.locator('[data-testid="source-health"] tr[data-source="directory"]');
    await expect.poll(() => directory.locator('td[data-label="Status"]').textContent()).toBe('OK');
    expect(await page.getByRole('link', { name: 'Ask' }).count()).toBe(0);

    fake.fail('directoryAudits', { status: 500 }, 50);
    await page.getByRole('button', { name: 'Fetch now' }).click();
    await expect
      .poll(() => page.getByTestId('fetch-status').textContent())
      .toMatch(/^Fetch started for directory, exchange\.$/);
    await expect
      .poll(() => directory.locator('td[data-label="Status"]').textContent(), { timeout: 20_000 })
      .toBe('Failing');
    expect(
      Number(await directory.locator('td[data-label="Failures in a row"]').textContent()),
    ).toBeGreaterThan(0);
    expect(await directory.locator('td[data-label="Error"]').textContent()).not.toBe('—');
    expect(await page.locator('tr[data-source="exchange"] td[data-label="Status"]').textContent()).toBe('OK');
    await screenshot(page, 'audit-sources');
  });

  it('fits a phone: one card per event, the drawer full width, no sideways scrolling', async () => {
    const guarded = await pages.open({ width: 390, height: 844 });
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit?services=exchange`);
    await expect.poll(() => rows(page).count()).toBe(2);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await rows(page).first().getByRole('button').click();
    const box = await page.getByRole('dialog').boundingBox();
    expect(box?.width).toBe(390);
    await screenshot(page, 'audit-phone');
  });
});
