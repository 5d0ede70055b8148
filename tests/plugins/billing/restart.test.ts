/**
 * Restarts in every state (pending, active, past due, expired) over one data directory: the
 * state, the period end and the right to message are what they were, and a period that ended
 * while the hub was down is moved along at start, not at the next scheduled tick.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FakeBtcpay } from '../../fakes/btcpay/fake-btcpay.js';
import { tokenFor } from '../../messaging/helpers.js';
import {
  addPlan,
  type BillingHub,
  buy,
  endPeriodAt,
  fakeBtcpay,
  knownNodes,
  mine,
  sendText,
  startBillingHub,
  userToken,
} from './helpers.js';

const GRACE = 24 * 3_600_000;
let fake: FakeBtcpay;
let t: BillingHub;

beforeAll(async () => {
  fake = fakeBtcpay();
  await fake.start();
  t = await startBillingHub(fake);
});
afterAll(async () => {
  await t?.stop();
  await fake?.stop();
});

async function restart(): Promise<void> {
  await t.halt();
  t = await startBillingHub(fake, { dataDir: t.dataDir });
}

it('keeps every state across restarts, and expires at start what ended while down', async () => {
  const nodes = await knownNodes(t, 2);
  const admin = await userToken(t, 'operator', ['admin']);
  await addPlan(t, admin, { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 });
  for (const u of ['pend', 'act', 'due', 'gone']) await userToken(t, u);
  const token = async (u: string) => tokenFor(t.baseUrl, u);
  const ids: Record<string, string> = {};
  for (const u of ['pend', 'act', 'due', 'gone']) {
    const bought = await buy(t, await token(u), 'monthly');
    ids[u] = bought.body.id;
    if (u !== 'pend') await fake.pay(bought.body.invoice_id);
  }
  endPeriodAt(t, ids.due!, Date.now() - 3_600_000, GRACE);
  endPeriodAt(t, ids.gone!, Date.now() - GRACE - 60_000, GRACE);
  await t.hub.scheduler.runNow('billing.expiry');
  const before: Record<string, unknown> = {};
  for (const u of Object.keys(ids)) before[u] = (await mine(t, await token(u)))[0];
  expect(
    Object.fromEntries(Object.entries(before).map(([u, s]) => [u, (s as { status: string }).status])),
  ).toEqual({
    pend: 'pending_payment',
    act: 'active',
    due: 'past_due',
    gone: 'expired',
  });

  await restart();
  await knownNodes(t, 2);
  for (const u of Object.keys(ids)) expect((await mine(t, await token(u)))[0]).toEqual(before[u]);
  expect((await sendText(t, await token('pend'), nodes[0]!)).status).toBe(403);
  expect((await sendText(t, await token('act'), nodes[0]!)).status).toBe(202);
  expect((await sendText(t, await token('due'), nodes[0]!)).status).toBe(202);
  expect((await sendText(t, await token('gone'), nodes[0]!)).status).toBe(403);
  // The pending one still settles after the restart.
  const pendingInvoice = (before.pend as { invoice_id: string }).invoice_id;
  await fake.pay(pendingInvoice);
  expect((await mine(t, await token('pend')))[0].status).toBe('active');

  // While the hub is down, "act" runs out and "due" passes its grace: both move at start.
  endPeriodAt(t, ids.act!, Date.now() - 60_000, GRACE);
  endPeriodAt(t, ids.due!, Date.now() - GRACE - 1_000, GRACE);
  await restart();
  expect((await mine(t, await token('act')))[0].status).toBe('past_due');
  expect((await mine(t, await token('due')))[0].status).toBe('expired');
});
