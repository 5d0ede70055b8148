/**
 * The billing service alone, on a real SQLite database, with a Greenfield client whose answers
 * the test releases: two purchases of the same plan that overlap while BTCPay is still answering
 * make one invoice and one subscription; applied webhook deliveries are forgotten after a month.
 */
import { pino } from 'pino';
import { Counter, Gauge } from 'prom-client';
import { expect, it, vi } from 'vitest';
import { BillingService } from '../../../src/billing/billing-service.js';
import type { GreenfieldClient, GreenfieldInvoice } from '../../../src/billing/greenfield-client.js';
import { BillingMetrics } from '../../../src/billing/metrics.js';
import { DELIVERY_MEMORY_MS, PeriodExpiry } from '../../../src/billing/period-expiry.js';
import { type BillingSettings, billingConfigFrom } from '../../../src/billing/settings.js';
import { BILLING_COMPONENT, BILLING_MIGRATIONS } from '../../../src/billing/sqlite-schema.js';
import { SqliteBillingStorage } from '../../../src/billing/sqlite-storage.js';
import { HubMetrics } from '../../../src/metrics.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { openDatabase } from '../../../src/store/database.js';

it('joins a second purchase of the same plan to the one waiting for BTCPay', async () => {
  const db = openDatabase(':memory:');
  migrateComponent(db, BILLING_COMPONENT, BILLING_MIGRATIONS);
  const storage = new SqliteBillingStorage(db);
  storage.planRepository.add({
    id: 'monthly',
    name: 'Monthly',
    price: '5',
    currency: 'USD',
    periodDays: 30,
    nodes: 'all',
  });
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
  const { store } = storage;
  const service = new BillingService({
    storage,
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
    onChange: () => undefined,
    log: pino({ level: 'silent' }),
    metrics: new BillingMetrics(
      {
        counter: (c) => new Counter({ ...c, name: `x_${c.name}`, registers: [registry.registry] }),
        gauge: (c) => new Gauge({ ...c, name: `x_${c.name}`, registers: [registry.registry] }),
      },
      () => 0,
    ),
  });
  const first = service.buy('alice', 'monthly');
  const second = service.buy('alice', 'monthly');
  // BTCPay is asked once (the store is read asynchronously first), and answers only now.
  await vi.waitFor(() => expect(created).toBe(1));
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
  const expiry = new PeriodExpiry({ storage, onChange: () => undefined, graceMs: 0 });
  expect(await expiry.forgetOldDeliveries()).toBe(1);
  expect([store.wasDelivered('old'), store.wasDelivered('new')]).toEqual([false, true]);
  db.close();
});
