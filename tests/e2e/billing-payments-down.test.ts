/**
 * Billing in real Chromium while the payment server (BTCPay) cannot be reached: the hub answers
 * 503 with its reason, and the page shows that reason (not a guess that the hub is busy or still
 * starting) — under "Pay" on the plans page and beside "Renew".
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FakeBtcpay } from '../fakes/btcpay/fake-btcpay.js';
import { PASSWORD } from '../messaging/helpers.js';
import {
  addPlan,
  type BillingHub,
  buy,
  endPeriodAt,
  fakeBtcpay,
  startBillingHub,
  userToken,
} from '../plugins/billing/helpers.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';

const DAY_MS = 24 * 3600_000;
const PLAN = {
  id: 'week',
  name: 'Week of messages',
  price: '2',
  currency: 'EUR',
  period_days: 7,
  nodes: 'all',
};
const REASON = 'Payments are unavailable right now: the payment server cannot be reached; try again later.';

async function signInHere(page: Page, username: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

describeInBrowser('billing while the payment server is down', () => {
  let fake: FakeBtcpay;
  let hub: BillingHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    fake = fakeBtcpay();
    await fake.start();
    hub = await startBillingHub(fake);
    await addPlan(hub, await userToken(hub, 'root', ['admin']), PLAN);
    // Bo paid while BTCPay answered; his period ends in two days, so "Renew" is offered.
    const bo = await userToken(hub, 'bo');
    const bought = await buy(hub, bo, PLAN.id);
    expect(bought.status).toBe(201);
    await fake.pay(bought.body.invoice_id);
    endPeriodAt(hub, bought.body.id, Date.now() + 2 * DAY_MS, DAY_MS);
    await userToken(hub, 'ana');
    await fake.stop();
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('shows the hub’s reason for the 503 under Pay and beside Renew', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/v1\/billing\/subscriptions(\/[^/]+\/renew)?$/);
    await page.goto(`${hub.baseUrl}/plans`);
    await signInHere(page, 'ana');
    await page.getByRole('heading', { name: 'Your subscriptions' }).waitFor();
    await page.getByRole('button', { name: 'Pay for Week of messages, 2 EUR for 7 days' }).click();
    await expect.poll(() => page.getByRole('alert').allInnerTexts()).toContain(REASON);
    expect(await page.getByText('busy or still starting').count()).toBe(0);
    await guarded.close();

    const second = await pages.open();
    second.expectFailedRequests(/\/api\/v1\/billing\/subscriptions\/[^/]+\/renew$/);
    await second.page.goto(`${hub.baseUrl}/plans`);
    await signInHere(second.page, 'bo');
    await second.page.getByRole('button', { name: 'Renew' }).first().click();
    await expect.poll(() => second.page.getByRole('alert').allInnerTexts()).toContain(REASON);
    expect(await second.page.getByText('busy or still starting').count()).toBe(0);
  });
});
