/**
 * The billing state machine (issue 11). A subscription is `pending_payment` until its purchase
 * invoice settles, then `active` until `current_period_end`, `past_due` for the grace period
 * (still messaging), then `expired`; an unpaid purchase invoice that expires or turns invalid
 * leaves it `canceled`. Only a fetched invoice moves money state: the webhook body says no more
 * than "look at this invoice", so redeliveries and events out of order end in the state BTCPay
 * holds. Every change is stored with its time and cause, then announced on the bus.
 *
 * Messaging rights live in the messaging subscription row (source `billing`, reference = the
 * billing subscription id) with `expires_at` = period end + grace: a lapse is exact without any
 * job running; the expiry job only moves the billing status along.
 */
import { randomBytes } from 'node:crypto';
import type { HubBus } from '../../src/events.js';
import { ProblemError } from '../../src/http/problem.js';
import type { Logger } from '../../src/log.js';
import type { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import { announceChange } from './billing-changes.js';
import type {
  BillingInvoice,
  BillingStatus,
  BillingStore,
  BillingSubscription,
  InvoiceStatus,
} from './billing-store.js';
import type { BillingConfig } from './config.js';
import {
  BtcpayUnavailableError,
  type GreenfieldClient,
  type GreenfieldInvoice,
  type GreenfieldStatus,
  sameAmount,
} from './greenfield-client.js';
import type { BillingMetrics } from './metrics.js';
import type { Plan, PlanRepository } from './plans.js';

const DAY_MS = 86_400_000;
const STATUS_OF: Record<GreenfieldStatus, InvoiceStatus> = {
  New: 'new',
  Processing: 'processing',
  Settled: 'settled',
  Expired: 'expired',
  Invalid: 'invalid',
};
/** Seconds a client should wait after BTCPay could not be reached. */
export const RETRY_AFTER_SECONDS = 30;

export type InvoiceOutcome = 'applied' | 'unchanged' | 'unknown_invoice' | 'other_store' | 'mismatch';

export interface BillingServiceDeps {
  store: BillingStore;
  plans: PlanRepository;
  grants: SubscriptionRepository;
  client: GreenfieldClient;
  config: BillingConfig;
  bus: HubBus;
  log: Logger;
  metrics: BillingMetrics;
  now?: () => number;
}

export function unavailable(error: BtcpayUnavailableError): ProblemError {
  return new ProblemError(503, `payments are unavailable right now: ${error.reason}; try again later`, {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  });
}

export class BillingService {
  private readonly now: () => number;
  /** Purchases waiting for BTCPay, by subscriber and plan: a second request joins the first. */
  private readonly buying = new Map<
    string,
    Promise<{ subscription: BillingSubscription; created: boolean }>
  >();

  constructor(private readonly deps: BillingServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  private get store(): BillingStore {
    return this.deps.store;
  }

  private atomically<R>(fn: () => R): R {
    return this.store.db.transaction(fn).immediate();
  }

  plan(planId: string): Plan {
    const plan = this.deps.plans.get(planId);
    if (!plan)
      throw new ProblemError(404, `no plan "${planId}"`, {
        errors: [{ field: 'plan_id', message: 'unknown plan' }],
      });
    return plan;
  }

  /** Starts a purchase: a subscription `pending_payment` with a new invoice, or the pending one already there. */
  async buy(
    subscriber: string,
    planId: string,
  ): Promise<{ subscription: BillingSubscription; created: boolean }> {
    const plan = this.plan(planId);
    if (!plan.active) {
      throw new ProblemError(409, `the plan "${planId}" is retired and can no longer be bought`, {
        errors: [{ field: 'plan_id', message: 'retired plan' }],
      });
    }
    const existing = this.store.pendingPurchase(subscriber, planId);
    if (existing) return { subscription: existing, created: false };
    const key = `${subscriber}\u0000${planId}`;
    const inFlight = this.buying.get(key);
    if (inFlight) return { subscription: (await inFlight).subscription, created: false };
    const started = this.startPurchase(subscriber, plan).finally(() => this.buying.delete(key));
    this.buying.set(key, started);
    return started;
  }

  private async startPurchase(
    subscriber: string,
    plan: Plan,
  ): Promise<{ subscription: BillingSubscription; created: boolean }> {
    const id = `sub_${randomBytes(8).toString('hex')}`;
    const invoice = await this.createInvoice(id, subscriber, plan, 'purchase');
    const at = this.now();
    this.atomically(() => {
      this.store.insertSubscription(id, subscriber, plan.id, at);
      this.storeInvoice(invoice, id, 'purchase', at);
      this.store.recordChange({
        subscriptionId: id,
        at,
        from: null,
        to: 'pending_payment',
        cause: 'purchase started',
        invoiceId: invoice.id,
      });
    });
    const subscription = this.store.subscription(id)!;
    this.announce(subscription, null, 'purchase started', invoice.id, at);
    return { subscription, created: true };
  }

  /** A new invoice for the next period (active, past due or expired subscriptions); an open one is returned as is. */
  async renew(subscription: BillingSubscription): Promise<BillingSubscription> {
    if (subscription.status === 'pending_payment' || subscription.status === 'canceled') {
      throw new ProblemError(
        409,
        `a ${subscription.status} subscription cannot be renewed; buy the plan instead`,
      );
    }
    const open = this.store.latestInvoice(subscription.id);
    if (open && open.kind === 'renewal' && (open.status === 'new' || open.status === 'processing'))
      return subscription;
    const plan = this.plan(subscription.planId);
    const invoice = await this.createInvoice(subscription.id, subscription.subscriber, plan, 'renewal');
    this.storeInvoice(invoice, subscription.id, 'renewal', this.now());
    return this.store.subscription(subscription.id)!;
  }

  private async createInvoice(
    subscriptionId: string,
    subscriber: string,
    plan: Plan,
    kind: 'purchase' | 'renewal',
  ): Promise<GreenfieldInvoice> {
    try {
      const invoice = await this.deps.client.createInvoice({
        amount: plan.price,
        currency: plan.currency,
        metadata: { orderId: subscriptionId, subscriptionId, subscriber, planId: plan.id, kind },
        ...(this.deps.config.redirectUrl ? { redirectUrl: this.deps.config.redirectUrl } : {}),
      });
      this.deps.metrics.invoicesCreated.inc({ kind });
      return invoice;
    } catch (error) {
      if (error instanceof BtcpayUnavailableError) {
        this.deps.log.warn({ reason: error.reason }, 'creating a BTCPay invoice failed');
        throw unavailable(error);
      }
      throw error;
    }
  }

  private storeInvoice(
    invoice: GreenfieldInvoice,
    subscriptionId: string,
    kind: 'purchase' | 'renewal',
    at: number,
  ): void {
    this.store.insertInvoice({
      id: invoice.id,
      subscriptionId,
      kind,
      status: STATUS_OF[invoice.status],
      amount: invoice.amount,
      currency: invoice.currency,
      checkoutLink: invoice.checkoutLink ?? null,
      createdAt: at,
    });
  }

  /** Fetches the invoice from BTCPay and applies what it says; throws BtcpayUnavailableError. */
  async refresh(
    invoiceId: string,
    cause: string,
    deliveryId?: { id: string; type: string },
  ): Promise<InvoiceOutcome> {
    if (!this.store.invoice(invoiceId)) return 'unknown_invoice';
    const fetched = await this.deps.client.getInvoice(invoiceId);
    return this.apply(fetched, cause, deliveryId);
  }

  /** Applies a fetched invoice's state in one transaction (with the webhook delivery that asked, if any). */
  apply(fetched: GreenfieldInvoice, cause: string, delivery?: { id: string; type: string }): InvoiceOutcome {
    const row = this.store.invoice(fetched.id);
    if (!row) return 'unknown_invoice';
    if (fetched.storeId !== this.deps.config.storeId) return 'other_store';
    const target = STATUS_OF[fetched.status];
    if (
      target === 'settled' &&
      !(
        sameAmount(fetched.amount, row.amount) &&
        fetched.currency.toUpperCase() === row.currency.toUpperCase()
      )
    ) {
      this.deps.log.warn(
        { invoice: fetched.id },
        'a settled invoice does not match its plan; nothing activated',
      );
      return 'mismatch';
    }
    const at = this.now();
    const news: Array<() => void> = [];
    const outcome = this.atomically((): InvoiceOutcome => {
      if (delivery) this.store.recordDelivery(delivery.id, fetched.id, delivery.type, at);
      if (!moves(row.status, target)) return 'unchanged';
      this.store.setInvoiceStatus(row.id, target, at);
      const sub = this.store.subscription(row.subscriptionId)!;
      if (target === 'settled') news.push(this.settle(sub, row, at, cause));
      else if (target === 'processing')
        news.push(this.note(sub, row, at, 'payment seen, waiting for confirmation'));
      else if (target === 'expired' || target === 'invalid') news.push(this.unpaid(sub, row, target, at));
      return 'applied';
    });
    for (const announce of news) announce();
    return outcome;
  }

  private settle(sub: BillingSubscription, invoice: BillingInvoice, at: number, cause: string): () => void {
    const plan = this.deps.plans.get(sub.planId)!;
    const from = Math.max(at, sub.currentPeriodEnd ?? 0);
    const end = from + plan.periodDays * DAY_MS;
    const until = end + this.deps.config.graceMs;
    const { grants } = this.deps;
    if (sub.grantId === null) {
      const grant = grants.create({
        subscriber: sub.subscriber,
        nodes: plan.nodes,
        status: 'active',
        expiresAt: until,
        source: 'billing',
        reference: sub.id,
        at,
      });
      this.store.setGrant(sub.id, grant.id);
    } else {
      grants.setExpiry(sub.grantId, until, at);
      grants.setStatus(sub.grantId, 'active', at);
    }
    this.store.setPeriod(sub.id, 'active', end, at);
    const why = `${invoice.kind === 'renewal' ? 'renewal' : 'invoice'} settled (${cause})`;
    this.store.recordChange({
      subscriptionId: sub.id,
      at,
      from: sub.status,
      to: 'active',
      cause: why,
      invoiceId: invoice.id,
    });
    this.deps.metrics.invoicesSettled.inc({ kind: invoice.kind });
    return () => this.announce(this.store.subscription(sub.id)!, sub.status, why, invoice.id, at);
  }

  private note(sub: BillingSubscription, invoice: BillingInvoice, at: number, cause: string): () => void {
    this.store.recordChange({
      subscriptionId: sub.id,
      at,
      from: sub.status,
      to: sub.status,
      cause,
      invoiceId: invoice.id,
    });
    return () => this.announce(sub, sub.status, cause, invoice.id, at);
  }

  private unpaid(
    sub: BillingSubscription,
    invoice: BillingInvoice,
    status: 'expired' | 'invalid',
    at: number,
  ): () => void {
    this.deps.metrics.invoicesExpired.inc({ status });
    const cause = `invoice ${status}, unpaid`;
    if (invoice.kind === 'purchase' && sub.status === 'pending_payment') {
      this.store.setStatus(sub.id, 'canceled', at);
      this.store.recordChange({
        subscriptionId: sub.id,
        at,
        from: sub.status,
        to: 'canceled',
        cause,
        invoiceId: invoice.id,
      });
      return () => this.announce(this.store.subscription(sub.id)!, sub.status, cause, invoice.id, at);
    }
    return this.note(sub, invoice, at, cause);
  }

  private announce(
    sub: BillingSubscription,
    from: BillingStatus | null,
    cause: string,
    invoiceId: string | null,
    at: number,
  ): void {
    announceChange(this.deps.bus, sub, from, cause, invoiceId, at);
  }

  /** Asks BTCPay about invoices still open (a missed webhook still settles); stops at the first failure. */
  async pollOpen(limit = 200): Promise<number> {
    let applied = 0;
    for (const invoice of this.store.openInvoices(limit)) {
      try {
        if ((await this.refresh(invoice.id, 'poll')) === 'applied') applied++;
      } catch (error) {
        if (error instanceof BtcpayUnavailableError) {
          this.deps.log.info({ reason: error.reason }, 'BTCPay not reachable; pending invoices polled later');
          break;
        }
        throw error;
      }
    }
    return applied;
  }
}

/** Invoice states only move forward; a settled one stays settled, an unpaid one may still settle late. */
function moves(from: InvoiceStatus, to: InvoiceStatus): boolean {
  if (from === to || from === 'settled') return false;
  if (to === 'new') return false;
  if (to === 'processing') return from === 'new';
  return true;
}
