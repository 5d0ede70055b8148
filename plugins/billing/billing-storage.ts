/**
 * One billing state machine, two stores (docs/sync.md "Billing on the upstream"). The rules live
 * in billing-service.ts and period-expiry.ts; what they read and write goes through
 * `BillingStorage`, which a hub implements over its SQLite file (`SqliteBillingStorage`, here)
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

import { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import type { Database } from '../../src/store/database.js';
import type {
  BillingChangeRow,
  BillingInvoice,
  BillingStatus,
  BillingSubscription,
  InvoiceStatus,
} from './billing-store.js';
import { BillingStore } from './billing-store.js';
import type { NewPlan, Plan } from './plans.js';
import { PlanRepository } from './plans.js';

export type NewInvoice = Omit<BillingInvoice, 'updatedAt'>;

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
  startPurchase(input: {
    id: string;
    subscriber: string;
    planId: string;
    invoice: NewInvoice;
    cause: string;
    at: number;
  }): Promise<{ subscription: BillingSubscription; created: boolean }>;
  addInvoice(invoice: NewInvoice): Promise<void>;
  /**
   * Applies a fetched invoice atomically (see the file's comment); undefined for an invoice this
   * store does not know.
   */
  applyInvoice(
    invoiceId: string,
    delivery: { id: string; type: string } | undefined,
    at: number,
    decide: (state: InvoiceState) => InvoiceDecision | undefined,
  ): Promise<AppliedInvoice | undefined>;
  /**
   * Moves up to `limit` subscriptions of the step, soonest ended first, each with its change
   * row, atomically; returns them as they were before. A row another transaction holds is left
   * for the next run.
   */
  moveDue(step: DueStep, at: number, limit: number): Promise<BillingSubscription[]>;
}

class SqlitePlans implements PlanStorage {
  constructor(private readonly repo: PlanRepository) {}
  async get(id: string) {
    return this.repo.get(id);
  }
  async list(options?: { activeOnly?: boolean }) {
    return this.repo.list(options);
  }
  async add(plan: NewPlan, at?: number) {
    return this.repo.add(plan, at);
  }
  async retire(id: string) {
    return this.repo.retire(id);
  }
}

/**
 * The hub's store: its SQLite file through BillingStore and PlanRepository, messaging grants
 * through the messaging subscription repository (the rows the CLI grants). Each call runs to its
 * end synchronously (better-sqlite3), so one call is one transaction on the hub's connection.
 */
export class SqliteBillingStorage implements BillingStorage {
  readonly store: BillingStore;
  readonly planRepository: PlanRepository;
  readonly plans: PlanStorage;
  private readonly grants: SubscriptionRepository;

  constructor(private readonly db: Database) {
    this.store = new BillingStore(db);
    this.planRepository = new PlanRepository(db);
    this.plans = new SqlitePlans(this.planRepository);
    this.grants = new SubscriptionRepository(db);
  }

  private atomically<R>(fn: () => R): R {
    return this.db.transaction(fn).immediate();
  }

  async subscription(id: string) {
    return this.store.subscription(id);
  }
  async subscriptions(subscriber?: string) {
    return this.store.subscriptions(subscriber);
  }
  async pendingPurchase(subscriber: string, planId: string) {
    return this.store.pendingPurchase(subscriber, planId);
  }
  async invoice(id: string) {
    return this.store.invoice(id);
  }
  async latestInvoice(subscriptionId: string) {
    return this.store.latestInvoice(subscriptionId);
  }
  async latestInvoices(subscriptionIds: readonly string[]) {
    const out = new Map<string, BillingInvoice>();
    for (const id of subscriptionIds) {
      const latest = this.store.latestInvoice(id);
      if (latest) out.set(id, latest);
    }
    return out;
  }
  async openInvoices(limit: number) {
    return this.store.openInvoices(limit);
  }
  async changes(subscriptionId: string) {
    return this.store.changes(subscriptionId);
  }
  async wasDelivered(deliveryId: string) {
    return this.store.wasDelivered(deliveryId);
  }
  async countPaid() {
    return this.store.countPaid();
  }
  async pruneDeliveries(before: number, limit: number) {
    return this.store.pruneDeliveries(before, limit);
  }

  async startPurchase(input: {
    id: string;
    subscriber: string;
    planId: string;
    invoice: NewInvoice;
    cause: string;
    at: number;
  }) {
    const { store } = this;
    return this.atomically(() => {
      const pending = store.pendingPurchase(input.subscriber, input.planId);
      if (pending) return { subscription: pending, created: false };
      store.insertSubscription(input.id, input.subscriber, input.planId, input.at);
      store.insertInvoice(input.invoice);
      store.recordChange({
        subscriptionId: input.id,
        at: input.at,
        from: null,
        to: 'pending_payment',
        cause: input.cause,
        invoiceId: input.invoice.id,
      });
      return { subscription: store.subscription(input.id)!, created: true };
    });
  }

  async addInvoice(invoice: NewInvoice) {
    this.store.insertInvoice(invoice);
  }

  async applyInvoice(
    invoiceId: string,
    delivery: { id: string; type: string } | undefined,
    at: number,
    decide: (state: InvoiceState) => InvoiceDecision | undefined,
  ): Promise<AppliedInvoice | undefined> {
    const { store, grants } = this;
    return this.atomically((): AppliedInvoice | undefined => {
      const invoice = store.invoice(invoiceId);
      if (!invoice) return undefined;
      const before = store.subscription(invoice.subscriptionId)!;
      const plan = this.planRepository.get(before.planId)!;
      if (delivery) store.recordDelivery(delivery.id, invoiceId, delivery.type, at);
      const decision = decide({ invoice, subscription: before, plan });
      if (!decision) return { decision, invoice, before, after: before };
      store.setInvoiceStatus(invoiceId, decision.invoiceStatus, at);
      if (decision.paid) {
        const { paid } = decision;
        if (before.grantId === null) {
          const grant = grants.create({
            subscriber: before.subscriber,
            nodes: paid.nodes,
            status: 'active',
            expiresAt: paid.grantUntil,
            source: 'billing',
            reference: before.id,
            at,
          });
          store.setGrant(before.id, grant.id);
        } else {
          grants.setExpiry(before.grantId, paid.grantUntil, at);
          grants.setStatus(before.grantId, 'active', at);
        }
        store.setPeriod(before.id, decision.status, paid.periodEnd, at);
      } else if (decision.status !== before.status) {
        store.setStatus(before.id, decision.status, at);
      }
      store.recordChange({
        subscriptionId: before.id,
        at,
        from: before.status,
        to: decision.status,
        cause: decision.cause,
        invoiceId,
      });
      return { decision, invoice, before, after: store.subscription(before.id)! };
    });
  }

  async moveDue(step: DueStep, at: number, limit: number) {
    const { store } = this;
    return this.atomically(() => {
      const batch = store.due(step.from, step.before, limit);
      for (const sub of batch) {
        store.setStatus(sub.id, step.to, at);
        store.recordChange({
          subscriptionId: sub.id,
          at,
          from: step.from,
          to: step.to,
          cause: step.cause,
          invoiceId: null,
        });
      }
      return batch;
    });
  }
}
