/**
 * The billing service alone, on a real SQLite database, with a Greenfield client whose answers
 * the test releases: two purchases of the same plan that overlap while BTCPay is still answering
 * make one invoice and one subscription; applied webhook deliveries are forgotten after a month.
 */
import { pino } from 'pino';
import { Counter, Gauge, Histogram } from 'prom-client';
import { expect, it } from 'vitest';
import { BillingService } from '../../../plugins/billing/billing-service.js';
import { BillingStore } from '../../../plugins/billing/billing-store.js';
import { type BillingSettings, billingConfigFrom } from '../../../plugins/billing/config.js';
import type { GreenfieldClient, GreenfieldInvoice } from '../../../plugins/billing/greenfield-client.js';
import { BillingMetrics } from '../../../plugins/billing/metrics.js';
import { DELIVERY_MEMORY_MS, PeriodExpiry } from '../../../plugins/billing/period-expiry.js';
import { PlanRepository } from '../../../plugins/billing/plans.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from '../../../plugins/billing/schema.js';
import type { HubBus } from '../../../src/events.js';
import { RETAINED_EVENTS } from '../../../src/events.js';
import { Bus } from '../../../src/kernel/bus.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { HubMetrics } from '../../../src/metrics.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { openDatabase } from '../../../src/store/database.js';

it('joins a second purchase of the same plan to the one waiting for BTCPay', async () => {
  const db = openDatabase(':memory:');
  migrateComponent(db, BILLING_COMPONENT, BILLING_MIGRATIONS);
  const plans = new PlanRepository(db);
  plans.add({ id: 'monthly', name: 'Monthly', price: '5', currency: 'USD', periodDays: 30, nodes: 'all' });
  let release: (invoice: GreenfieldInvoice) => void = () => undefined;
  let created = 0;
  const client = {
    createInvoice: () => {
      created++;
      return new Promise<GreenfieldInvoice>((r) => {
        release = r;
      });
    },
  } as unknown as GreenfieldClient;
  const registry = new HubMetrics({ defaultMetrics: false });
  const store = new BillingStore(db);
  const service = new BillingService({
    store,
    plans,
    grants: new SubscriptionRepository(db),
    client,
    config: billingConfigFrom({
      BTCPAY_URL: 'https://btcpay.example.org',
      BTCPAY_STORE_ID: 'S',
      BTCPAY_API_KEY: 'k',
      BTCPAY_WEBHOOK_SECRET: 'secret-secret',
      BTCPAY_ALLOW_PRIVATE_NETWORK: false,
      BTCPAY_TIMEOUT_MS: 1000,
      BILLING_GRACE_HOURS: 24,
      BILLING_POLL_CRON: '* * * * *',
      BILLING_EXPIRY_CRON: '* * * * *',
    } satisfies BillingSettings),
    bus: new Bus({ retained: RETAINED_EVENTS }) as HubBus,
    log: pino({ level: 'silent' }),
    metrics: new BillingMetrics(
      {
        prefix: 'x_',
        counter: (c) => new Counter({ ...c, name: `x_${c.name}`, registers: [registry.registry] }),
        gauge: (c) => new Gauge({ ...c, name: `x_${c.name}`, registers: [registry.registry] }),
        histogram: (c) => new Histogram({ ...c, name: `x_${c.name}`, registers: [registry.registry] }),
        onRender: () => () => undefined,
        core: registry,
      },
      () => 0,
    ),
  });
  const first = service.buy('alice', 'monthly');
  const second = service.buy('alice', 'monthly');
  release({
    id: 'inv1',
    storeId: 'S',
    amount: '5',
    currency: 'USD',
    status: 'New',
    checkoutLink: 'https://x/i/inv1',
  });
  const [a, b] = await Promise.all([first, second]);
  expect(created).toBe(1);
  expect(a).toMatchObject({ created: true });
  expect(b).toMatchObject({ created: false, subscription: { id: a.subscription.id } });
  expect(store.subscriptions('alice')).toHaveLength(1);

  // Applied deliveries are remembered for a month, then forgotten.
  store.recordDelivery('old', 'inv1', 'InvoiceSettled', Date.now() - DELIVERY_MEMORY_MS - 1);
  store.recordDelivery('new', 'inv1', 'InvoiceSettled', Date.now());
  const expiry = new PeriodExpiry({
    store,
    bus: new Bus({ retained: RETAINED_EVENTS }) as HubBus,
    graceMs: 0,
  });
  expect(await expiry.forgetOldDeliveries()).toBe(1);
  expect([store.wasDelivered('old'), store.wasDelivered('new')]).toEqual([false, true]);
  db.close();
});
