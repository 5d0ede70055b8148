/**
 * Issue 17: SIGKILL during billing webhooks. The built hub (child process, PLUGINS=billing) and
 * the BTCPay fake (tests/fakes/btcpay: Greenfield's invoices and its signed webhook deliveries).
 * Subscribers buy a 30-day plan; for each, a seeded script settles the invoice and fires its
 * `InvoiceSettled` webhook several times at once (BTCPay delivers, and redelivers with a new
 * delivery id), SIGKILLs the hub a random moment later, starts it again, and then redelivers as
 * BTCPay does until the hub answers 200.
 *
 * Exact counts at the end: every paid subscription is `active`, its period ends 30 days after
 * it was paid (activated once: a second activation would add another 30 days), and the hub
 * recorded one activation for each.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeBtcpay } from '../fakes/btcpay/fake-btcpay.js';
import { call, tokenFor } from '../messaging/helpers.js';
import { HubProcess, killScenario, pause, QUIET_SIM, removeDir, scratchDir } from './helpers/hub-process.js';

const { seed: SEED, rounds: ROUNDS, between } = killScenario('kill during billing webhooks');
const DAY = 86_400_000;
const SECRET = 'whsec-reliability-secret';

const fake = new FakeBtcpay({
  storeId: 'StoreA1b2C3',
  apiKey: 'greenfield-api-key-0123456789',
  webhookSecret: SECRET,
});
const dataDir = scratchDir('billing');
let hub: HubProcess;

beforeAll(async () => {
  await fake.start();
  hub = new HubProcess({
    dataDir,
    env: {
      ...QUIET_SIM,
      PLUGINS: 'billing',
      BTCPAY_URL: fake.url,
      BTCPAY_STORE_ID: 'StoreA1b2C3',
      BTCPAY_API_KEY: 'greenfield-api-key-0123456789',
      BTCPAY_WEBHOOK_SECRET: SECRET,
      BTCPAY_ALLOW_PRIVATE_NETWORK: 'true',
      BTCPAY_TIMEOUT_MS: '2000',
      BILLING_POLL_CRON: '0 0 1 1 *',
      BILLING_EXPIRY_CRON: '0 0 1 1 *',
    },
  });
  hub.userToken('operator', ['admin']);
  for (let i = 0; i < ROUNDS; i++)
    hub.cli(['user', 'add', `payer${i}`, '--password-stdin'], 'payer-password-1\n');
  await hub.start();
  fake.webhookUrl = `${hub.baseUrl}/api/v1/billing/webhooks/btcpay`;
});

afterAll(async () => {
  await hub?.kill();
  await fake.stop();
  removeDir(dataDir);
});

describe('SIGKILL during billing webhooks (the built hub as a child process, the BTCPay fake)', () => {
  it(`activates every paid subscription exactly once (seed ${SEED}, ${ROUNDS} kills)`, async () => {
    const admin = await tokenFor(hub.baseUrl, 'operator', 'operator-password-1');
    const plan = await call(hub.baseUrl, 'POST', '/api/v1/billing/plans', {
      token: admin,
      body: { id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', period_days: 30 },
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);

    const paid: { user: string; token: string; subscription: string; paidAt: number }[] = [];
    const script: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const user = `payer${round}`;
      const token = await tokenFor(hub.baseUrl, user, 'payer-password-1');
      const bought = await call(hub.baseUrl, 'POST', '/api/v1/billing/subscriptions', {
        token,
        body: { plan_id: 'monthly' },
      });
      expect(bought.status, JSON.stringify(bought.body)).toBe(201);
      const invoice = bought.body.invoice_id as string;
      fake.setStatus(invoice, 'Settled');
      const paidAt = Date.now();
      // BTCPay delivers; a redelivery may race it. The kill lands somewhere among them.
      const first = fake.payload(invoice, 'InvoiceSettled');
      const copies = between(1, 4);
      const deliveries = Array.from({ length: copies }, (_, k) =>
        fake
          .post(
            JSON.stringify(
              k === 0
                ? first
                : fake.payload(invoice, 'InvoiceSettled', { originalDeliveryId: first.deliveryId as string }),
            ),
          )
          .then((r) => r.status)
          .catch(() => 'no answer'),
      );
      const killAfter = between(0, 12);
      await pause(killAfter);
      await hub.kill();
      const outcomes = await Promise.all(deliveries);
      script.push(`${copies}×@${killAfter}ms→${outcomes.join('/')}`);
      await hub.start();
      // BTCPay redelivers until it gets a 200 (and once more, sometimes, after it did).
      let status: number | string = 0;
      for (let attempt = 0; attempt < 10 && status !== 200; attempt++) {
        status = (await fake.redeliver(invoice, 'InvoiceSettled', first.deliveryId as string)).status;
      }
      expect(status).toBe(200);
      if (between(0, 2) === 0)
        expect((await fake.redeliver(invoice, 'InvoiceSettled', first.deliveryId as string)).status).toBe(
          200,
        );
      paid.push({ user, token, subscription: bought.body.id as string, paidAt });
    }

    // Every paid subscription active, its period 30 days from payment: activated once.
    for (const p of paid) {
      const mine = (await call(hub.baseUrl, 'GET', '/api/v1/billing/subscriptions', { token: p.token })).body
        .data as {
        id: string;
        status: string;
        current_period_end: string;
      }[];
      expect(mine.length, p.user).toBe(1);
      expect(mine[0]!.id).toBe(p.subscription);
      expect(mine[0]!.status).toBe('active');
      const end = Date.parse(mine[0]!.current_period_end);
      expect(end).toBeGreaterThanOrEqual(p.paidAt + 30 * DAY - 5_000);
      expect(end).toBeLessThanOrEqual(Date.now() + 30 * DAY);
    }
    // One recorded activation per subscription (billing_changes: every status change, with its cause).
    const db = new Database(join(dataDir, 'meshhub.sqlite'), { readonly: true });
    let activations: { subscription_id: string; n: number }[];
    try {
      activations = db
        .prepare(
          "SELECT subscription_id, count(*) AS n FROM billing_changes WHERE to_status = 'active' GROUP BY subscription_id",
        )
        .all() as { subscription_id: string; n: number }[];
    } finally {
      db.close();
    }
    expect(activations.filter((a) => a.n !== 1)).toEqual([]);
    expect(activations.map((a) => a.subscription_id).sort()).toEqual(paid.map((p) => p.subscription).sort());
    console.log(
      `[reliability] kill during billing webhooks: ${ROUNDS} kills (${script.join(', ')}); ${paid.length} subscriptions paid, ` +
        `each active for exactly 30 days, ${activations.length} activations recorded, one each`,
    );
  }, 600_000);
});
