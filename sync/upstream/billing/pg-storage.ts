/**
 * The billing store on the upstream's PostgreSQL (migration 3, db/schema.ts): the same
 * `BillingStorage` the hub's SQLite store implements (src/billing/billing-storage.ts, SQLite in src/billing/sqlite-storage.ts), for
 * several upstream processes sharing one database.
 *
 * - `applyInvoice` locks the invoice's row, then its subscription's (`SELECT … FOR UPDATE`, in
 *   that order everywhere), so two processes handed the same webhook at once take turns: the
 *   second reads the invoice as the first left it (READ COMMITTED re-reads a locked row after
 *   the wait) and `decide` finds nothing to move. The delivery id goes in with `ON CONFLICT DO
 *   NOTHING`. A settlement makes or extends the upstream subscription and queues its commands
 *   for the sites in the same transaction (grants.ts).
 * - `startPurchase` relies on a partial unique index: one pending purchase per subscriber and
 *   plan, also when two processes take the two requests.
 * - `moveDue` moves a chunk in one statement with `FOR UPDATE SKIP LOCKED`: a subscription a
 *   settlement holds is left for the next run, and what it moves is moved once.
 */
import type pg from 'pg';
import type {
  BillingChangeRow,
  BillingInvoice,
  BillingStatus,
  BillingSubscription,
} from '../../../src/billing/billing-repository.js';
import type {
  AppliedInvoice,
  BillingStorage,
  DecideInvoice,
  DueStep,
  NewInvoice,
  PlanStorage,
  PurchaseStart,
  WebhookDelivery,
} from '../../../src/billing/billing-storage.js';
import { decidedChange, purchaseStartedChange } from '../../../src/billing/billing-storage.js';
import { checkNewPlan, type NewPlan, type Plan, planExists, planNodes } from '../../../src/billing/plans.js';
import {
  type InvoiceRow,
  invoiceOf,
  type PlanRow,
  planOf,
  type SubRow,
  subscriptionOf as subOf,
} from '../../../src/billing/rows.js';
import { withTransaction } from '../db/pool.js';
import { grantOrExtend } from './grants.js';

type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

const SUB_COLUMNS = 'id, subscriber, plan_id, status, current_period_end, grant_id, created_at, updated_at';
const INVOICE_COLUMNS =
  'id, subscription_id, kind, status, amount, currency, checkout_link, created_at, updated_at';

async function insertInvoice(db: Queryable, i: NewInvoice): Promise<void> {
  await db.query(
    `INSERT INTO billing_invoices (id, subscription_id, kind, status, amount, currency, checkout_link, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
    [i.id, i.subscriptionId, i.kind, i.status, i.amount, i.currency, i.checkoutLink, i.createdAt],
  );
}

async function recordChange(db: Queryable, c: BillingChangeRow): Promise<void> {
  await db.query(
    `INSERT INTO billing_changes (subscription_id, at, from_status, to_status, cause, invoice_id)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [c.subscriptionId, c.at, c.from, c.to, c.cause, c.invoiceId],
  );
}

export class PgPlans implements PlanStorage {
  constructor(private readonly pool: pg.Pool) {}

  async get(id: string): Promise<Plan | undefined> {
    const { rows } = await this.pool.query<PlanRow>('SELECT * FROM billing_plans WHERE id = $1', [id]);
    return rows[0] ? planOf(rows[0]) : undefined;
  }

  async list(options: { activeOnly?: boolean } = {}): Promise<Plan[]> {
    const { rows } = await this.pool.query<PlanRow>(
      `SELECT * FROM billing_plans ${options.activeOnly ? 'WHERE active' : ''} ORDER BY id LIMIT 1000`,
    );
    return rows.map(planOf);
  }

  async add(plan: NewPlan, at = Date.now()): Promise<Plan> {
    checkNewPlan(plan);
    const nodes = planNodes(plan);
    const { rows } = await this.pool.query<PlanRow>(
      `INSERT INTO billing_plans (id, name, price, currency, period_days, node_ids, active, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, true, $7) ON CONFLICT (id) DO NOTHING RETURNING *`,
      [
        plan.id,
        plan.name.trim(),
        plan.price,
        plan.currency,
        plan.periodDays,
        nodes === 'all' ? null : nodes,
        at,
      ],
    );
    if (!rows[0]) throw planExists(plan.id);
    return planOf(rows[0]);
  }

  async retire(id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'UPDATE billing_plans SET active = false WHERE id = $1 AND active',
      [id],
    );
    return rowCount === 1;
  }
}

export class PgBillingStorage implements BillingStorage {
  readonly plans: PgPlans;

