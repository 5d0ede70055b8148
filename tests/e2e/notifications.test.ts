/**
 * Notifications in real Chromium against a real hub: an admin signs in at /notifications, adds a
 * rule with the form, and sees its firing arrive live (the dashboard's stream) without a reload;
 * "Enable notifications" registers the service worker and, with no push service reachable (this
 * test's browser may not leave the machine, as on a LAN without internet), says so in words.
 * A subscriber sees the button but not the rules. The app is installable: manifest and worker.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import type { TestHub } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { startUiHub } from './helpers/hubs.js';

const PASSWORD = 'field-radio-42';

/** Runs in the page (the tests compile without the DOM library). */
async function hasServiceWorker(): Promise<boolean> {
  const { navigator } = globalThis as unknown as {
    navigator: { serviceWorker: { getRegistration(scope: string): Promise<unknown> } };
  };
  return !!(await navigator.serviceWorker.getRegistration('/'));
}

async function signIn(page: Page, baseUrl: string, username: string): Promise<void> {
  await page.goto(`${baseUrl}/notifications`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Notifications', exact: true }).waitFor();
}

describeInBrowser('notifications page', () => {
  let t: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    t = await startUiHub({ RADIO: 'none' });
    const users = new HubUserService(t.hub.store.db);
    await users.add({ username: 'root', password: PASSWORD, roles: ['admin'] });
    await users.add({ username: 'sam', password: PASSWORD, roles: ['subscriber'] });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('adds a rule and shows its firing live; enabling push says when no push service can be reached', async () => {
    const guarded = await pages.open();
    const { page, context } = guarded;
    await context.grantPermissions(['notifications']);
    await signIn(page, t.baseUrl, 'root');
    await expect.poll(() => page.locator('main').innerText()).toContain('Nothing has fired yet.');

    await page.getByLabel('Name').fill('Gate battery');
    await page.getByLabel('When').selectOption('battery_low');
    await page.getByLabel('Below %').fill('20');
    await page.getByLabel('Nodes').fill('!5e000001');
    await page.getByRole('button', { name: 'Add rule' }).click();
    await expect.poll(() => page.getByTestId('rules').innerText()).toContain('Gate battery');
    expect(await page.getByTestId('rules').innerText()).toContain('Battery below X % 20 %');

    // The mesh reports the node's battery low: the firing shows up on the open page.
    t.hub.bus.emit('node.updated', {
      nodeId: '!5e000001',
      nodeNum: 0x5e000001,
      lastHeard: Date.now(),
      batteryLevel: 9,
    });
    await expect
      .poll(() => page.getByTestId('firings').innerText(), { timeout: 10_000 })
      .toContain('Gate battery: Battery of !5e000001 at 9 % (below 20 %)');

    const browserLine = (p: string) => p.includes('does not support the Push API in incognito mode');
    const logged = page.waitForEvent('console', (m) => browserLine(m.text()));
    await page.getByRole('button', { name: 'Enable notifications' }).click();
    await expect
      .poll(() => page.getByRole('alert').innerText(), { timeout: 20_000 })
      .toContain('could not reach its push service');
    expect(await page.evaluate(hasServiceWorker)).toBe(true);
    // Chromium itself logs why the subscription failed (a test profile has no push service); the
    // page handled it and said so above: that one line is the browser's, not the app's.
    await logged;
    guarded.problems.splice(0, guarded.problems.length, ...guarded.problems.filter((p) => !browserLine(p)));
    await screenshot(page, 'notifications-admin');
  });

  it('shows a subscriber the button but not the rules', async () => {
    const { page } = await pages.open();
    await signIn(page, t.baseUrl, 'sam');
    const text = await page.locator('main').innerText();
    expect(text).toContain('tell you when a reply arrives or a text fails');
    expect(text).not.toContain('Rules');
    await page.getByRole('button', { name: 'Enable notifications' }).waitFor();
  });

  it('is installable: a web app manifest and a service worker', async () => {
    const { page } = await pages.open();
    await page.goto(t.baseUrl);
    const href = await page.locator('link[rel="manifest"]').getAttribute('href');
    const manifest = await (await fetch(`${t.baseUrl}${href}`)).json();
    expect(manifest).toMatchObject({ name: 'meshhub', start_url: '/', display: 'standalone' });
    const sw = await fetch(`${t.baseUrl}/sw.js`);
    expect(sw.headers.get('content-type')).toContain('javascript');
    await expect.poll(() => page.evaluate(hasServiceWorker)).toBe(true);
  });
});
