/**
 * Billing subscriptions, their invoices, every state change (time, from, to, cause) and the
 * webhook deliveries already applied. Plain statements over the hub's one connection; the
 * service (billing-service.ts) wraps the writes that belong together in one transaction.
 */
import type { Database, Statement } from '../store/database.js';
import { type InvoiceRow, invoiceOf, type SubRow, subscriptionOf } from './rows.js';

export type BillingStatus = 'pending_payment' | 'active' | 'past_due' | 'expired' | 'canceled';
export type InvoiceKind = 'purchase' | 'renewal';
export type InvoiceStatus = 'new' | 'processing' | 'settled' | 'expired' | 'invalid';

export interface BillingSubscription {
  id: string;
  subscriber: string;
  planId: string;
  status: BillingStatus;
  currentPeriodEnd: number | null;
  /** The messaging subscription row this pays for (src/messaging/subscription-repository.ts). */
  grantId: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface BillingInvoice {
  id: string;
  subscriptionId: string;
  kind: InvoiceKind;
  status: InvoiceStatus;
  amount: string;
  currency: string;
  checkoutLink: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface BillingChangeRow {
  subscriptionId: string;
  at: number;
  from: BillingStatus | null;
  to: BillingStatus;
  cause: string;
  invoiceId: string | null;
}

export class BillingRepository {
  private readonly s: Record<string, Statement>;

  constructor(readonly db: Database) {
    this.s = {
      insertSub: db.prepare(
        `INSERT INTO billing_subscriptions (id, subscriber, plan_id, status, current_period_end, grant_id, created_at, updated_at)
         VALUES (?, ?, ?, 'pending_payment', NULL, NULL, ?, ?)`,
      ),
      subById: db.prepare('SELECT * FROM billing_subscriptions WHERE id = ?'),
      subsOf: db.prepare(
        'SELECT * FROM billing_subscriptions WHERE subscriber = ? ORDER BY created_at, id LIMIT 1000',
      ),
      subsAll: db.prepare('SELECT * FROM billing_subscriptions ORDER BY created_at, id LIMIT 10000'),
      pendingOf: db.prepare(
        `SELECT * FROM billing_subscriptions WHERE subscriber = ? AND plan_id = ? AND status = 'pending_payment'
         ORDER BY created_at DESC LIMIT 1`,
      ),
      setStatus: db.prepare('UPDATE billing_subscriptions SET status = ?, updated_at = ? WHERE id = ?'),
      setPeriod: db.prepare(
        'UPDATE billing_subscriptions SET status = ?, current_period_end = ?, updated_at = ? WHERE id = ?',
      ),
      setGrant: db.prepare('UPDATE billing_subscriptions SET grant_id = ? WHERE id = ?'),
      due: db.prepare(
        `SELECT * FROM billing_subscriptions WHERE status = ? AND current_period_end <= ?
         ORDER BY current_period_end LIMIT ?`,
      ),
      countActive: db.prepare(
        "SELECT count(*) FROM billing_subscriptions WHERE status IN ('active', 'past_due')",
      ),
      insertInvoice: db.prepare(
        `INSERT INTO billing_invoices (id, subscription_id, kind, status, amount, currency, checkout_link, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      invoiceById: db.prepare('SELECT * FROM billing_invoices WHERE id = ?'),
      latestInvoice: db.prepare(
        'SELECT * FROM billing_invoices WHERE subscription_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1',
      ),
      openInvoices: db.prepare(
        "SELECT * FROM billing_invoices WHERE status IN ('new', 'processing') ORDER BY created_at LIMIT ?",
      ),
      setInvoiceStatus: db.prepare('UPDATE billing_invoices SET status = ?, updated_at = ? WHERE id = ?'),
      insertChange: db.prepare(
        `INSERT INTO billing_changes (subscription_id, at, from_status, to_status, cause, invoice_id)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      changesOf: db.prepare(
        'SELECT * FROM billing_changes WHERE subscription_id = ? ORDER BY seq LIMIT 1000',
      ),
      delivered: db.prepare('SELECT 1 FROM billing_deliveries WHERE delivery_id = ?'),
      pruneDeliveries: db.prepare(
        `DELETE FROM billing_deliveries WHERE delivery_id IN
           (SELECT delivery_id FROM billing_deliveries WHERE received_at < ? LIMIT ?)`,
      ),
      recordDelivery: db.prepare(
        'INSERT OR IGNORE INTO billing_deliveries (delivery_id, invoice_id, type, received_at) VALUES (?, ?, ?, ?)',
      ),
    };
  }

  insertSubscription(id: string, subscriber: string, planId: string, at: number): void {
    this.s.insertSub!.run(id, subscriber, planId, at, at);
  }

  subscription(id: string): BillingSubscription | undefined {
    const row = this.s.subById!.get(id) as SubRow | undefined;
    return row ? subscriptionOf(row) : undefined;
  }

  subscriptions(subscriber?: string): BillingSubscription[] {
    const rows = (
      subscriber === undefined ? this.s.subsAll!.all() : this.s.subsOf!.all(subscriber)
    ) as SubRow[];
    return rows.map(subscriptionOf);
  }

  pendingPurchase(subscriber: string, planId: string): BillingSubscription | undefined {
    const row = this.s.pendingOf!.get(subscriber, planId) as SubRow | undefined;
    return row ? subscriptionOf(row) : undefined;
  }

  setStatus(id: string, status: BillingStatus, at: number): void {
    this.s.setStatus!.run(status, at, id);
  }

  setPeriod(id: string, status: BillingStatus, periodEnd: number, at: number): void {
    this.s.setPeriod!.run(status, periodEnd, at, id);
  }

  setGrant(id: string, grantId: number): void {
    this.s.setGrant!.run(grantId, id);
  }

  /** Up to `limit` subscriptions in `status` whose period ended by `before`, soonest first. */
  due(status: BillingStatus, before: number, limit: number): BillingSubscription[] {
    return (this.s.due!.all(status, before, limit) as SubRow[]).map(subscriptionOf);
  }

  countPaid(): number {
    return this.s.countActive!.pluck().get() as number;
  }

  insertInvoice(i: Omit<BillingInvoice, 'updatedAt'>): void {
    this.s.insertInvoice!.run(
      i.id,
      i.subscriptionId,
      i.kind,
      i.status,
      i.amount,
      i.currency,
      i.checkoutLink,
      i.createdAt,
      i.createdAt,
    );
  }

  invoice(id: string): BillingInvoice | undefined {
    const row = this.s.invoiceById!.get(id) as InvoiceRow | undefined;
    return row ? invoiceOf(row) : undefined;
  }

  latestInvoice(subscriptionId: string): BillingInvoice | undefined {
    const row = this.s.latestInvoice!.get(subscriptionId) as InvoiceRow | undefined;
    return row ? invoiceOf(row) : undefined;
  }

  openInvoices(limit: number): BillingInvoice[] {
    return (this.s.openInvoices!.all(limit) as InvoiceRow[]).map(invoiceOf);
  }

  setInvoiceStatus(id: string, status: InvoiceStatus, at: number): void {
    this.s.setInvoiceStatus!.run(status, at, id);
  }

  recordChange(c: BillingChangeRow): void {
    this.s.insertChange!.run(c.subscriptionId, c.at, c.from, c.to, c.cause, c.invoiceId);
  }

  changes(subscriptionId: string): BillingChangeRow[] {
    return (
      this.s.changesOf!.all(subscriptionId) as Array<{
        subscription_id: string;
        at: number;
        from_status: BillingStatus | null;
        to_status: BillingStatus;
        cause: string;
        invoice_id: string | null;
      }>
    ).map((r) => ({
      subscriptionId: r.subscription_id,
      at: r.at,
      from: r.from_status,
      to: r.to_status,
      cause: r.cause,
      invoiceId: r.invoice_id,
    }));
  }

  wasDelivered(deliveryId: string): boolean {
    return this.s.delivered!.get(deliveryId) !== undefined;
  }

  /** Forgets up to `limit` deliveries received before `before`; returns how many. */
  pruneDeliveries(before: number, limit: number): number {
    return this.s.pruneDeliveries!.run(before, limit).changes;
  }

  recordDelivery(deliveryId: string, invoiceId: string, type: string, at: number): void {
    this.s.recordDelivery!.run(deliveryId, invoiceId, type, at);
  }
}
