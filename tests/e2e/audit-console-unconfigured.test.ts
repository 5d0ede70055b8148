/**
 * The audit console on a hub without collection credentials (no AUDIT_TENANT_ID,
 * AUDIT_CLIENT_ID, AUDIT_CLIENT_SECRET), in real Chromium: the search's empty state and the
 * Sources page say collection is not configured and which settings to set, and "Fetch now" is
 * disabled with that reason under it, so nobody is offered a fetch that can only be refused.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { QUIET_ENV } from '../plugins/audit/helpers.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startUiHub } from './helpers/hubs.js';

const NOT_CONFIGURED =
  'Collection is not configured: set AUDIT_TENANT_ID, AUDIT_CLIENT_ID and AUDIT_CLIENT_SECRET.';

describeInBrowser('audit console without collection credentials', () => {
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    hub = await startUiHub({ PLUGINS: 'audit', ...QUIET_ENV });
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it('says collection is not configured in the empty search and disables "Fetch now" with the reason', async () => {
    const { page } = await pages.open();
    const fetches: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/fetch')) fetches.push(r.method());
    });

    await page.goto(`${hub.baseUrl}/audit`);
    await expect
      .poll(() => page.locator('.audit-empty').textContent())
      .toBe(`${NOT_CONFIGURED} No stored events match these filters.`);

    await page.goto(`${hub.baseUrl}/audit/sources`);
    const fetchNow = page.getByRole('button', { name: 'Fetch now' });
    const status = page.getByTestId('fetch-status');
    await expect
      .poll(() => status.textContent())
      .toBe(`${NOT_CONFIGURED} Search still works on the events already stored.`);
    expect(await fetchNow.isDisabled()).toBe(true);
    expect(await fetchNow.getAttribute('aria-describedby')).toBe('fetch-status');
    await fetchNow.click({ force: true });
    expect(fetches).toEqual([]);
    expect(await status.textContent()).toBe(
      `${NOT_CONFIGURED} Search still works on the events already stored.`,
    );
  });
});
