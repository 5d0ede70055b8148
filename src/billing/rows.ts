/**
 * The billing tables' rows as both stores read them (the same columns in the hub's SQLite file,
 * sqlite-schema.ts, and on the upstream's PostgreSQL, sync/upstream/db/schema.ts), and the one
 * mapping of each to the service's types. PostgreSQL hands BIGINT columns over as strings, its
 * arrays and booleans as such; SQLite numbers, JSON text and 0/1: the mappers take either.
 */
import type {
  BillingInvoice,
  BillingStatus,
  BillingSubscription,
  InvoiceKind,
  InvoiceStatus,
} from './billing-repository.js';
import type { Plan } from './plans.js';

type Int = number | string;

export interface SubRow {
  id: string;
  subscriber: string;
  plan_id: string;
  status: BillingStatus;
  current_period_end: Int | null;
  grant_id: Int | null;
  created_at: Int;
  updated_at: Int;
}

export interface InvoiceRow {
  id: string;
  subscription_id: string;
  kind: InvoiceKind;
  status: InvoiceStatus;
  amount: string;
  currency: string;
  checkout_link: string | null;
  created_at: Int;
  updated_at: Int;
}

export interface PlanRow {
  id: string;
  name: string;
  price: string;
  currency: string;
  period_days: number;
  /** A JSON array (SQLite) or an array (PostgreSQL); null: all nodes of the site. */
  node_ids: string | string[] | null;
  active: number | boolean;
  created_at: Int;
}

const numOrNull = (v: Int | null): number | null => (v === null ? null : Number(v));

export const subscriptionOf = (r: SubRow): BillingSubscription => ({
  id: r.id,
  subscriber: r.subscriber,
  planId: r.plan_id,
  status: r.status,
  currentPeriodEnd: numOrNull(r.current_period_end),
  grantId: numOrNull(r.grant_id),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

export const invoiceOf = (r: InvoiceRow): BillingInvoice => ({
  id: r.id,
  subscriptionId: r.subscription_id,
  kind: r.kind,
  status: r.status,
  amount: r.amount,
  currency: r.currency,
  checkoutLink: r.checkout_link,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

export const planOf = (r: PlanRow): Plan => ({
  id: r.id,
  name: r.name,
  price: r.price,
  currency: r.currency,
  periodDays: r.period_days,
  nodes:
    r.node_ids === null
      ? 'all'
      : typeof r.node_ids === 'string'
        ? (JSON.parse(r.node_ids) as string[])
        : r.node_ids,
  active: r.active === 1 || r.active === true,
  createdAt: Number(r.created_at),
});
