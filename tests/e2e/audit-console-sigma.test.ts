/**
 * A Sigma rule in the audit console, in real Chromium (issue 29 "Sigma detections"): a hub with
 * SIGMA_RULES_DIR and ALERTS_ENABLED whose events come from the loopback Microsoft fake. The
 * rule is listed with its file and without the edit, turn-off and delete buttons rules written
 * in the console have; its firing by a fetched event is in the alerts list under its name.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

const RULE = `title: Role granted
id: 7d3f6a52-1c1e-4f7e-a1d4-0b8e6f0c9a11
level: critical
logsource:
  product: azure
  service: auditlogs
detection:
  selection:
    properties.message|contains: member to role
  condition: selection
`;

// biome-ignore lint/suspicious/noExplicitAny: the test reads JSON bodies of many shapes
async function api(hub: TestHub, path: string, init?: RequestInit): Promise<any> {
  const res = await fetch(`${hub.baseUrl}${path}`, init);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

describeInBrowser('a Sigma rule in the audit console', () => {
  let fake: FakeMicrosoft;
  let hub: TestHub;
  let dir: string;
  const pages = useGuardedPages();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'meshhub-sigma-e2e-'));
    writeFileSync(join(dir, 'role-granted.yml'), RULE);
    fake = new FakeMicrosoft();
    await fake.start();
    hub = await startAuditUiHub(fake, {
      AUDIT_SOURCES: 'directory',
      ALERTS_ENABLED: 'true',
      SIGMA_RULES_DIR: dir,
    });
  });

  afterAll(async () => {
    await hub?.stop();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is listed read-only with its file, and its alert is in the alerts list', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/audit`);
    const nav = page.getByRole('navigation', { name: 'Audit console' });
    await nav.getByRole('link', { name: 'Rules' }).click();
    const item = page
      .getByTestId('rules')
      .locator('li')
      .filter({ has: page.getByRole('heading', { name: 'Sigma: Role granted critical' }) });
    await expect
      .poll(() => item.getByTestId('sigma-rule').textContent())
      .toBe('From the Sigma file role-granted.yml: read-only here (change the file and restart the hub).');
    expect(await item.getByRole('button').count()).toBe(0);

    fake.directoryAudits.push(
      directoryAudit(1, Date.now() - 60_000, { user: 'mallory@contoso.com', activity: 'Add member to role' }),
      directoryAudit(2, Date.now() - 30_000, { user: 'bob@contoso.com', activity: 'Add member to group' }),
    );
    await api(hub, '/api/fetch', { method: 'POST' });
    await waitFor(
      async () => ((await api(hub, '/api/alerts')).data.length === 1 ? true : undefined),
      20_000,
      'the alert',
    );
    await nav.getByRole('link', { name: 'Alerts' }).click();
    const row = page.locator('[data-testid="alerts"] tbody tr');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td[data-label="Rule"]').textContent()).toBe('Sigma: Role granted');
    expect(await row.locator('td[data-label="Severity"]').textContent()).toBe('critical');
    expect(await row.locator('td[data-label="Who"]').textContent()).toBe('mallory@contoso.com');
  });
});
