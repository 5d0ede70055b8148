/**
 * Billing in real Chromium (issue 11) against a real hub with PLUGINS=billing and the loopback
 * fake BTCPay Greenfield server: the plans, "Pay" going to the invoice's checkout, the
 * subscription's state as BTCPay's webhooks arrive, a lapsed subscription's refused send with a
 * way to renew, the admin page; and none of it on a hub without the plugin.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import type { FakeBtcpay } from '../fakes/btcpay/fake-btcpay.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { PASSWORD } from '../messaging/helpers.js';
import {
  addPlan,
  type BillingHub,
  buy,
  endPeriodAt,
  fakeBtcpay,
  knownNodes,
  mine,
  startBillingHub,
  userToken,
} from '../plugins/billing/helpers.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import type { BrowserWindow } from './helpers/dom.js';
import { localTiles } from './helpers/hubs.js';

const DAY_MS = 24 * 3600_000;

async function signInHere(page: Page, username: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A time as the page writes it (the browser's locale and time zone). */
function shownTime(page: Page, ms: number): Promise<string> {
  return page.evaluate(
    (at) =>
      new Date(at).toLocaleString(undefined, {
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
      }),
    ms,
  );
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describeInBrowser('billing', () => {
  let fake: FakeBtcpay;
  let hub: BillingHub;
  let admin: string;
  let nodes: string[];
  const pages = useGuardedPages();

  beforeAll(async () => {
    fake = fakeBtcpay();
    await fake.start();
    hub = await startBillingHub(fake, { env: { MAP_TILES: localTiles() } });
    admin = await userToken(hub, 'root', ['admin']);
    nodes = await knownNodes(hub, 2);
    await addPlan(hub, admin, {
      id: 'month',
      name: 'Month of messages',
      price: '5',
      currency: 'USD',
      period_days: 30,
      nodes: 'all',
    });
    await addPlan(hub, admin, {
      id: 'ridge',
      name: 'Ridge crew week',
      price: '0.0001',
      currency: 'BTC',
      period_days: 7,
      nodes: [nodes[0]!],
    });
    await addPlan(hub, admin, {
      id: 'old',
      name: 'Old offer',
      price: '1',
      currency: 'EUR',
      period_days: 1,
      nodes: 'all',
    });
    const retired = await fetch(`${hub.baseUrl}/api/v1/billing/plans/old/retire`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(retired.status).toBe(200);
  });

  afterAll(async () => {
    await hub?.stop();
    await fake?.stop();
  });

  it('lists the plans on offer; Pay makes a subscription and goes to its BTCPay checkout; the chat then shows it active', async () => {
    const ana = await userToken(hub, 'ana');
    const guarded = await pages.open();
    const { page } = guarded;
    // The fake serves no checkout page: its address answers 403, which Chromium logs.
    guarded.expectFailedRequests(new RegExp(`^${fake.url}/i/`));
    await page.goto(`${hub.baseUrl}/`);
    await page.getByRole('link', { name: 'Plans', exact: true }).click();
    await page.waitForURL(/\/plans$/);

    const month = page.locator('.plan[data-plan-id="month"]');
    await month.waitFor();
    expect(await month.locator('.plan-name').innerText()).toBe('Month of messages');
    expect(await month.locator('.plan-price').innerText()).toBe('5 USD for 30 days');
    expect(await month.locator('.plan-nodes').innerText()).toBe('All nodes of the site');
    const ridge = page.locator('.plan[data-plan-id="ridge"]');
    expect(await ridge.locator('.plan-price').innerText()).toBe('0.0001 BTC for 7 days');
    expect(await ridge.locator('.plan-nodes').innerText()).not.toBe('All nodes of the site');
    expect(await page.locator('.plan[data-plan-id="old"]').count()).toBe(0);
    await screenshot(page, 'billing-plans');

    // Pay needs a sign-in; the form is on the page.
    expect(await page.getByRole('button', { name: /^Pay for/ }).count()).toBe(0);
    await signInHere(page, 'ana');
    await page.getByRole('heading', { name: 'Your subscriptions' }).waitFor();
    expect(await page.getByText('You have no subscription yet.').isVisible()).toBe(true);

    await page.getByRole('button', { name: 'Pay for Month of messages, 5 USD for 30 days' }).click();
    await page.waitForURL(new RegExp(`^${fake.url}/i/`));
    const invoiceId = new URL(page.url()).pathname.split('/').pop()!;
    expect(fake.invoice(invoiceId)).toMatchObject({ amount: '5', currency: 'USD', status: 'New' });
    const [pending] = await mine(hub, ana);
    expect(pending).toMatchObject({ plan_id: 'month', status: 'pending_payment', invoice_id: invoiceId });

    // Back on the hub (as BTCPay's return link does): waiting, then seen, then paid.
    await page.goto(`${hub.baseUrl}/plans`);
    const row = page.locator(`.subscription[data-subscription-id="${pending!.id}"]`);
    await expect.poll(() => row.getByTestId('subscription-state').innerText()).toBe('Waiting for payment');
    expect(await row.getByRole('link', { name: 'Pay the invoice' }).getAttribute('href')).toBe(
      `${fake.url}/i/${invoiceId}`,
    );
    fake.setStatus(invoiceId, 'Processing');
    expect((await fake.deliver(invoiceId, 'InvoiceProcessing')).status).toBe(200);
    await expect
      .poll(() => row.getByTestId('subscription-state').innerText(), { timeout: 15_000 })
      .toBe('Payment seen, waiting for confirmation');
    fake.setStatus(invoiceId, 'Settled');
    expect((await fake.deliver(invoiceId, 'InvoiceSettled')).status).toBe(200);
    await expect
      .poll(() => row.getByTestId('subscription-state').innerText(), { timeout: 15_000 })
      .toMatch(/^Active until /);

    const [active] = await mine(hub, ana);
    const end = Date.parse(active!.current_period_end!);
    expect(end - Date.now()).toBeGreaterThan(29 * DAY_MS);
    const shownEnd = await shownTime(page, end);
    await page.getByRole('link', { name: 'Chat', exact: true }).click();
    const bar = page.getByTestId('subscription-bar');
    await expect.poll(() => bar.getAttribute('data-status')).toBe('active');
    expect(await bar.getByTestId('subscription-state').innerText()).toBe(`Active until ${shownEnd}`);
    // A month ahead: no renew button yet.
    expect(await bar.getByTestId('renew').count()).toBe(0);
    await screenshot(page, 'billing-chat-active');
  });

  it('says in plain words that a lapsed subscription refused the send, and renews it to a new invoice', async () => {
    const bo = await userToken(hub, 'bo');
    const bought = await buy(hub, bo, 'month');
    expect(bought.status).toBe(201);
    await fake.pay(bought.body.invoice_id);
    // The paid period ended two days ago and the grace (24 h) is over too.
    const end = Date.now() - 2 * DAY_MS;
    endPeriodAt(hub, bought.body.id, end, DAY_MS);

    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/v1\/messages$/);
    guarded.expectFailedRequests(new RegExp(`^${fake.url}/i/`));
    await page.goto(`${hub.baseUrl}/chat`);
    await signInHere(page, 'bo');
    await page.locator('.conversations').waitFor();
    await page.goto(`${hub.baseUrl}/chat/${nodes[1]}`);
    await page.getByLabel(/^Message to /).fill('Still there?');
    await page.getByRole('button', { name: 'Send' }).click();

    const lapsed = page.getByTestId('composer-lapsed');
    await lapsed.waitFor();
    const lapsedAt = await shownTime(page, end + DAY_MS);
    expect(await lapsed.locator('.form-error').innerText()).toBe(
      `Not sent: your subscription lapsed on ${lapsedAt}. Renew it to message again. Your text is still here.`,
    );
    expect(await page.getByLabel(/^Message to /).inputValue()).toBe('Still there?');
    expect(await page.getByTestId('composer-error').count()).toBe(0);
    // The bar above says the period ended, whether or not the hub's expiry run has marked it yet.
    const bar = page.getByTestId('subscription-bar');
    expect(await bar.getByTestId('subscription-state').innerText()).toMatch(
      new RegExp(`^(Ended ${literal(await shownTime(page, end))}: renew to keep messaging|Expired .+)$`),
    );
    expect(await bar.getByTestId('renew').count()).toBe(1);
    await screenshot(page, 'billing-lapsed');

    const before = fake.invoices.size;
    await lapsed.getByRole('button', { name: 'Renew to message again' }).click();
    await page.waitForURL(new RegExp(`^${fake.url}/i/`));
    expect(fake.invoices.size).toBe(before + 1);
    const renewal = new URL(page.url()).pathname.split('/').pop()!;
    const [sub] = await mine(hub, bo);
    expect(sub).toMatchObject({ id: bought.body.id, invoice_id: renewal, invoice_status: 'new' });
  });

  it('shows admins every subscriber, the plans (retired ones too) and the latest invoices', async () => {
    const cy = await userToken(hub, 'cy');
    const pending = await buy(hub, cy, 'ridge');
    expect(pending.status).toBe(201);

    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/admin/billing`);
    await signInHere(page, 'root');
    await page.getByRole('heading', { name: 'Subscribers' }).waitFor();
    expect(await page.getByRole('link', { name: 'Billing', exact: true }).isVisible()).toBe(true);

    expect(await page.getByTestId('subscriber').allInnerTexts()).toContain('cy');
    const cyRow = page.locator(`tr[data-subscription-id="${pending.body.id}"]`);
    expect(await cyRow.innerText()).toContain('Ridge crew week');
    expect(await cyRow.innerText()).toContain('Waiting for payment');
    expect(await page.locator('tr[data-plan-id="old"]').innerText()).toContain('retired');
    const invoice = page.locator(`tr[data-invoice-id="${pending.body.invoice_id}"]`);
    expect(await invoice.innerText()).toContain('0.0001 BTC');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Retire Ridge crew week' }).click();
    await expect.poll(() => page.locator('tr[data-plan-id="ridge"]').innerText()).toContain('retired');
    const offered = (await (await fetch(`${hub.baseUrl}/api/v1/billing/plans`)).json()) as {
      data: Array<{ id: string }>;
    };
    expect(offered.data.map((p) => p.id)).toEqual(['month']);
    await screenshot(page, 'billing-admin');
  });

  it('fits a 360-px-wide phone: plans and the chat bar', async () => {
    const dee = await userToken(hub, 'dee');
    await fake.pay((await buy(hub, dee, 'month')).body.invoice_id);
    const guarded = await pages.open({ width: 360, height: 740 });
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/plans`);
    await signInHere(page, 'dee');
    await page.locator('.subscription').first().waitFor();
    const width = () =>
      page.evaluate(
        () => (globalThis as unknown as BrowserWindow).document.querySelector('main')!.scrollWidth,
      );
    expect(await width()).toBeLessThanOrEqual(360);
    await page.getByRole('link', { name: 'Chat', exact: true }).click();
    await page.getByTestId('subscription-state').waitFor();
    expect(await width()).toBeLessThanOrEqual(360);
    // The header keeps its status and sign-out on screen (the links scroll beside them).
    await expect.poll(() => page.getByTestId('radio-state').innerText()).toMatch(/(^|\s)connected$/);
    const signOut = (await page.getByRole('button', { name: 'Sign out' }).boundingBox())!;
    expect(signOut.x + signOut.width).toBeLessThanOrEqual(360);
    expect(signOut.height).toBeLessThan(40);
    const nav = page.getByRole('navigation', { name: 'Main' });
    const plans = (await nav.getByRole('link', { name: 'Plans', exact: true }).boundingBox())!;
    expect(plans.x + plans.width).toBeLessThanOrEqual(
      (await nav.boundingBox())!.x + (await nav.boundingBox())!.width,
    );
    await screenshot(page, 'billing-chat-360');
  });
});

