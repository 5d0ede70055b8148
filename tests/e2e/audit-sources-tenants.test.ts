/**
 * Issue 29, several tenants: the Sources page of a hub collecting two Microsoft 365 tenants
 * (two fakes behind one set of endpoints), one of them throttled for an hour. The page shows one
 * table per tenant, under its name: the healthy tenant OK, the throttled one with its error and
 * its failures in a row.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { startTwoTenants, type TwoTenants } from '../fakes/microsoft/tenant-router.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { QUIET_ENV } from '../plugins/audit/helpers.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { startUiHub } from './helpers/hubs.js';

describeInBrowser('audit sources of several tenants', () => {
  let tenants: TwoTenants;
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    tenants = await startTwoTenants();
    const { contoso, fabrikam } = tenants;
    for (let i = 0; i < 5; i++) {
      contoso.directoryAudits.push(directoryAudit(i, Date.now() - 3_600_000 + i * 1000));
      fabrikam.directoryAudits.push(directoryAudit(i, Date.now() - 3_600_000 + i * 1000));
    }
    fabrikam.fail('directoryAudits', { status: 429, retryAfter: '3600' });
    hub = await startUiHub({
      PLUGINS: 'audit',
      ...QUIET_ENV,
      ...tenants.env,
      AUDIT_SOURCES: 'directory',
      AUDIT_FETCH_ON_START: 'true',
    });
    await waitFor(
      async () => {
        const res = await fetch(`${hub.baseUrl}/api/source-health`);
        const body = (await res.json()) as { data: Array<{ status: string }> };
        return body.data.length === 2 &&
          body.data.every((s) => s.status !== 'running' && s.status !== 'pending')
          ? true
          : undefined;
      },
      20_000,
      'both tenants fetched once',
    );
  });
  afterAll(async () => {
    await hub?.stop();
    await tenants?.stop();
  });

  it('shows each tenant’s sources under its name: one OK, the other throttled with its error', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/audit/sources`);
    const group = (tenant: string) => page.locator(`.audit-tenant[data-tenant="${tenant}"]`);
    await expect.poll(() => group('contoso').locator('h2').textContent()).toBe('Tenant contoso');
    expect(await group('fabrikam').locator('h2').textContent()).toBe('Tenant fabrikam');
    const contosoRow = page.locator('[data-testid="source-health-contoso"] tr[data-source="directory"]');
    const fabrikamRow = page.locator('[data-testid="source-health-fabrikam"] tr[data-source="directory"]');
    expect(await contosoRow.locator('.pill').textContent()).toBe('OK');
    expect(await contosoRow.locator('.source-error').textContent()).toBe('—');
    expect(await fabrikamRow.locator('.pill').textContent()).toBe('Throttled');
    expect(await fabrikamRow.locator('.source-error').textContent()).toMatch(/429/);
    expect(await fabrikamRow.locator('td').nth(3).textContent()).toBe('1');
    await screenshot(page, 'audit-sources-tenants');
  });
});
