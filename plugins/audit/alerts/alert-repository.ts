/**
 * Alert rules, their firings and the matches threshold rules count, in the plugin's tables
 * (store/schema.ts, versions 3 and 4). Plain functions over the hub's one connection: the routes
 * and the evaluator share one instance per connection (`AlertRepository.on(db)`).
 */
import type { Database, Statement } from '../../../src/store/database.js';
import { Where } from '../store/where.js';
import type { RuleScope } from './candidates.js';
import { type Condition, conditionSchema, type RuleBody } from './condition.js';
import type { AlertableEvent, EventMemo } from './matcher.js';

/**
 * A rule whose detection lives in a file the operator points at (a Sigma rule, sigma/): stored as
 * a rule row (so alerts, MQTT and delivery are the same path) but matched by its own predicate,
 * and read-only in the API. `created_by` is `FILE_RULE_BY` + the file.
 */
export interface FileRule {
  file: string;
  sigmaId: string | null;
  matches(e: AlertableEvent, memo: EventMemo): boolean;
  /** The events it can match at all (candidates.ts): its sources, its operations. */
  scope?: RuleScope | undefined;
}

export const FILE_RULE_BY = 'sigma:';
/** A row written for a file rule: without its predicate (not loaded this run) it never runs. */
export const isFileRuleRow = (r: { createdBy: string | null }) =>
  r.createdBy?.startsWith(FILE_RULE_BY) === true;

export interface RuleRow {
  id: number;
  name: string;
  description: string;
  severity: string;
  enabled: number;
  condition: string;
  created_at: number;
  updated_at: number;
  created_by: string | null;
  updated_by: string | null;
}

export interface Rule {
  id: number;
  name: string;
  description: string;
  severity: string;
  enabled: boolean;
  condition: Condition;
  createdAt: number;
  updatedAt: number;
  createdBy: string | null;
  updatedBy: string | null;
  /** Present for a rule from a Sigma file: read-only. */
  sigma?: { file: string; id: string | null };
}

export interface AlertRow {
  id: number;
  rule_id: number;
  rule_name: string;
  severity: string;
  fired_at: number;
  alert_key: string;
  event_seq: number;
  event_ts: number;
  match_count: number;
  window_ms: number;
  detail: string;
  delivery: string;
}

export type NewAlert = Omit<AlertRow, 'id' | 'delivery'> & { delivery: Delivery };
export type Delivery = 'none' | 'pending' | 'delivered' | 'failed';

export interface AlertFilters {
  ruleIds?: readonly number[];
  severities?: readonly string[];
  /** [start, end) on fired_at, ms UTC. */
  start?: number;
  end?: number;
  /** Issue 29: only alerts on events of these tenants (the caller's AUDIT_ROLE_TENANTS). */
  tenants?: readonly string[];
}

export interface AlertPosition {
  at: number;
  id: number;
}

export class RuleNameTakenError extends Error {
  override readonly name = 'RuleNameTakenError';
}

const fold = (name: string) => name.toLowerCase();

export function ruleFromRow(row: RuleRow): Rule {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    severity: row.severity,
    enabled: row.enabled === 1,
    // Stored as the API shows it (conditionJson), so it parses back to the same condition.
    condition: conditionSchema.parse(JSON.parse(row.condition)),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    createdBy: row.created_by,
    updatedBy: row.updated_by,
  };
}

const isUniqueViolation = (error: unknown) =>
  error instanceof Error && /UNIQUE constraint failed: audit_alert_rules\.name_folded/.test(error.message);

export class AlertRepository {
  private static readonly byDb = new WeakMap<Database, AlertRepository>();
  /** Bumped on every rule write: the evaluator recompiles when it changed. */
  revision = 0;
  /** Rules from files, by rule id (sigma/install.ts fills it at start-up). */
  readonly fileRules = new Map<number, FileRule>();

  private readonly s: Record<string, Statement>;

  static on(db: Database): AlertRepository {
    let store = AlertRepository.byDb.get(db);
    if (!store) {
      store = new AlertRepository(db);
      AlertRepository.byDb.set(db, store);
    }
    return store;
  }