describeInBrowser('billing off', () => {
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    hub = await startTestHub({ MAP_TILES: localTiles() });
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('shows no plans or billing links, asks the hub nothing about billing, and says so at /plans', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    const billingCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/billing')) billingCalls.push(r.url());
    });
    await page.goto(`${hub.baseUrl}/`);
    await expect.poll(() => page.getByTestId('version').count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Plans', exact: true }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Billing', exact: true }).count()).toBe(0);
    await page.goto(`${hub.baseUrl}/plans`);
    await expect.poll(() => page.locator('main h1').innerText()).toBe('No plans on this hub');
    await page.goto(`${hub.baseUrl}/admin/billing`);
    await expect.poll(() => page.locator('main h1').innerText()).toBe('Billing is off on this hub');
    expect(billingCalls).toEqual([]);
  });

  it('says a lapsed grant from the CLI lapsed, and to ask the operator (nothing to buy here)', async () => {
    const db = hub.hub.store.db;
    await new HubUserService(db).add({ username: 'eve', password: PASSWORD, roles: ['subscriber'] });
    const lapsedAt = Date.now() - DAY_MS;
    new SubscriptionRepository(db).create({
      subscriber: 'eve',
      nodes: 'all',
      source: 'cli',
      expiresAt: lapsedAt,
    });
    const [node] = await knownNodes(hub, 1);

    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/v1\/messages$/);
    const billingCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/billing')) billingCalls.push(r.url());
    });
    await page.goto(`${hub.baseUrl}/chat`);
    await signInHere(page, 'eve');
    await page.locator('.conversations').waitFor();
    expect(await page.getByTestId('subscription-bar').count()).toBe(0);
    await page.goto(`${hub.baseUrl}/chat/${node}`);
    await page.getByLabel(/^Message to /).fill('Anyone?');
    await page.getByRole('button', { name: 'Send' }).click();
    const lapsed = page.getByTestId('composer-lapsed');
    await lapsed.waitFor();
    expect(await lapsed.innerText()).toBe(
      `Not sent: your subscription lapsed on ${await shownTime(page, lapsedAt)}. Ask whoever runs this hub to renew it. Your text is still here.`,
    );
    expect(await lapsed.getByRole('button').count()).toBe(0);
    expect(billingCalls).toEqual([]);
  });
});
