/**
 * The hub's billing store over its SQLite file: the `BillingStorage` of billing-storage.ts
 * (docs/architecture.md "The two applications"; the upstream's is sync/upstream/billing/pg-storage.ts).
 */
import { SubscriptionRepository } from '../messaging/subscription-repository.js';
import type { Database } from '../store/database.js';
import { type BillingInvoice, BillingRepository } from './billing-repository.js';
import type * as storage from './billing-storage.js';
import { decidedChange, purchaseStartedChange } from './billing-storage.js';
import { type NewPlan, PlanRepository } from './plans.js';

class SqlitePlans implements storage.PlanStorage {
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
 * The hub's store: its SQLite file through BillingRepository and PlanRepository, messaging grants
 * through the messaging subscription repository (the rows the CLI grants). Each call runs to its
 * end synchronously (better-sqlite3), so one call is one transaction on the hub's connection.
 */
export class SqliteBillingStorage implements storage.BillingStorage {
  readonly store: BillingRepository;
  readonly planRepository: PlanRepository;
  readonly plans: storage.PlanStorage;
  private readonly grants: SubscriptionRepository;

  constructor(private readonly db: Database) {
    this.store = new BillingRepository(db);
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

  async startPurchase(input: storage.PurchaseStart) {
    const { store } = this;
    return this.atomically(() => {
      const pending = store.pendingPurchase(input.subscriber, input.planId);
      if (pending) return { subscription: pending, created: false };
      store.insertSubscription(input.id, input.subscriber, input.planId, input.at);
      store.insertInvoice(input.invoice);
      store.recordChange(purchaseStartedChange(input));
      return { subscription: store.subscription(input.id)!, created: true };
    });
  }

  async addInvoice(invoice: storage.NewInvoice) {
    this.store.insertInvoice(invoice);
  }

  async applyInvoice(
    invoiceId: string,
    delivery: storage.WebhookDelivery | undefined,
    at: number,
    decide: storage.DecideInvoice,
  ): Promise<storage.AppliedInvoice | undefined> {
    const { store, grants } = this;
    return this.atomically((): storage.AppliedInvoice | undefined => {
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
      store.recordChange(decidedChange(before, decision, invoiceId, at));
      return { decision, invoice, before, after: store.subscription(before.id)! };
    });
  }

  async moveDue(step: storage.DueStep, at: number, limit: number) {
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