  private constructor(readonly db: Database) {
    this.s = {
      list: db.prepare('SELECT * FROM audit_alert_rules ORDER BY id'),
      enabled: db.prepare('SELECT * FROM audit_alert_rules WHERE enabled = 1 ORDER BY id'),
      get: db.prepare('SELECT * FROM audit_alert_rules WHERE id = ?'),
      count: db.prepare('SELECT count(*) FROM audit_alert_rules').pluck(),
      insert: db.prepare(`
        INSERT INTO audit_alert_rules
          (name, name_folded, description, severity, enabled, condition, created_at, updated_at, created_by, updated_by)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      update: db.prepare(`
        UPDATE audit_alert_rules SET name = ?, name_folded = ?, description = ?, severity = ?, enabled = ?,
          condition = ?, updated_at = ?, updated_by = ? WHERE id = ?`),
      delete: db.prepare('DELETE FROM audit_alert_rules WHERE id = ?'),
      clearMatches: db.prepare('DELETE FROM audit_alert_matches WHERE rule_id = ?'),
      addMatch: db.prepare(
        'INSERT INTO audit_alert_matches (rule_id, alert_key, ts, seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      ),
      countMatches: db
        .prepare(
          'SELECT count(*) FROM audit_alert_matches WHERE rule_id = ? AND alert_key = ? AND ts > ? AND ts <= ?',
        )
        .pluck(),
      pruneMatches: db.prepare('DELETE FROM audit_alert_matches WHERE rule_id = ? AND ts < ?'),
      firedNear: db
        .prepare(
          'SELECT 1 FROM audit_alerts WHERE rule_id = ? AND alert_key = ? AND event_ts > ? AND event_ts < ? LIMIT 1',
        )
        .pluck(),
      insertAlert: db.prepare(`
        INSERT INTO audit_alerts
          (rule_id, rule_name, severity, fired_at, alert_key, event_seq, event_ts, match_count, window_ms, detail, delivery)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      getAlert: db.prepare('SELECT * FROM audit_alerts WHERE id = ?'),
      setDelivery: db.prepare('UPDATE audit_alerts SET delivery = ? WHERE id = ?'),
      pendingDeliveries: db.prepare(
        "SELECT * FROM audit_alerts WHERE delivery = 'pending' ORDER BY id LIMIT ?",
      ),
    };
  }

  // --- rules ---

  rules(): Rule[] {
    return (this.s.list!.all() as RuleRow[]).map((row) => this.withOrigin(ruleFromRow(row)));
  }

  private withOrigin(rule: Rule): Rule {
    const file = this.fileRules.get(rule.id);
    return file ? { ...rule, sigma: { file: file.file, id: file.sigmaId } } : rule;
  }

  enabledRules(): Rule[] {
    return (this.s.enabled!.all() as RuleRow[]).map(ruleFromRow);
  }

  rule(id: number): Rule | undefined {
    const row = this.s.get!.get(id) as RuleRow | undefined;
    return row ? this.withOrigin(ruleFromRow(row)) : undefined;
  }

  ruleCount(): number {
    return this.s.count!.get() as number;
  }

  /** Throws RuleNameTakenError when another rule has the name (case-insensitive). */
  createRule(body: RuleBody, condition: Record<string, unknown>, by: string, now: number): Rule {
    try {
      const info = this.s.insert!.run(
        body.name,
        fold(body.name),
        body.description,
        body.severity,
        body.enabled ? 1 : 0,
        JSON.stringify(condition),
        now,
        now,
        by,
        by,
      );
      this.revision++;
      return this.rule(Number(info.lastInsertRowid))!;
    } catch (error) {
      if (isUniqueViolation(error)) throw new RuleNameTakenError(body.name);
      throw error;
    }
  }

  /** The rule afterwards, or undefined when there is none. A changed condition starts its counts afresh. */
  updateRule(
    id: number,
    body: RuleBody,
    condition: Record<string, unknown>,
    by: string,
    now: number,
  ): Rule | undefined {
    const conditionText = JSON.stringify(condition);
    try {
      return this.db.transaction(() => {
        const before = this.s.get!.get(id) as RuleRow | undefined;
        if (!before) return undefined;
        this.s.update!.run(
          body.name,
          fold(body.name),
          body.description,
          body.severity,
          body.enabled ? 1 : 0,
          conditionText,
          now,
          by,
          id,
        );
        if (before.condition !== conditionText) this.s.clearMatches!.run(id);
        this.revision++;
        return this.rule(id);
      })();
    } catch (error) {
      if (isUniqueViolation(error)) throw new RuleNameTakenError(body.name);
      throw error;
    }
  }

  /** The deleted rule; its alerts stay (they name the rule as it was). */
  deleteRule(id: number): Rule | undefined {
    return this.db.transaction(() => {
      const before = this.rule(id);
      if (!before) return undefined;
      this.s.delete!.run(id);
      this.s.clearMatches!.run(id);
      this.revision++;
      return before;
    })();
  }

  // --- threshold matches (called inside the evaluator's transaction) ---

  /** Records a match and answers how many matches the key has in (ts - windowMs, ts]. */
  countMatch(ruleId: number, key: string, ts: number, seq: number, windowMs: number): number {
    this.s.addMatch!.run(ruleId, key, ts, seq);
    return this.s.countMatches!.get(ruleId, key, ts - windowMs, ts) as number;
  }

  /** Drops a rule's matches older than `before` (two windows behind the newest event of a batch). */
  pruneMatches(ruleId: number, before: number): void {
    this.s.pruneMatches!.run(ruleId, before);
  }

  /** True when the rule already fired for the key at an event less than a window away from `ts`. */
  firedWithin(ruleId: number, key: string, ts: number, windowMs: number): boolean {
    return this.s.firedNear!.get(ruleId, key, ts - windowMs, ts + windowMs) !== undefined;
  }

  // --- alerts ---

  insertAlert(a: NewAlert): AlertRow {
    const info = this.s.insertAlert!.run(
      a.rule_id,
      a.rule_name,
      a.severity,
      a.fired_at,
      a.alert_key,
      a.event_seq,
      a.event_ts,
      a.match_count,
      a.window_ms,
      a.detail,
      a.delivery,
    );
    return { ...a, id: Number(info.lastInsertRowid) };
  }

  alert(id: number): AlertRow | undefined {
    return this.s.getAlert!.get(id) as AlertRow | undefined;
  }

  setDelivery(id: number, delivery: Delivery): void {
    this.s.setDelivery!.run(delivery, id);
  }

  pendingDeliveries(limit: number): AlertRow[] {
    return this.s.pendingDeliveries!.all(limit) as AlertRow[];
  }

  /**
   * A page of alerts, newest first, keyset on (fired_at, id): `next` continues with older ones,
   * `prev` with newer ones. Bounded by `limit`; the filters are bound parameters.
   */
  page(
    filters: AlertFilters,
    limit: number,
    cursor?: { direction: 'next' | 'prev'; position: AlertPosition },
  ): { rows: AlertRow[]; next?: AlertPosition; prev?: AlertPosition } {
    const filtered = new Where()
      .anyOf('rule_id', filters.ruleIds)
      .anyOf('severity', filters.severities)
      .within('fired_at', filters.start, filters.end);
    if (filters.tenants) {
      filtered.add(
        "coalesce(json_extract(detail, '$.tenant'), 'default') IN (SELECT value FROM json_each(?))",
        JSON.stringify(filters.tenants),
      );
    }
    const { clauses: where, params } = filtered;
    const run = (extra: string, extraParams: unknown[], order: 'ASC' | 'DESC', n: number) => {
      const all = [...where, ...(extra ? [extra] : [])];
      const sql = `SELECT * FROM audit_alerts ${all.length ? `WHERE ${all.join(' AND ')}` : ''}
        ORDER BY fired_at ${order}, id ${order} LIMIT ?`;
      return this.db.prepare(sql).all(...params, ...extraParams, n) as AlertRow[];
    };
    const older = (p: AlertPosition) => run('(fired_at, id) < (?, ?)', [p.at, p.id], 'DESC', 1);
    const newer = (p: AlertPosition) => run('(fired_at, id) > (?, ?)', [p.at, p.id], 'ASC', 1);
    const pos = (r: AlertRow): AlertPosition => ({ at: r.fired_at, id: r.id });
    let rows: AlertRow[];
    if (cursor?.direction === 'prev') {
      rows = run('(fired_at, id) > (?, ?)', [cursor.position.at, cursor.position.id], 'ASC', limit).reverse();
    } else if (cursor) {
      rows = run('(fired_at, id) < (?, ?)', [cursor.position.at, cursor.position.id], 'DESC', limit);
    } else {
      rows = run('', [], 'DESC', limit);
    }
    const first = rows[0];
    const last = rows.at(-1);
    return {
      rows,
      ...(last && older(pos(last)).length ? { next: pos(last) } : {}),
      ...(first && newer(pos(first)).length ? { prev: pos(first) } : {}),
    };
  }
}
