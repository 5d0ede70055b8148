/**
 * The billing tables, defined once for both stores (docs/architecture.md "The two applications"):
 * the hub's SQLite (sqlite-schema.ts, component migration 1) and the upstream's PostgreSQL
 * (sync/upstream/db/schema.ts, migration 3) are made from the lists here, each in its own
 * dialect (src/store/ddl.ts). Times are absolute milliseconds since the epoch. Both migrations
 * are released: what they make never changes; a change is a new migration on each side.
 *
 * Where the two differ, the upstream's is the stricter: CHECKs on the states, a foreign key to
 * its own subscriptions, one pending purchase per subscriber and plan held by a unique index
 * (several processes share its rows), and an insertion `seq` on invoices.
 */
import { type ColumnDdl, columnsDdl, type SqlDialect, timeColumn } from '../store/ddl.js';

const PLAN_COLUMNS: readonly ColumnDdl[] = [
  'id TEXT PRIMARY KEY',
  'name TEXT NOT NULL',
  'price TEXT NOT NULL',
  'currency TEXT NOT NULL',
  'period_days INTEGER NOT NULL',
  // NULL: all nodes of the site; on SQLite a JSON array.
  { sqlite: 'node_ids TEXT', pg: 'node_ids TEXT[]' },
  { sqlite: 'active INTEGER NOT NULL DEFAULT 1', pg: 'active BOOLEAN NOT NULL DEFAULT true' },
  timeColumn('created_at', ' NOT NULL'),
];

const SUBSCRIPTION_COLUMNS: readonly ColumnDdl[] = [
  'id TEXT PRIMARY KEY',
  'subscriber TEXT NOT NULL',
  'plan_id TEXT NOT NULL REFERENCES billing_plans (id)',
  {
    sqlite: 'status TEXT NOT NULL',
    pg: "status TEXT NOT NULL CHECK (status IN ('pending_payment', 'active', 'past_due', 'expired', 'canceled'))",
  },
  timeColumn('current_period_end'),
  // The messaging grant this pays for: a row of the hub's subscriptions (src/messaging), or the upstream's own.
  { sqlite: 'grant_id INTEGER', pg: 'grant_id BIGINT REFERENCES subscriptions (id)' },
  timeColumn('created_at', ' NOT NULL'),
  timeColumn('updated_at', ' NOT NULL'),
];

const INVOICE_COLUMNS: readonly ColumnDdl[] = [
  'id TEXT PRIMARY KEY', // BTCPay's invoice id
  'subscription_id TEXT NOT NULL REFERENCES billing_subscriptions (id)',
  { sqlite: 'kind TEXT NOT NULL', pg: "kind TEXT NOT NULL CHECK (kind IN ('purchase', 'renewal'))" },
  {
    sqlite: 'status TEXT NOT NULL',
    pg: "status TEXT NOT NULL CHECK (status IN ('new', 'processing', 'settled', 'expired', 'invalid'))",
  },
  'amount TEXT NOT NULL',
  'currency TEXT NOT NULL',
  'checkout_link TEXT',
  timeColumn('created_at', ' NOT NULL'),
  timeColumn('updated_at', ' NOT NULL'),
  // Insertion order: the latest of two invoices made in one ms.
  { sqlite: undefined, pg: 'seq BIGSERIAL' },
];

const CHANGE_COLUMNS: readonly ColumnDdl[] = [
  { sqlite: 'seq INTEGER PRIMARY KEY AUTOINCREMENT', pg: 'seq BIGSERIAL PRIMARY KEY' },
  'subscription_id TEXT NOT NULL',
  timeColumn('at', ' NOT NULL'),
  'from_status TEXT',
  'to_status TEXT NOT NULL',
  'cause TEXT NOT NULL',
  'invoice_id TEXT',
];

const DELIVERY_COLUMNS: readonly ColumnDdl[] = [
  'delivery_id TEXT PRIMARY KEY',
  'invoice_id TEXT NOT NULL',
  'type TEXT NOT NULL',
  timeColumn('received_at', ' NOT NULL'),
];

/**
 * The statements that make the billing tables and their indexes in one database. On the
 * upstream, one pending purchase per subscriber and plan, whichever process took the request.
 */
export function billingTablesDdl(d: SqlDialect): string {
  const pg = d === 'pg';
  return `
      CREATE TABLE billing_plans (
        ${columnsDdl(PLAN_COLUMNS, d)}
      );
      CREATE TABLE billing_subscriptions (
        ${columnsDdl(SUBSCRIPTION_COLUMNS, d)}
      );
      CREATE INDEX billing_subscriptions_subscriber ON billing_subscriptions (subscriber, created_at);
      CREATE INDEX billing_subscriptions_due ON billing_subscriptions (status, current_period_end);${
        pg
          ? `
      CREATE UNIQUE INDEX billing_subscriptions_one_pending ON billing_subscriptions (subscriber, plan_id)
        WHERE status = 'pending_payment';`
          : ''
      }
      CREATE TABLE billing_invoices (
        ${columnsDdl(INVOICE_COLUMNS, d)}
      );
      CREATE INDEX billing_invoices_subscription ON billing_invoices (subscription_id, created_at${pg ? ', seq' : ''});
      CREATE INDEX billing_invoices_open ON billing_invoices ${
        pg ? "(created_at) WHERE status IN ('new', 'processing')" : '(status)'
      };
      CREATE TABLE billing_changes (
        ${columnsDdl(CHANGE_COLUMNS, d)}
      );
      CREATE INDEX billing_changes_subscription ON billing_changes (subscription_id, seq);
      CREATE TABLE billing_deliveries (
        ${columnsDdl(DELIVERY_COLUMNS, d)}
      )${pg ? '' : ' WITHOUT ROWID'};
      CREATE INDEX billing_deliveries_received ON billing_deliveries (received_at);
    `;
}
