/**
 * Issue 29 in real Chromium against a real hub with PLUGINS=audit, its events collected from the
 * loopback Microsoft fake: open an event, pivot to its actor's timeline (the chart stacked by
 * service, the failures marked), open one of the actor's events there and pivot to the other
 * events from the same client IP. Every page fails its test on a console error.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit, managementRecord } from '../fakes/microsoft/fixtures.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

const MIN = 60_000;
const CAROL = 'carol@contoso.com';
/** Every Exchange record of the fake comes from this address (fixtures.ts). */
const EXCHANGE_IP = '134.170.188.221';

const rows = (page: Page) => page.getByTestId('audit-events').locator('tbody tr');

/** Carol in the directory and in Exchange (a failure in each), and two others; collected. */
async function timelineHub(now: number): Promise<{ fake: FakeMicrosoft; hub: TestHub }> {
  const fake = new FakeMicrosoft();
  await fake.start();
  fake.directoryAudits.push(
    directoryAudit(1, now - 10 * MIN, { user: CAROL, activity: 'Update user' }),
    directoryAudit(2, now - 11 * MIN, { user: CAROL, activity: 'Reset password', result: 'failure' }),
    directoryAudit(3, now - 12 * MIN, { user: 'erin@contoso.com', activity: 'Add user' }),
  );
  fake.publish(
    'Audit.Exchange',
    [
      managementRecord('Audit.Exchange', 1, now - 3 * MIN, { user: CAROL, operation: 'Send' }),
      managementRecord('Audit.Exchange', 2, now - 4 * MIN, { user: CAROL, result: 'Failed' }),
      managementRecord('Audit.Exchange', 3, now - 5 * MIN, { user: 'dave@contoso.com' }),
    ],
    now - MIN,
  );
  const hub = await startAuditUiHub(fake, { AUDIT_SOURCES: 'directory,exchange' });
  await fetch(`${hub.baseUrl}/api/fetch`, { method: 'POST' });
  await waitFor(
    async () => {
      const page = (await (await fetch(`${hub.baseUrl}/api/events?limit=50`)).json()) as { data: unknown[] };
      return page.data.length >= 6 || undefined;
    },
    20_000,
    'six events stored',
  );
  return { fake, hub };
}

describeInBrowser('audit actor timeline', () => {
  const now = Date.now();
  const pages = useGuardedPages();
  let started: { fake: FakeMicrosoft; hub: TestHub } | undefined;
  const baseUrl = () => started!.hub.baseUrl;
  beforeAll(async () => {
    started = await timelineHub(now);
  });
  afterAll(async () => {
    await started?.hub.stop();
    await started?.fake.stop();
  });

  it('pivots from an event to its actor’s timeline, then to the same client IP', async () => {
    const { page } = await pages.open();
    await page.goto(`${baseUrl()}/audit?actor=${encodeURIComponent(CAROL)}&operation=Send`);
    await expect.poll(() => rows(page).count()).toBe(1);
    await rows(page).first().click();
    const drawer = page.getByRole('dialog');
    const pivots = drawer.getByTestId('event-pivots');
    await expect
      .poll(() => pivots.getByRole('link').allTextContents())
      .toEqual(['This actor’s timeline', 'Same target', 'Same client IP']);
    await pivots.getByRole('link', { name: 'This actor’s timeline' }).click();

    // The timeline: carol's four events across two services, newest first, failures marked.
    await expect
      .poll(() => page.url())
      .toBe(`${baseUrl()}/audit/timeline?actor=${encodeURIComponent(CAROL)}`);
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe(`Timeline of ${CAROL}`);
    await expect.poll(() => rows(page).count()).toBe(4);
    expect(await rows(page).locator('td:nth-child(3)').allTextContents()).toEqual([
      'Send',
      'MailItemsAccessed',
      'Update user',
      'Reset password',
    ]);
    expect(await rows(page).locator('.outcome-failure').count()).toBe(2);
    expect(await page.getByTestId('timeline-totals').textContent()).toBe('4 events, 2 failed');
    const chart = page.getByTestId('timeline-chart');
    expect(await chart.getByRole('img').getAttribute('aria-label')).toContain('last 30 days');
    const today = new Date(now).toISOString().slice(0, 10);
    const bar = chart.locator(`g[data-day="${today}"]`);
    expect(
      await bar
        .locator('rect[data-service]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-service')).sort()),
    ).toEqual(['directory', 'exchange']);
    expect(await bar.locator('.timeline-failures').getAttribute('data-failures')).toBe('2');
    await screenshot(page, 'audit-timeline');

    // From one of carol's Exchange events, the other events from the same client IP.
    await rows(page).first().click();
    await drawer.getByTestId('event-pivots').getByRole('link', { name: 'Same client IP' }).click();
    await expect.poll(() => page.url()).toBe(`${baseUrl()}/audit?client_ip=${EXCHANGE_IP}&range=all`);
    await expect.poll(() => rows(page).count()).toBe(3);
    expect(await rows(page).locator('td:nth-child(5)').allTextContents()).toEqual([
      CAROL,
      CAROL,
      'dave@contoso.com',
    ]);
    expect(await page.getByTestId('search-summary').textContent()).toContain(`client IP ${EXCHANGE_IP}`);
  });
});
