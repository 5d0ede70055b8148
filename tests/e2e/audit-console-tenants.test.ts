/**
 * Issue 29 in real Chromium: a hub holding two tenants' events offers a Tenant filter in the
 * audit search, shows the tenant in the table, and the filter narrows the events (and the URL
 * keeps it). Events are stored through the writer as the collector stores them.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditStore } from '../../plugins/audit/store/audit-store.js';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import type { TestHub } from '../helpers/hub.js';
import { seed } from '../plugins/audit/helpers.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

const rows = (page: Page) => page.locator('[data-testid="audit-events"] tbody tr');

describeInBrowser('audit console with several tenants', () => {
  const fake = new FakeMicrosoft();
  const pages = useGuardedPages();
  let hub: TestHub | undefined;
  const baseUrl = () => hub!.baseUrl;

  beforeAll(async () => {
    await fake.start();
    const started = await startAuditUiHub(fake, { AUDIT_SOURCES: 'directory' });
    hub = started;
    const now = Date.now();
    seed(
      new AuditStore(() => started.hub.store.db).repos(),
      ['contoso', 'fabrikam'].flatMap((tenant, k) =>
        Array.from({ length: 3 }, (_, i) => ({
          tenant,
          source: 'directory' as const,
          at: now - (k * 3 + i + 1) * 60_000,
          actor: `user${i}@${tenant}.com`,
        })),
      ),
    );
  });
  afterAll(async () => {
    await hub?.stop();
    await fake.stop();
  });

  it('filters the search by tenant and shows each event’s tenant', async () => {
    const { page } = await pages.open();
    await page.goto(`${baseUrl()}/audit`);
    await expect.poll(() => rows(page).count()).toBe(6);
    const table = page.getByTestId('audit-events');
    await expect.poll(() => table.getByRole('columnheader', { name: 'Tenant' }).count()).toBe(1);

    await page.getByLabel('Tenant').selectOption('fabrikam');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.url()).toContain('tenants=fabrikam');
    await expect.poll(() => rows(page).count()).toBe(3);
    const tenants = await rows(page).locator('td[data-label="Tenant"]').allTextContents();
    expect(tenants).toEqual(['fabrikam', 'fabrikam', 'fabrikam']);
  });
});