  constructor(private readonly pool: pg.Pool) {
    this.plans = new PgPlans(pool);
  }

  async subscription(id: string): Promise<BillingSubscription | undefined> {
    const { rows } = await this.pool.query<SubRow>(
      `SELECT ${SUB_COLUMNS} FROM billing_subscriptions WHERE id = $1`,
      [id],
    );
    return rows[0] ? subOf(rows[0]) : undefined;
  }

  async subscriptions(subscriber?: string): Promise<BillingSubscription[]> {
    const { rows } =
      subscriber === undefined
        ? await this.pool.query<SubRow>(
            `SELECT ${SUB_COLUMNS} FROM billing_subscriptions ORDER BY created_at, id LIMIT 10000`,
          )
        : await this.pool.query<SubRow>(
            `SELECT ${SUB_COLUMNS} FROM billing_subscriptions WHERE subscriber = $1 ORDER BY created_at, id LIMIT 1000`,
            [subscriber],
          );
    return rows.map(subOf);
  }

  async pendingPurchase(subscriber: string, planId: string): Promise<BillingSubscription | undefined> {
    const { rows } = await this.pool.query<SubRow>(
      `SELECT ${SUB_COLUMNS} FROM billing_subscriptions
       WHERE subscriber = $1 AND plan_id = $2 AND status = 'pending_payment' LIMIT 1`,
      [subscriber, planId],
    );
    return rows[0] ? subOf(rows[0]) : undefined;
  }

  async invoice(id: string): Promise<BillingInvoice | undefined> {
    const { rows } = await this.pool.query<InvoiceRow>(
      `SELECT ${INVOICE_COLUMNS} FROM billing_invoices WHERE id = $1`,
      [id],
    );
    return rows[0] ? invoiceOf(rows[0]) : undefined;
  }

  async latestInvoice(subscriptionId: string): Promise<BillingInvoice | undefined> {
    return (await this.latestInvoices([subscriptionId])).get(subscriptionId);
  }

  async latestInvoices(subscriptionIds: readonly string[]): Promise<Map<string, BillingInvoice>> {
    if (subscriptionIds.length === 0) return new Map();
    const { rows } = await this.pool.query<InvoiceRow>(
      `SELECT DISTINCT ON (subscription_id) ${INVOICE_COLUMNS} FROM billing_invoices
       WHERE subscription_id = ANY ($1::text[])
       ORDER BY subscription_id, created_at DESC, seq DESC`,
      [subscriptionIds],
    );
    return new Map(rows.map((r) => [r.subscription_id, invoiceOf(r)]));
  }

  async openInvoices(limit: number): Promise<BillingInvoice[]> {
    const { rows } = await this.pool.query<InvoiceRow>(
      `SELECT ${INVOICE_COLUMNS} FROM billing_invoices WHERE status IN ('new', 'processing')
       ORDER BY created_at LIMIT $1`,
      [limit],
    );
    return rows.map(invoiceOf);
  }

  async changes(subscriptionId: string): Promise<BillingChangeRow[]> {
    const { rows } = await this.pool.query<{
      subscription_id: string;
      at: number | string;
      from_status: BillingStatus | null;
      to_status: BillingStatus;
      cause: string;
      invoice_id: string | null;
    }>('SELECT * FROM billing_changes WHERE subscription_id = $1 ORDER BY seq LIMIT 1000', [subscriptionId]);
    return rows.map((r) => ({
      subscriptionId: r.subscription_id,
      at: Number(r.at),
      from: r.from_status,
      to: r.to_status,
      cause: r.cause,
      invoiceId: r.invoice_id,
    }));
  }

