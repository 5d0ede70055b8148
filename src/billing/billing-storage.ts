/**
 * One billing state machine, two stores (docs/sync.md "Billing on the upstream"). The rules live
 * in billing-service.ts and period-expiry.ts; what they read and write goes through
 * `BillingStorage`, which a hub implements over its SQLite file (`SqliteBillingStorage`, sqlite-storage.ts)
 * and the upstream over PostgreSQL (sync/upstream/billing/pg-storage.ts), where several
 * processes share the rows.
 *
 * Every write that belongs together is ONE call, so each store makes it atomic its own way: a
 * hub in one `BEGIN IMMEDIATE` transaction on its one connection, the upstream in one PostgreSQL
 * transaction with row locks. `applyInvoice` is the heart: it locks the invoice and its
 * subscription, records the webhook delivery, asks the service's `decide` (a pure function of
 * the rows it read) what changes, and writes that — so two processes given the same webhook at
 * once apply it once (the second finds the invoice moved already and `decide` says nothing).
 */

import type {
  BillingChangeRow,
  BillingInvoice,
  BillingStatus,
  BillingSubscription,
  InvoiceStatus,
} from './billing-repository.js';
import type { NewPlan, Plan } from './plans.js';

export type NewInvoice = Omit<BillingInvoice, 'updatedAt'>;

/** A new purchase: the subscription's id, who buys which plan, its invoice and first change. */
export interface PurchaseStart {
  id: string;
  subscriber: string;
  planId: string;
  invoice: NewInvoice;
  cause: string;
  at: number;
}

/** The rows `decide` sees, read under the transaction's locks. */
export interface InvoiceState {
  invoice: BillingInvoice;
  subscription: BillingSubscription;
  plan: Plan;
}

/** What applying a fetched invoice changes: decided by the service, written by the store. */
export interface InvoiceDecision {
  invoiceStatus: InvoiceStatus;
  /** The subscription's status after (the same one for news only: payment seen). */
  status: BillingStatus;
  /**
   * A settlement: the new period end, and until when the messaging grant lets the subscriber
   * text the plan's nodes (period end + grace). The store creates the grant (source `billing`,
   * reference = the billing subscription id) or extends the one it made before.
   */
  paid?: { periodEnd: number; grantUntil: number; nodes: 'all' | readonly string[] };
  cause: string;
}

/** The service's rule for a fetched invoice, run by the store under its locks. */
export type DecideInvoice = (state: InvoiceState) => InvoiceDecision | undefined;

/** A BTCPay webhook delivery, recorded with the invoice it moved (a replay is then a duplicate). */
export interface WebhookDelivery {
  id: string;
  type: string;
}

export interface AppliedInvoice {
  /** undefined: the invoice was where BTCPay says already; only the delivery was recorded. */
  decision: InvoiceDecision | undefined;
  invoice: BillingInvoice;
  before: BillingSubscription;
  after: BillingSubscription;
}

/** One step of the paid periods' clock: `from` past `before` → `to`. */
export interface DueStep {
  from: BillingStatus;
  to: BillingStatus;
  before: number;
  cause: string;
}

export interface PlanStorage {
  get(id: string): Promise<Plan | undefined>;
  list(options?: { activeOnly?: boolean }): Promise<Plan[]>;
  /** Throws PlanError naming the field; the id must be new. */
  add(plan: NewPlan, at?: number): Promise<Plan>;
  /** True when the plan was active and is now retired. */
  retire(id: string): Promise<boolean>;
}

export interface BillingStorage {
  readonly plans: PlanStorage;

  subscription(id: string): Promise<BillingSubscription | undefined>;
  /** The subscriber's (or, undefined, everyone's) subscriptions, oldest first. */
  subscriptions(subscriber?: string): Promise<BillingSubscription[]>;
  pendingPurchase(subscriber: string, planId: string): Promise<BillingSubscription | undefined>;
  invoice(id: string): Promise<BillingInvoice | undefined>;
  latestInvoice(subscriptionId: string): Promise<BillingInvoice | undefined>;
  /** The latest invoice of each of these subscriptions. */
  latestInvoices(subscriptionIds: readonly string[]): Promise<Map<string, BillingInvoice>>;
  openInvoices(limit: number): Promise<BillingInvoice[]>;
  changes(subscriptionId: string): Promise<BillingChangeRow[]>;
  wasDelivered(deliveryId: string): Promise<boolean>;
  /** Paid subscriptions that may message now (active or past due). */
  countPaid(): Promise<number>;
  /** Forgets up to `limit` deliveries received before `before`; returns how many. */
  pruneDeliveries(before: number, limit: number): Promise<number>;

  /**
   * A new `pending_payment` subscription with its purchase invoice and first change, atomically;
   * unless the subscriber has a pending purchase of the plan already (made meanwhile, by another
   * process): then that one, `created: false`, and nothing is written.
   */
  startPurchase(input: PurchaseStart): Promise<{ subscription: BillingSubscription; created: boolean }>;
  addInvoice(invoice: NewInvoice): Promise<void>;
  /**
   * Applies a fetched invoice atomically (see the file's comment); undefined for an invoice this
   * store does not know.
   */
  applyInvoice(
    invoiceId: string,
    delivery: WebhookDelivery | undefined,
    at: number,
    decide: DecideInvoice,
  ): Promise<AppliedInvoice | undefined>;
  /**
   * Moves up to `limit` subscriptions of the step, soonest ended first, each with its change
   * row, atomically; returns them as they were before. A row another transaction holds is left
   * for the next run.
   */
  moveDue(step: DueStep, at: number, limit: number): Promise<BillingSubscription[]>;
}

/** A purchase's first change: none → `pending_payment`, with its invoice (both stores record it). */
export function purchaseStartedChange(input: PurchaseStart): BillingChangeRow {
  return {
    subscriptionId: input.id,
    at: input.at,
    from: null,
    to: 'pending_payment',
    cause: input.cause,
    invoiceId: input.invoice.id,
  };
}

/** The change a decision on an invoice makes to its subscription (both stores record it). */
export function decidedChange(
  before: BillingSubscription,
  decision: InvoiceDecision,
  invoiceId: string,
  at: number,
): BillingChangeRow {
  return {
    subscriptionId: before.id,
    at,
    from: before.status,
    to: decision.status,
    cause: decision.cause,
    invoiceId,
  };
}
