/**
 * The billing plugin's tables, owned through component migrations (src/store/component-migrations.ts).
 * Times are absolute milliseconds since the epoch, so expiry is exact across restarts.
 */
import type { ComponentMigration } from '../store/component-migrations.js';

export const BILLING_COMPONENT = 'billing';

export const BILLING_MIGRATIONS: readonly ComponentMigration[] = [
  {
    version: 1,
    name: 'plans, subscriptions, invoices, changes, deliveries',
    up: `
      CREATE TABLE billing_plans (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        price TEXT NOT NULL,
        currency TEXT NOT NULL,
        period_days INTEGER NOT NULL,
        node_ids TEXT,            -- JSON array; NULL: all nodes of the site
        active INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL
      );
      CREATE TABLE billing_subscriptions (
        id TEXT PRIMARY KEY,
        subscriber TEXT NOT NULL,
        plan_id TEXT NOT NULL REFERENCES billing_plans(id),
        status TEXT NOT NULL,
        current_period_end INTEGER,
        grant_id INTEGER,         -- the row in subscriptions (src/messaging) this pays for
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX billing_subscriptions_subscriber ON billing_subscriptions (subscriber, created_at);
      CREATE INDEX billing_subscriptions_due ON billing_subscriptions (status, current_period_end);
      CREATE TABLE billing_invoices (
        id TEXT PRIMARY KEY,      -- BTCPay's invoice id
        subscription_id TEXT NOT NULL REFERENCES billing_subscriptions(id),
        kind TEXT NOT NULL,       -- purchase | renewal
        status TEXT NOT NULL,     -- new | processing | settled | expired | invalid
        amount TEXT NOT NULL,
        currency TEXT NOT NULL,
        checkout_link TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX billing_invoices_subscription ON billing_invoices (subscription_id, created_at);
      CREATE INDEX billing_invoices_open ON billing_invoices (status);
      CREATE TABLE billing_changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        subscription_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        from_status TEXT,
        to_status TEXT NOT NULL,
        cause TEXT NOT NULL,
        invoice_id TEXT
      );
      CREATE INDEX billing_changes_subscription ON billing_changes (subscription_id, seq);
      CREATE TABLE billing_deliveries (
        delivery_id TEXT PRIMARY KEY,
        invoice_id TEXT NOT NULL,
        type TEXT NOT NULL,
        received_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX billing_deliveries_received ON billing_deliveries (received_at);
    `,
  },
];
