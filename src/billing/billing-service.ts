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
 *
 * The same rules run on a hub (SQLite) and on the upstream (PostgreSQL, several processes): they
 * read and write only through `BillingStorage` (billing-storage.ts), and what a fetched invoice
 * changes is decided by `decideInvoice`, a pure function of the rows the store read under its
 * locks.
 */
import { randomBytes } from 'node:crypto';
import { ProblemError } from '../http/problem.js';
import type { Logger } from '../log.js';
import { changeOf } from './billing-changes.js';
import type { BillingStatus, BillingSubscription, InvoiceStatus } from './billing-repository.js';
import type { BillingStorage, InvoiceDecision, InvoiceState, NewInvoice } from './billing-storage.js';
import type { BillingChange } from './events.js';
import {
  BtcpayUnavailableError,
  type GreenfieldClient,
  type GreenfieldInvoice,
  type GreenfieldStatus,
  sameAmount,
} from './greenfield-client.js';
import type { BillingMetrics } from './metrics.js';
import type { Plan } from './plans.js';
import type { BillingConfig } from './settings.js';

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
  storage: BillingStorage;
  client: GreenfieldClient;
  config: BillingConfig;
  log: Logger;
  metrics: BillingMetrics;
  /** Told every stored change after its commit (a hub: the bus's `billing.changed`). */
  onChange: (change: BillingChange) => void;
  now?: () => number;
}

export function unavailable(error: BtcpayUnavailableError): ProblemError {
  return new ProblemError(503, `payments are unavailable right now: ${error.reason}; try again later`, {
    headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
  });
}

/**
 * What applying an invoice now in BTCPay's state `target` changes, from the rows as stored:
 * undefined when nothing moves (a redelivery, events out of order, a settled invoice seen again).
 */
