/**
 * Plans: what a subscriber can buy. Managed by admins (CLI and admin routes); a retired plan is
 * no longer offered but keeps serving the subscriptions bought on it.
 */
import type { Database, Statement } from '../store/database.js';
import { CURRENCY_PATTERN, PLAN_ID_PATTERN, PRICE_PATTERN } from './ids.js';
import { planOf as fromRow, type PlanRow as Row } from './rows.js';

/** What an admin gives to create a plan. */
export interface NewPlan {
  id: string;
  name: string;
  /** A decimal string, as BTCPay takes amounts: `5`, `0.0001`. */
  price: string;
  currency: string;
  periodDays: number;
  nodes: 'all' | string[];
}

export interface Plan extends NewPlan {
  active: boolean;
  createdAt: number;
}

export class PlanError extends Error {
  override readonly name = 'PlanError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The rules every plan store applies (SQLite on a hub, PostgreSQL on the upstream); throws PlanError naming the field. */
export function checkNewPlan(plan: NewPlan): void {
  if (!PLAN_ID_PATTERN.test(plan.id))
    throw new PlanError('id', 'must be 1–40 lower-case letters, digits, "-" or "_"');
  if (!plan.name.trim() || plan.name.length > 100) throw new PlanError('name', 'must be 1–100 characters');
  if (!PRICE_PATTERN.test(plan.price) || Number(plan.price) <= 0)
    throw new PlanError('price', 'must be a positive decimal string like "5" or "0.0001"');
  if (!CURRENCY_PATTERN.test(plan.currency))
    throw new PlanError('currency', 'must be a currency code like USD, EUR, BTC or SATS');
  if (!Number.isInteger(plan.periodDays) || plan.periodDays < 1 || plan.periodDays > 3660)
    throw new PlanError('period_days', 'must be a whole number of days, 1–3660');
  if (plan.nodes !== 'all') {
    if (!plan.nodes.length) throw new PlanError('nodes', 'name at least one node id, or "all"');
    const bad = plan.nodes.find((n) => !/^![0-9a-f]{8}$/.test(n));
    if (bad !== undefined) throw new PlanError('nodes', `"${bad}" is not a node id like !a1b2c3d4`);
  }
}

/** The plan's nodes as stored: `all`, or the ids once each, sorted. */
export function planNodes(plan: NewPlan): 'all' | string[] {
  return plan.nodes === 'all' ? 'all' : [...new Set(plan.nodes)].sort();
}

export const planExists = (id: string): PlanError => new PlanError('id', `a plan "${id}" exists already`);

export class PlanRepository {
  private readonly insert: Statement;
  private readonly byId: Statement<unknown[], Row>;
  private readonly listAll: Statement<unknown[], Row>;
  private readonly listActive: Statement<unknown[], Row>;
  private readonly retireStmt: Statement;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO billing_plans (id, name, price, currency, period_days, node_ids, active, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)',
    );
    this.byId = db.prepare('SELECT * FROM billing_plans WHERE id = ?') as Statement<unknown[], Row>;
    this.listAll = db.prepare('SELECT * FROM billing_plans ORDER BY id LIMIT 1000') as Statement<
      unknown[],
      Row
    >;
    this.listActive = db.prepare(
      'SELECT * FROM billing_plans WHERE active = 1 ORDER BY id LIMIT 1000',
    ) as Statement<unknown[], Row>;
    this.retireStmt = db.prepare('UPDATE billing_plans SET active = 0 WHERE id = ? AND active = 1');
  }

  /** Throws PlanError naming the field; the id must be new. */
  add(plan: NewPlan, at = Date.now()): Plan {
    checkNewPlan(plan);
    if (this.get(plan.id)) throw planExists(plan.id);
    const nodes = planNodes(plan);
    this.insert.run(
      plan.id,
      plan.name.trim(),
      plan.price,
      plan.currency,
      plan.periodDays,
      nodes === 'all' ? null : JSON.stringify(nodes),
      at,
    );
    return this.get(plan.id)!;
  }

  get(id: string): Plan | undefined {
    const row = this.byId.get(id);
    return row ? fromRow(row) : undefined;
  }

  list(options: { activeOnly?: boolean } = {}): Plan[] {
    return (options.activeOnly ? this.listActive : this.listAll).all().map(fromRow);
  }

  /** True when the plan was active and is now retired. */
  retire(id: string): boolean {
    return this.retireStmt.run(id).changes === 1;
  }
}
