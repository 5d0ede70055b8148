/**
 * Every kind of bad input from issue 11 against a whole hub and the fake BTCPay, each with the
 * exact status a caller gets and a check that nothing changed: unknown and retired plans,
 * malformed ids, forged, truncated, replayed and re-signed webhooks, a body that is not JSON,
 * an invoice whose amount or currency does not match, another store, and BTCPay answering
 * 4xx/5xx/garbage, timing out or unreachable.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FakeBtcpay, FakeMode } from '../../fakes/btcpay/fake-btcpay.js';
import {
  addPlan,
  type BillingHub,
  buy,
  call,
  fakeBtcpay,
  type Json,
  mine,
  startBillingHub,
  stores,
  userToken,
} from './helpers.js';

let fake: FakeBtcpay;
let t: BillingHub;
let admin: string;
let n = 0;

beforeAll(async () => {
  fake = fakeBtcpay();
  await fake.start();
  t = await startBillingHub(fake);
  admin = await userToken(t, 'operator', ['admin']);
  await addPlan(t, admin, { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 });
  await addPlan(t, admin, { id: 'old', name: 'Old', price: '3', currency: 'EUR', period_days: 30 });
  expect((await call(t.baseUrl, 'POST', '/api/v1/billing/plans/old/retire', { token: admin })).status).toBe(
    200,
  );
});
afterEach(() => {
  fake.mode = 'ok';
});
afterAll(async () => {
  await t?.stop();
  await fake?.stop();
});

const subscriber = async () => userToken(t, `sub${++n}`);
const rows = () =>
  t.hub.store.db.prepare('SELECT count(*) FROM billing_subscriptions').pluck().get() as number;
const grants = () =>
  t.hub.store.db
    .prepare("SELECT count(*) FROM subscriptions WHERE source = 'billing'")
    .pluck()
    .get() as number;

async function pending(): Promise<{ token: string; sub: Json }> {
  const token = await subscriber();
  const res = await buy(t, token, 'monthly');
  expect(res.status).toBe(201);
  return { token, sub: res.body };
}

describe('buying', () => {
  it('404 for an unknown plan, 409 for a retired one, 400 for a malformed plan id; nothing stored', async () => {
    const token = await subscriber();
    const before = rows();
    const invoices = fake.invoices.size;
    const unknown = await buy(t, token, 'nope');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
    expect((await buy(t, token, 'old')).status).toBe(409);
    const malformed = await buy(t, token, 'Not A Plan!');
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].field).toBe('plan_id');
    const extra = await call(t.baseUrl, 'POST', '/api/v1/billing/subscriptions', {
      token,
      body: { plan_id: 'monthly', price: '0' },
    });
    expect(extra.status).toBe(400);
    expect(
      (await call(t.baseUrl, 'POST', '/api/v1/billing/subscriptions', { token, raw: '{"plan_id":' })).status,
    ).toBe(400);
    expect(
      (await call(t.baseUrl, 'POST', '/api/v1/billing/subscriptions', { body: { plan_id: 'monthly' } }))
        .status,
    ).toBe(401);
    expect(rows()).toBe(before);
    expect(fake.invoices.size).toBe(invoices);
  });

  it('a retired plan keeps serving what was bought on it, and is no longer offered', async () => {
    const offered = await call(t.baseUrl, 'GET', '/api/v1/billing/plans');
    expect(offered.status).toBe(200);
    expect(offered.body.data).toEqual([
      { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30, nodes: 'all' },
    ]);
    const all = await call(t.baseUrl, 'GET', '/api/v1/billing/plans?all=true', { token: admin });
    expect(all.body.data.map((p: Json) => [p.id, p.active])).toEqual([
      ['monthly', true],
      ['old', false],
    ]);
    expect((await call(t.baseUrl, 'GET', '/api/v1/billing/plans?all=true')).status).toBe(401);
  });

  it('400 for a malformed subscription id, 404 for an unknown one, 409 to renew a pending one', async () => {
    const { token, sub } = await pending();
    const invoices = fake.invoices.size;
    const malformed = await call(t.baseUrl, 'POST', '/api/v1/billing/subscriptions/xyz/renew', { token });
    expect(malformed.status).toBe(400);
    const unknown = await call(
      t.baseUrl,
      'POST',
      '/api/v1/billing/subscriptions/sub_0000000000000000/renew',
      { token },
    );
    expect(unknown.status).toBe(404);
    const early = await call(t.baseUrl, 'POST', `/api/v1/billing/subscriptions/${sub.id}/renew`, { token });
    expect(early.status).toBe(409);
    expect(fake.invoices.size).toBe(invoices);
    expect(stores(t).billing.latestInvoice(sub.id)!.id).toBe(sub.invoice_id);
  });

  it.each([
    ['unreachable', 'cannot be reached'],
    ['error500', 'answered an error (HTTP 500)'],
    ['forbidden', 'refused the request (HTTP 403)'],
    ['garbage', 'not JSON'],
    ['slow', 'did not answer in time'],
  ] as Array<[FakeMode, string]>)(
    '503 + Retry-After with a plain reason when BTCPay is %s; nothing stored',
    async (mode, reason) => {
      const token = await subscriber();
      const before = rows();
      fake.mode = mode;
      const res = await buy(t, token, 'monthly');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(res.body.detail).toContain(reason);
      expect(rows()).toBe(before);
      fake.mode = 'ok';
      // Once BTCPay answers again, buying works.
      expect((await buy(t, token, 'monthly')).status).toBe(201);
    },
  );
});

describe('webhooks', () => {
  const settledBody = (invoiceId: string) => JSON.stringify(fake.payload(invoiceId, 'InvoiceSettled'));

  async function unchanged(token: string, sub: Json): Promise<void> {
    expect((await mine(t, token))[0]).toMatchObject({
      id: sub.id,
      status: 'pending_payment',
      current_period_end: null,
    });
    expect(stores(t).billing.changes(sub.id)).toHaveLength(1);
  }

  it('401 for a missing, malformed, forged or re-signed signature; nothing changes', async () => {
    const { token, sub } = await pending();
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = settledBody(sub.invoice_id);
    const g = grants();
    expect((await fake.post(body, { signature: null })).status).toBe(401);
    expect((await fake.post(body, { signature: 'sha256=nothex' })).status).toBe(401);
    expect((await fake.post(body, { signature: `sha256=${'0'.repeat(64)}` })).status).toBe(401);
    expect((await fake.post(body, { secret: 'another-secret-entirely' })).status).toBe(401);
    await unchanged(token, sub);
    expect(grants()).toBe(g);
  });

  it('401 for a truncated body (signed before truncation) and for a tampered one', async () => {
    const { token, sub } = await pending();
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = settledBody(sub.invoice_id);
    const good = (await fake.post('x')).status; // any body signed right passes the signature check
    expect(good).toBe(400);
    const { createHmac } = await import('node:crypto');
    const sig = `sha256=${createHmac('sha256', 'whsec-billing-test-secret').update(body).digest('hex')}`;
    expect((await fake.post(body.slice(0, -10), { signature: sig })).status).toBe(401);
    expect(
      (await fake.post(body.replace('InvoiceSettled', 'InvoiceSettlee'), { signature: sig })).status,
    ).toBe(401);
    await unchanged(token, sub);
  });

  it('400 for a signed body that is not JSON, or not a delivery', async () => {
    const { token, sub } = await pending();
    const notJson = await fake.post('not json at all');
    expect(notJson.status).toBe(400);
    expect((notJson.body as Json).detail).toBe('the webhook body is not valid JSON');
    expect((await fake.post(JSON.stringify({ hello: 'world' }))).status).toBe(400);
    expect((await fake.post('[]')).status).toBe(400);
    await unchanged(token, sub);
  });

  it('413 for a body over the limit', async () => {
    const res = await fake.post(JSON.stringify({ pad: 'x'.repeat(70 * 1024) }));
    expect(res.status).toBe(413);
  });

  it('a replayed delivery is a duplicate and changes nothing', async () => {
    const { token, sub } = await pending();
    fake.setStatus(sub.invoice_id, 'Settled');
    const body = settledBody(sub.invoice_id);
    expect((await fake.post(body)).body).toEqual({ result: 'applied' });
    const end = (await mine(t, token))[0].current_period_end;
    expect((await fake.post(body)).body).toEqual({ result: 'duplicate' });
    expect((await mine(t, token))[0].current_period_end).toBe(end);
    expect(
      stores(t)
        .billing.changes(sub.id)
        .filter((c) => c.to === 'active'),
    ).toHaveLength(1);
  });

  it('422 for another store, 200 "ignored" for an invoice the hub never made; nothing changes', async () => {
    const { token, sub } = await pending();
    fake.setStatus(sub.invoice_id, 'Settled');
    expect((await fake.deliver(sub.invoice_id, 'InvoiceSettled', { storeId: 'OtherStore' })).status).toBe(
      422,
    );
    expect((await fake.deliver('UnknownInvoice123', 'InvoiceSettled')).body).toEqual({ result: 'ignored' });
    await unchanged(token, sub);
  });

  it('422 when the settled invoice does not match the plan (amount, currency); nothing activated', async () => {
    const { token, sub } = await pending();
    Object.assign(fake.invoice(sub.invoice_id), { status: 'Settled', amount: '0.5' });
    expect((await fake.deliver(sub.invoice_id, 'InvoiceSettled')).status).toBe(422);
    Object.assign(fake.invoice(sub.invoice_id), { amount: '5.00', currency: 'EUR' });
    expect((await fake.deliver(sub.invoice_id, 'InvoiceSettled')).status).toBe(422);
    await unchanged(token, sub);
    // The right invoice still settles (trailing zeros are the same amount).
    fake.invoice(sub.invoice_id).currency = 'USD';
    expect((await fake.deliver(sub.invoice_id, 'InvoiceSettled')).body).toEqual({ result: 'applied' });
  });

  it.each(['unreachable', 'error500', 'garbage', 'slow'] as FakeMode[])(
    '503 when BTCPay is %s while a webhook is checked; the redelivery later settles it',
    async (mode) => {
      const { token, sub } = await pending();
      fake.setStatus(sub.invoice_id, 'Settled');
      fake.mode = mode;
      const first = await fake.deliver(sub.invoice_id, 'InvoiceSettled');
      expect(first.status).toBe(503);
      await unchanged(token, sub);
      fake.mode = 'ok';
      const again = await fake.redeliver(sub.invoice_id, 'InvoiceSettled', first.deliveryId);
      expect(again.body).toEqual({ result: 'applied' });
      expect((await mine(t, token))[0].status).toBe('active');
    },
  );
});