export function decideInvoice(
  { invoice, subscription: sub, plan }: InvoiceState,
  target: InvoiceStatus,
  at: number,
  cause: string,
  graceMs: number,
): InvoiceDecision | undefined {
  if (!moves(invoice.status, target)) return undefined;
  switch (target) {
    case 'settled': {
      // A renewal paid early extends from the current end, a late one from now.
      const end = Math.max(at, sub.currentPeriodEnd ?? 0) + plan.periodDays * DAY_MS;
      return {
        invoiceStatus: target,
        status: 'active',
        paid: { periodEnd: end, grantUntil: end + graceMs, nodes: plan.nodes },
        cause: `${invoice.kind === 'renewal' ? 'renewal' : 'invoice'} settled (${cause})`,
      };
    }
    case 'processing':
      return { invoiceStatus: target, status: sub.status, cause: 'payment seen, waiting for confirmation' };
    case 'expired':
    case 'invalid': {
      const why = `invoice ${target}, unpaid`;
      // An unpaid purchase cancels; an unpaid renewal (or a late purchase invoice) is news only.
      const canceled = invoice.kind === 'purchase' && sub.status === 'pending_payment';
      return { invoiceStatus: target, status: canceled ? 'canceled' : sub.status, cause: why };
    }
    default:
      return undefined;
  }
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

  get storage(): BillingStorage {
    return this.deps.storage;
  }

  async plan(planId: string): Promise<Plan> {
    const plan = await this.storage.plans.get(planId);
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
    const plan = await this.plan(planId);
    if (!plan.active) {
      throw new ProblemError(409, `the plan "${planId}" is retired and can no longer be bought`, {
        errors: [{ field: 'plan_id', message: 'retired plan' }],
      });
    }
    const key = `${subscriber}\u0000${planId}`;
    const inFlight = this.buying.get(key);
    if (inFlight) return { subscription: (await inFlight).subscription, created: false };
    const existing = await this.storage.pendingPurchase(subscriber, planId);
    if (existing) return { subscription: existing, created: false };
    // Checked again: another request may have started while the store answered.
    const joined = this.buying.get(key);
    if (joined) return { subscription: (await joined).subscription, created: false };
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
    const cause = 'purchase started';
    const result = await this.storage.startPurchase({
      id,
      subscriber,
      planId: plan.id,
      invoice: newInvoice(invoice, id, 'purchase', at),
      cause,
      at,
    });
    if (result.created) this.announce(result.subscription, null, cause, invoice.id, at);
    return result;
  }

  /** A new invoice for the next period (active, past due or expired subscriptions); an open one is returned as is. */
  async renew(subscription: BillingSubscription): Promise<BillingSubscription> {
    if (subscription.status === 'pending_payment' || subscription.status === 'canceled') {
      throw new ProblemError(
        409,
        `a ${subscription.status} subscription cannot be renewed; buy the plan instead`,
      );
    }
    const open = await this.storage.latestInvoice(subscription.id);
    if (open && open.kind === 'renewal' && (open.status === 'new' || open.status === 'processing'))
      return subscription;
    const plan = await this.plan(subscription.planId);
    const invoice = await this.createInvoice(subscription.id, subscription.subscriber, plan, 'renewal');
    await this.storage.addInvoice(newInvoice(invoice, subscription.id, 'renewal', this.now()));
    return (await this.storage.subscription(subscription.id))!;
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

  /** Fetches the invoice from BTCPay and applies what it says; throws BtcpayUnavailableError. */
  async refresh(
    invoiceId: string,
    cause: string,
    deliveryId?: { id: string; type: string },
  ): Promise<InvoiceOutcome> {
    if (!(await this.storage.invoice(invoiceId))) return 'unknown_invoice';
    const fetched = await this.deps.client.getInvoice(invoiceId);
    return this.apply(fetched, cause, deliveryId);
  }

  /** Applies a fetched invoice's state in one transaction (with the webhook delivery that asked, if any). */
  async apply(
    fetched: GreenfieldInvoice,
    cause: string,
    delivery?: { id: string; type: string },
  ): Promise<InvoiceOutcome> {
    // Amount, currency and store of an invoice never change: checked before the transaction.
    const row = await this.storage.invoice(fetched.id);
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
    const { graceMs } = this.deps.config;
    const applied = await this.storage.applyInvoice(fetched.id, delivery, at, (state) =>
      decideInvoice(state, target, at, cause, graceMs),
    );
    if (!applied) return 'unknown_invoice';
    const { decision } = applied;
    if (!decision) return 'unchanged';
    const { kind } = applied.invoice;
    if (decision.invoiceStatus === 'settled') this.deps.metrics.invoicesSettled.inc({ kind });
    if (decision.invoiceStatus === 'expired' || decision.invoiceStatus === 'invalid')
      this.deps.metrics.invoicesExpired.inc({ status: decision.invoiceStatus });
    this.announce(applied.after, applied.before.status, decision.cause, fetched.id, at);
    return 'applied';
  }

  private announce(
    sub: BillingSubscription,
    from: BillingStatus | null,
    cause: string,
    invoiceId: string | null,
    at: number,
  ): void {
    this.deps.onChange(changeOf(sub, from, cause, invoiceId, at));
  }

  /** Asks BTCPay about invoices still open (a missed webhook still settles); stops at the first failure. */
  async pollOpen(limit = 200): Promise<number> {
    let applied = 0;
    for (const invoice of await this.storage.openInvoices(limit)) {
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

function newInvoice(
  invoice: GreenfieldInvoice,
  subscriptionId: string,
  kind: 'purchase' | 'renewal',
  at: number,
): NewInvoice {
  return {
    id: invoice.id,
    subscriptionId,
    kind,
    status: STATUS_OF[invoice.status],
    amount: invoice.amount,
    currency: invoice.currency,
    checkoutLink: invoice.checkoutLink ?? null,
    createdAt: at,
  };
}

/** Invoice states only move forward; a settled one stays settled, an unpaid one may still settle late. */
function moves(from: InvoiceStatus, to: InvoiceStatus): boolean {
  if (from === to || from === 'settled') return false;
  if (to === 'new') return false;
  if (to === 'processing') return from === 'new';
  return true;
}
