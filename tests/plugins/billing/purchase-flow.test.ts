/**
 * Billing over real HTTP through a whole hub (PLUGINS=billing) against the loopback fake BTCPay:
 * buy → pay → message → the period ends → past due still messages → expired answers 403
 * "lapsed" → renew → message again; two subscribers kept apart; redelivered and out-of-order
 * webhooks; a missed webhook settled by the poll; state changes on the bus and in /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillingChange } from '../../../src/billing/events.js';
import type { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import {
  addPlan,
  type BillingHub,
  buy,
  call,
  endPeriodAt,
  fakeBtcpay,
  knownNodes,
  mine,
  sendText,
  startBillingHub,
  stores,
  userToken,
} from './helpers.js';

const DAY = 86_400_000;
const GRACE = 24 * 3_600_000;
let fake: FakeBtcpay;
let t: BillingHub;
let admin: string;
let nodes: string[];
const changes: BillingChange[] = [];

beforeAll(async () => {
  fake = fakeBtcpay();
  await fake.start();
  t = await startBillingHub(fake, { env: { BILLING_REDIRECT_URL: 'https://hub.example/billing' } });
  nodes = await knownNodes(t, 3);
  admin = await userToken(t, 'operator', ['admin']);
  await addPlan(t, admin, { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 });
  await addPlan(t, admin, {
    id: 'one-node',
    name: 'One node',
    price: '1000',
    currency: 'SATS',
    period_days: 7,
    nodes: [nodes[0]],
  });
  t.hub.bus.on('test', 'billing.changed', (c) => changes.push(c));
});
afterAll(async () => {
  await t?.stop();
  await fake?.stop();
});

describe('buy → pay → message → lapse → renew', () => {
  it('walks the whole life of a paid subscription', async () => {
    const alice = await userToken(t, 'alice');
    // Nothing paid yet: no messaging.
    expect((await sendText(t, alice, nodes[1]!)).status).toBe(403);

    const bought = await buy(t, alice, 'monthly');
    expect(bought.status).toBe(201);
    expect(bought.body).toMatchObject({
      plan_id: 'monthly',
      status: 'pending_payment',
      current_period_end: null,
      invoice_status: 'new',
    });
    expect(bought.body.id).toMatch(/^sub_[0-9a-f]{16}$/);
    const invoiceId = bought.body.invoice_id as string;
    expect(bought.body.checkout_link).toBe(fake.invoice(invoiceId).checkoutLink);
    // The invoice as BTCPay was asked for it: amount as a string, currency, our ids in metadata.
    const created = fake.requests.find((r) => r.method === 'POST' && r.body)!.body as Record<string, unknown>;
    expect(created).toMatchObject({
      amount: '5',
      currency: 'USD',
      metadata: { subscriptionId: bought.body.id, subscriber: 'alice' },
      checkout: { redirectURL: 'https://hub.example/billing' },
    });
    // A second purchase of the same plan while one is pending: the same one, no second invoice.
    const again = await buy(t, alice, 'monthly');
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(bought.body.id);
    expect(fake.invoices.size).toBe(1);

    // Payment seen, not yet confirmed: still no messaging, and the subscriber is told why.
    fake.setStatus(invoiceId, 'Processing');
    expect((await fake.deliver(invoiceId, 'InvoiceProcessing')).status).toBe(200);
    const seen = (await mine(t, alice))[0];
    expect(seen).toMatchObject({
      status: 'pending_payment',
      payment_note: 'payment seen, waiting for confirmation',
    });
    expect((await sendText(t, alice, nodes[1]!)).status).toBe(403);

    fake.setStatus(invoiceId, 'Settled');
    const settled = await fake.deliver(invoiceId, 'InvoiceSettled');
    expect(settled).toMatchObject({ status: 200, body: { result: 'applied' } });
    const active = (await mine(t, alice))[0];
    expect(active.status).toBe('active');
    const end = Date.parse(active.current_period_end);
    expect(end).toBeGreaterThan(Date.now() + 29 * DAY);
    expect(end).toBeLessThanOrEqual(Date.now() + 30 * DAY);
    expect((await sendText(t, alice, nodes[1]!)).status).toBe(202);
    // The right to message runs to the period end plus the grace period.
    const grant = stores(t).grants.get(stores(t).billing.subscription(active.id)!.grantId!)!;
    expect(grant).toMatchObject({
      source: 'billing',
      reference: active.id,
      status: 'active',
      expiresAt: end + GRACE,
    });

    // The period ended an hour ago: past due, still within grace, still messages.
    endPeriodAt(t, active.id, Date.now() - 3_600_000, GRACE);
    await t.hub.scheduler.runNow('billing.expiry');
    expect((await mine(t, alice))[0].status).toBe('past_due');
    expect((await sendText(t, alice, nodes[1]!)).status).toBe(202);

    // Past the grace period: expired, and the 403 says it lapsed and how to renew.
    endPeriodAt(t, active.id, Date.now() - GRACE - 60_000, GRACE);
    await t.hub.scheduler.runNow('billing.expiry');
    expect((await mine(t, alice))[0].status).toBe('expired');
    const refused = await sendText(t, alice, nodes[1]!);
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('lapsed');
    expect(refused.body.detail).toContain(`/api/v1/billing/subscriptions/${active.id}/renew`);
    expect(refused.body.renew).toBe(`/api/v1/billing/subscriptions/${active.id}/renew`);

    const renewed = await call(t.baseUrl, 'POST', `/api/v1/billing/subscriptions/${active.id}/renew`, {
      token: alice,
    });
    expect(renewed.status).toBe(201);
    expect(renewed.body.invoice_id).not.toBe(invoiceId);
    expect(renewed.body.status).toBe('expired');
    await fake.pay(renewed.body.invoice_id);
    const back = (await mine(t, alice))[0];
    expect(back.status).toBe('active');
    // From now, since the old end had passed.
    expect(Date.parse(back.current_period_end)).toBeGreaterThan(Date.now() + 29 * DAY);
    expect((await sendText(t, alice, nodes[1]!)).status).toBe(202);

    // Every change stored with its time and cause, and announced on the bus.
    const history = stores(t)
      .billing.changes(active.id)
      .map((c) => `${c.from}→${c.to}`);
    expect(history).toEqual([
      'null→pending_payment',
      'pending_payment→pending_payment',
      'pending_payment→active',
      'active→past_due',
      'past_due→expired',
      'expired→expired',
      'expired→active',
    ]);
    expect(changes.filter((c) => c.subscriptionId === active.id).map((c) => c.to)).toEqual([
      'pending_payment',
      'pending_payment',
      'active',
      'past_due',
      'expired',
      'expired',
      'active',
    ]);
  });

  it('extends an active subscription by one period from its current end when a renewal settles', async () => {
    const ann = await userToken(t, 'ann');
    const bought = await buy(t, ann, 'monthly');
    await fake.pay(bought.body.invoice_id);
    const before = Date.parse((await mine(t, ann))[0].current_period_end);
    const renewed = await call(t.baseUrl, 'POST', `/api/v1/billing/subscriptions/${bought.body.id}/renew`, {
      token: ann,
    });
    expect(renewed.status).toBe(201);
    // Asking again while that invoice is open gives the same invoice.
    const again = await call(t.baseUrl, 'POST', `/api/v1/billing/subscriptions/${bought.body.id}/renew`, {
      token: ann,
    });
    expect(again.status).toBe(200);
    expect(again.body.invoice_id).toBe(renewed.body.invoice_id);
    await fake.pay(renewed.body.invoice_id);
    const after = (await mine(t, ann))[0];
    expect(after.status).toBe('active');
    expect(Date.parse(after.current_period_end)).toBe(before + 30 * DAY);
  });
});

describe('subscribers are kept apart', () => {
  it("covers only the plan's nodes, only for the subscriber who paid, and lists only their own", async () => {
    const bob = await userToken(t, 'bob');
    const carol = await userToken(t, 'carol');
    const bought = await buy(t, bob, 'one-node');
    await fake.pay(bought.body.invoice_id);
    expect((await sendText(t, bob, nodes[0]!)).status).toBe(202);
    expect((await sendText(t, bob, nodes[1]!)).status).toBe(403);
    expect((await sendText(t, carol, nodes[0]!)).status).toBe(403);
    expect(await mine(t, carol)).toEqual([]);
    expect((await mine(t, bob)).map((s) => s.id)).toEqual([bought.body.id]);
    // Carol cannot renew Bob's subscription: to her it does not exist.
    const theirs = await call(t.baseUrl, 'POST', `/api/v1/billing/subscriptions/${bought.body.id}/renew`, {
      token: carol,
    });
    expect(theirs.status).toBe(404);
    const everyone = await call(t.baseUrl, 'GET', '/api/v1/billing/subscriptions?all=true', { token: admin });
    expect(everyone.body.data.map((s: { id: string }) => s.id)).toContain(bought.body.id);
    expect(
      (await call(t.baseUrl, 'GET', '/api/v1/billing/subscriptions?all=true', { token: carol })).status,
    ).toBe(403);
  });
});

describe('webhook deliveries', () => {
  it('applies a redelivery (same delivery, or originalDeliveryId) once', async () => {
    const dan = await userToken(t, 'dan');
    const bought = await buy(t, dan, 'monthly');
    const invoiceId = bought.body.invoice_id as string;
    fake.setStatus(invoiceId, 'Settled');
    const first = await fake.deliver(invoiceId, 'InvoiceSettled');
    expect(first.body).toEqual({ result: 'applied' });
    const end = (await mine(t, dan))[0].current_period_end;
    const redelivered = await fake.redeliver(invoiceId, 'InvoiceSettled', first.deliveryId);
    expect(redelivered).toMatchObject({ status: 200, body: { result: 'duplicate' } });
    const same = await fake.post(
      JSON.stringify(fake.payload(invoiceId, 'InvoiceSettled', { deliveryId: first.deliveryId })),
    );
    expect(same).toMatchObject({ status: 200, body: { result: 'duplicate' } });
    // A new delivery about the settled invoice looks again and changes nothing either.
    expect((await fake.deliver(invoiceId, 'InvoiceSettled')).body).toEqual({ result: 'unchanged' });
    expect((await mine(t, dan))[0].current_period_end).toBe(end);
    expect(
      stores(t)
        .billing.changes(bought.body.id)
        .filter((c) => c.to === 'active'),
    ).toHaveLength(1);
  });

  it('keeps a settled payment when BTCPay later reports the invoice invalid (nothing paid is lost)', async () => {
    const ida = await userToken(t, 'ida');
    const bought = await buy(t, ida, 'monthly');
    await fake.pay(bought.body.invoice_id);
    fake.setStatus(bought.body.invoice_id, 'Invalid', 'Marked');
    expect((await fake.deliver(bought.body.invoice_id, 'InvoiceInvalid')).body).toEqual({
      result: 'unchanged',
    });
    expect((await mine(t, ida))[0]).toMatchObject({ status: 'active', invoice_status: 'settled' });
  });

  it('ends active when Settled arrives before Processing and ReceivedPayment', async () => {
    const eve = await userToken(t, 'eve');
    const bought = await buy(t, eve, 'monthly');
    const invoiceId = bought.body.invoice_id as string;
    fake.setStatus(invoiceId, 'Settled');
    await fake.deliver(invoiceId, 'InvoiceSettled');
    expect((await fake.deliver(invoiceId, 'InvoiceProcessing')).body).toEqual({ result: 'unchanged' });
    expect((await fake.deliver(invoiceId, 'InvoiceReceivedPayment')).body).toEqual({ result: 'unchanged' });
    expect((await mine(t, eve))[0]).toMatchObject({ status: 'active', invoice_status: 'settled' });
  });

  it('trusts the fetched invoice, not the event: a "Settled" event for an unpaid invoice activates nothing', async () => {
    const fay = await userToken(t, 'fay');
    const bought = await buy(t, fay, 'monthly');
    expect((await fake.deliver(bought.body.invoice_id, 'InvoiceSettled')).body).toEqual({
      result: 'unchanged',
    });
    expect((await mine(t, fay))[0].status).toBe('pending_payment');
  });

  it('leaves an expired or invalid purchase unpaid (canceled), and a new purchase makes a new invoice', async () => {
    const gus = await userToken(t, 'gus');
    const bought = await buy(t, gus, 'monthly');
    fake.setStatus(bought.body.invoice_id, 'Expired');
    expect((await fake.deliver(bought.body.invoice_id, 'InvoiceExpired')).body).toEqual({
      result: 'applied',
    });
    expect((await mine(t, gus))[0]).toMatchObject({ status: 'canceled', invoice_status: 'expired' });
    expect((await sendText(t, gus, nodes[1]!)).status).toBe(403);
    const next = await buy(t, gus, 'monthly');
    expect(next.status).toBe(201);
    expect(next.body.id).not.toBe(bought.body.id);
    fake.setStatus(next.body.invoice_id, 'Invalid', 'Invalid');
    await fake.deliver(next.body.invoice_id, 'InvoiceInvalid');
    expect((await mine(t, gus)).map((s) => s.status)).toEqual(['canceled', 'canceled']);
  });

  it('settles a payment whose webhook never came when the poll reaches BTCPay again', async () => {
    const hal = await userToken(t, 'hal');
    const bought = await buy(t, hal, 'monthly');
    fake.setStatus(bought.body.invoice_id, 'Settled');
    fake.mode = 'unreachable';
    await t.hub.scheduler.runNow('billing.poll');
    expect((await mine(t, hal))[0].status).toBe('pending_payment');
    fake.mode = 'ok';
    await t.hub.scheduler.runNow('billing.poll');
    expect((await mine(t, hal))[0].status).toBe('active');
    expect((await sendText(t, hal, nodes[2]!)).status).toBe(202);
  });
});

describe('metrics', () => {
  it('counts invoices, active subscriptions and webhook rejects', async () => {
    await fake.post('{}', { signature: null });
    expect((await fake.post(JSON.stringify({ pad: 'x'.repeat(70 * 1024) }))).status).toBe(413);
    const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(text).toMatch(/meshhub_billing_invoices_created_total\{kind="purchase"\} [1-9]/);
    expect(text).toMatch(/meshhub_billing_invoices_settled_total\{kind="purchase"\} [1-9]/);
    expect(text).toMatch(/meshhub_billing_invoices_expired_total\{status="expired"\} [1-9]/);
    expect(text).toMatch(/meshhub_billing_active_subscriptions [1-9]/);
    expect(text).toMatch(/meshhub_billing_webhook_rejects_total\{reason="missing_signature"\} [1-9]/);
    expect(text).toMatch(/meshhub_billing_webhook_rejects_total\{reason="too_large"\} [1-9]/);
  });
});
