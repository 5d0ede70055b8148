/**
 * Alerts and rules in the audit console, in real Chromium (issue 15 "Alerts and rules"): a hub
 * with PLUGINS=audit and ALERTS_ENABLED whose events come from the loopback Microsoft fake
 * through the real collector. A rule made in the form is listed in words and stored as the
 * condition the form showed; a matching event fetched from the fake fires it, and the firing is
 * in the alerts list and opens its event. The form holds back what the hub would refuse (no
 * name, equal from and until, no days, a count of 0, a window over 7 days), shows the hub's own
 * 409 for a taken name beside the name, edits, turns off and deletes. Every page fails its test
 * on a console error.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

// biome-ignore lint/suspicious/noExplicitAny: the test reads JSON bodies of many shapes
async function api(hub: TestHub, path: string, init?: RequestInit): Promise<any> {
  const res = await fetch(`${hub.baseUrl}${path}`, init);
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

async function fetchAndWait(hub: TestHub, total: number): Promise<void> {
  await api(hub, '/api/fetch', { method: 'POST' });
  await waitFor(
    async () => ((await api(hub, '/api/events?limit=500')).data.length >= total ? true : undefined),
    20_000,
    `${total} events stored`,
  );
}

const ruleItem = (page: Page, name: string) =>
  page
    .getByTestId('rules')
    .locator('li')
    .filter({ has: page.getByRole('heading', { name }) });

describeInBrowser('audit console alerts and rules', () => {
  let fake: FakeMicrosoft;
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    fake = new FakeMicrosoft();
    await fake.start();
    const now = Date.now();
    for (let i = 0; i < 4; i++)
      fake.directoryAudits.push(directoryAudit(i + 1, now - (i + 2) * 600_000, { user: 'erin@contoso.com' }));
    hub = await startAuditUiHub(fake, {
      AUDIT_SOURCES: 'directory',
      ALERTS_ENABLED: 'true',
      ALERT_TIME_ZONE: 'Europe/Berlin',
    });
    await fetchAndWait(hub, 4);
  });

  afterAll(async () => {
    await hub?.stop();
    await fake?.stop();
  });

  it('creates a rule in the form, lists it, and shows its firing by a fetched event in the alerts list', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit`);
    await page
      .getByRole('navigation', { name: 'Audit console' })
      .getByRole('link', { name: 'Rules' })
      .click();
    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByRole('form', { name: 'New rule' });
    await form.getByLabel('Name').fill('Failed role assignment');
    await form.getByLabel('Severity').selectOption('high');
    await form.getByLabel('Directory (Entra ID)').check();
    await form.getByLabel('Operation (any of; none: any)').fill('role');
    await form.getByLabel('Operation (any of; none: any)').press('Enter');
    await form.getByLabel('failure').check();
    await form.getByRole('button', { name: 'Create rule' }).click();

    await expect
      .poll(() => page.getByTestId('rules-notice').textContent())
      .toBe('“Failed role assignment” was saved.');
    const item = ruleItem(page, 'Failed role assignment high');
    await expect
      .poll(() => item.locator('.rule-words').textContent())
      .toBe(
        'Directory (Entra ID); operation contains “role”; result failure; every matching event (at most one alert an hour per actor)',
      );
    const stored = (await api(hub, '/api/rules')).data.find(
      (r: { name: string }) => r.name === 'Failed role assignment',
    );
    expect(stored).toMatchObject({
      severity: 'high',
      enabled: true,
      condition: { services: ['directory'], operation: { contains: ['role'] }, result: ['failure'] },
    });

    // A matching event (and one that does not match) arrive from the fake: the rule fires once.
    const now = Date.now();
    fake.directoryAudits.push(
      directoryAudit(50, now - 2_000, {
        user: 'mallory@contoso.com',
        activity: 'Add member to role',
        result: 'failure',
      }),
      directoryAudit(51, now - 1_000, { user: 'mallory@contoso.com', activity: 'Add member to role' }),
    );
    await fetchAndWait(hub, 6);
    await waitFor(
      async () => ((await api(hub, '/api/alerts')).data.length === 1 ? true : undefined),
      10_000,
      'the alert',
    );

    await page
      .getByRole('navigation', { name: 'Audit console' })
      .getByRole('link', { name: 'Alerts' })
      .click();
    const row = page.locator('[data-testid="alerts"] tbody tr');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td[data-label="Rule"]').textContent()).toBe('Failed role assignment');
    expect(await row.locator('td[data-label="Severity"]').textContent()).toBe('high');
    expect(await row.locator('td[data-label="Who"]').textContent()).toBe('mallory@contoso.com');
    await row.getByRole('button', { name: 'Add member to role' }).click();
    const drawer = page.getByRole('dialog');
    await expect
      .poll(() => drawer.getByRole('heading', { level: 2 }).textContent())
      .toBe('Add member to role');
    await expect.poll(() => drawer.locator('dd').allTextContents()).toContain('mallory@contoso.com');
  });

  it('holds back what the hub would refuse, shows the hub’s 409 for a taken name beside the name, edits, turns off and deletes', async () => {
    await api(hub, '/api/rules', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Mail forwarding', condition: { operation: { contains: ['forward'] } } }),
    });
    const rulesBefore = (await api(hub, '/api/rules')).data.length;
    const guarded = await pages.open();
    const { page } = guarded;
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/rules') && r.method() === 'POST') sent.push(r.postData() ?? '');
    });
    await page.goto(`${hub.baseUrl}/audit/rules`);
    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByRole('form', { name: 'New rule' });

    // No name: said beside it after a try, nothing sent.
    await form.getByRole('button', { name: 'Create rule' }).click();
    await expect.poll(() => form.locator('#r-name-error').textContent()).toBe('Give the rule a name.');
    expect(await form.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');

    // Times: from and until equal; then no day and no times.
    await form.getByLabel('Only at certain times').check();
    expect(await form.getByLabel('Time zone').inputValue()).toBe('');
    expect(await form.getByLabel('Time zone').locator('option').first().textContent()).toBe(
      'The hub’s (Europe/Berlin)',
    );
    await form.getByLabel('From (empty: start of day)').fill('09:00');
    await form.getByLabel('Until (empty: end of day)').fill('09:00');
    await expect.poll(() => form.locator('#r-to-error').textContent()).toBe('Must differ from “From”.');
    for (const day of ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])
      await form.getByLabel(day, { exact: true }).uncheck();
    await form.getByLabel('From (empty: start of day)').fill('');
    await form.getByLabel('Until (empty: end of day)').fill('');
    await expect
      .poll(() => form.locator('#r-days-error').textContent())
      .toBe('Choose at least one day, or a from or until time.');

    // Threshold: a count of 0, a window of 8 days.
    await form.getByLabel('Only after several events').check();
    await form.getByLabel('At least this many events').fill('0');
    await form.getByLabel('Within').fill('8');
    await form.getByLabel('Unit of the window').selectOption('d');
    await expect
      .poll(() => form.locator('#r-count-error').textContent())
      .toBe('A whole number from 1 to 100,000.');
    await expect
      .poll(() => form.locator('#r-window-error').textContent())
      .toBe('A whole number; the window is 1 second to 7 days.');
    await form.getByRole('button', { name: 'Create rule' }).click();
    expect(sent).toEqual([]);

    // Put right; the name is another rule's (in other case): the hub's 409, beside the name.
    for (const day of ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])
      await form.getByLabel(day, { exact: true }).check();
    await form.getByLabel('From (empty: start of day)').fill('08:00');
    await form.getByLabel('Until (empty: end of day)').fill('18:00');
    await form.getByLabel('Time zone').selectOption('America/New_York');
    await form.getByLabel('At least this many events').fill('5');
    await form.getByLabel('Within').fill('10');
    await form.getByLabel('Unit of the window').selectOption('m');
    await form.getByLabel('Name').fill('mail FORWARDING');
    guarded.expectFailedRequests(/\/api\/rules$/);
    await form.getByRole('button', { name: 'Create rule' }).click();
    await expect
      .poll(() => form.locator('#r-name-error').textContent())
      .toBe('Another rule is called "mail FORWARDING" (names are unique, case-insensitive).');
    expect(sent).toHaveLength(1);
    expect((await api(hub, '/api/rules')).data).toHaveLength(rulesBefore);

    await form.getByLabel('Name').fill('Many changes after hours');
    await form.getByRole('button', { name: 'Create rule' }).click();
    const item = ruleItem(page, 'Many changes after hours medium');
    await expect
      .poll(() => item.locator('.rule-words').textContent())
      .toBe(
        'Any event; outside Mon, Tue, Wed, Thu, Fri 08:00–18:00 (America/New_York); 5 events in 10m per actor',
      );
    const stored = (await api(hub, '/api/rules')).data.find(
      (r: { name: string }) => r.name === 'Many changes after hours',
    );
    expect(stored.condition).toEqual({
      time: {
        days: ['mon', 'tue', 'wed', 'thu', 'fri'],
        from: '08:00',
        to: '18:00',
        when: 'outside',
        time_zone: 'America/New_York',
      },
      threshold: { count: 5, window: '10m', per: 'actor' },
    });

    // Edit: the form comes back filled in; a change of severity is saved with the rest kept.
    await item.getByRole('button', { name: 'Edit Many changes after hours' }).click();
    const edit = page.getByRole('form', { name: 'Edit “Many changes after hours”' });
    expect(await edit.getByLabel('Within').inputValue()).toBe('10');
    expect(await edit.getByLabel('Time zone').inputValue()).toBe('America/New_York');
    await edit.getByLabel('Severity').selectOption('critical');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    const edited = ruleItem(page, 'Many changes after hours critical');
    await expect.poll(() => edited.count()).toBe(1);
    const after = await api(hub, `/api/rules/${stored.id}`);
    expect(after).toMatchObject({ severity: 'critical', condition: stored.condition });

    // Off, then deleted after a confirmation.
    await edited.getByRole('button', { name: 'Turn off Many changes after hours' }).click();
    await expect.poll(async () => (await api(hub, `/api/rules/${stored.id}`)).enabled).toBe(false);
    await expect.poll(() => edited.locator('h2').textContent()).toContain('(off)');
    await edited.getByRole('button', { name: 'Delete Many changes after hours' }).click();
    await edited.getByRole('button', { name: 'Yes, delete Many changes after hours' }).click();
    await expect.poll(() => ruleItem(page, 'Many changes after hours critical').count()).toBe(0);
    const names = (await api(hub, '/api/rules')).data.map((r: { name: string }) => r.name);
    expect(names).not.toContain('Many changes after hours');
  });
});