  async wasDelivered(deliveryId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('SELECT 1 FROM billing_deliveries WHERE delivery_id = $1', [
      deliveryId,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async countPaid(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number | string }>(
      "SELECT count(*) AS n FROM billing_subscriptions WHERE status IN ('active', 'past_due')",
    );
    return Number(rows[0]!.n);
  }

  async pruneDeliveries(before: number, limit: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM billing_deliveries WHERE delivery_id IN
         (SELECT delivery_id FROM billing_deliveries WHERE received_at < $1 LIMIT $2)`,
      [before, limit],
    );
    return rowCount ?? 0;
  }

  async startPurchase(
    input: PurchaseStart,
  ): Promise<{ subscription: BillingSubscription; created: boolean }> {
    const created = await withTransaction(this.pool, async (client) => {
      const { rows } = await client.query<SubRow>(
        `INSERT INTO billing_subscriptions (id, subscriber, plan_id, status, current_period_end, grant_id, created_at, updated_at)
         VALUES ($1, $2, $3, 'pending_payment', NULL, NULL, $4, $4)
         ON CONFLICT (subscriber, plan_id) WHERE status = 'pending_payment' DO NOTHING
         RETURNING ${SUB_COLUMNS}`,
        [input.id, input.subscriber, input.planId, input.at],
      );
      if (!rows[0]) return undefined;
      await insertInvoice(client, input.invoice);
      await recordChange(client, purchaseStartedChange(input));
      return subOf(rows[0]);
    });
    if (created) return { subscription: created, created: true };
    // Another process started this purchase meanwhile: its invoice stands, ours expires unpaid.
    const pending = await this.pendingPurchase(input.subscriber, input.planId);
    if (!pending) throw new Error('a pending purchase conflicted but is gone; try again');
    return { subscription: pending, created: false };
  }

  async addInvoice(invoice: NewInvoice): Promise<void> {
    await insertInvoice(this.pool, invoice);
  }

  async applyInvoice(
    invoiceId: string,
    delivery: WebhookDelivery | undefined,
    at: number,
    decide: DecideInvoice,
  ): Promise<AppliedInvoice | undefined> {
    return withTransaction(this.pool, async (client) => {
      const {
        rows: [invoiceRow],
      } = await client.query<InvoiceRow>(
        `SELECT ${INVOICE_COLUMNS} FROM billing_invoices WHERE id = $1 FOR UPDATE`,
        [invoiceId],
      );
      if (!invoiceRow) return undefined;
      const invoice = invoiceOf(invoiceRow);
      const {
        rows: [subRow],
      } = await client.query<SubRow>(
        `SELECT ${SUB_COLUMNS} FROM billing_subscriptions WHERE id = $1 FOR UPDATE`,
        [invoice.subscriptionId],
      );
      const before = subOf(subRow!);
      const {
        rows: [planRow],
      } = await client.query<PlanRow>('SELECT * FROM billing_plans WHERE id = $1', [before.planId]);
      if (delivery) {
        await client.query(
          `INSERT INTO billing_deliveries (delivery_id, invoice_id, type, received_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (delivery_id) DO NOTHING`,
          [delivery.id, invoiceId, delivery.type, at],
        );
      }
      const decision = decide({ invoice, subscription: before, plan: planOf(planRow!) });
      if (!decision) return { decision, invoice, before, after: before };
      await client.query('UPDATE billing_invoices SET status = $2, updated_at = $3 WHERE id = $1', [
        invoiceId,
        decision.invoiceStatus,
        at,
      ]);
      let grantId = before.grantId;
      let periodEnd = before.currentPeriodEnd;
      if (decision.paid) {
        const granted = await grantOrExtend(
          client,
          before.grantId,
          {
            subscriber: before.subscriber,
            nodes: decision.paid.nodes,
            expiresAt: decision.paid.grantUntil,
            reference: before.id,
          },
          at,
        );
        grantId = granted.id;
        periodEnd = decision.paid.periodEnd;
      }
      const {
        rows: [afterRow],
      } = await client.query<SubRow>(
        `UPDATE billing_subscriptions SET status = $2, current_period_end = $3, grant_id = $4, updated_at = $5
         WHERE id = $1 RETURNING ${SUB_COLUMNS}`,
        [before.id, decision.status, periodEnd, grantId, at],
      );
      await recordChange(client, decidedChange(before, decision, invoiceId, at));
      return { decision, invoice, before, after: subOf(afterRow!) };
    });
  }

  async moveDue(step: DueStep, at: number, limit: number): Promise<BillingSubscription[]> {
    return withTransaction(this.pool, async (client) => {
      // The CTE's rows as they were (status = step.from): what the caller announces as moved.
      const { rows } = await client.query<SubRow>(
        `WITH due AS (
           SELECT ${SUB_COLUMNS} FROM billing_subscriptions
           WHERE status = $1 AND current_period_end <= $2
           ORDER BY current_period_end LIMIT $3
           FOR UPDATE SKIP LOCKED),
         moved AS (
           UPDATE billing_subscriptions s SET status = $4, updated_at = $5 FROM due WHERE s.id = due.id
           RETURNING s.id)
         SELECT due.* FROM due JOIN moved USING (id) ORDER BY due.current_period_end, due.id`,
        [step.from, step.before, limit, step.to, at],
      );
      if (rows.length) {
        await client.query(
          `INSERT INTO billing_changes (subscription_id, at, from_status, to_status, cause, invoice_id)
           SELECT id, $2, $3, $4, $5, NULL FROM unnest($1::text[]) AS id`,
          [rows.map((r) => r.id), at, step.from, step.to, step.cause],
        );
      }
      return rows.map(subOf);
    });
  }
}
