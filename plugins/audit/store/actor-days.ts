/**
 * Issue 29, the actor timeline's counts at 10 million events: `audit_actor_days` holds, per actor,
 * UTC day, tenant, service and operation, how many events there are and how many of them failed
 * (the result normalized as 'failure'). The timeline's counts (event-query.ts `daily`) read at most
 * days × tenants × services × operations rows of it instead of one index entry per event.
 *
 * Operation and tenant are in the key because the privacy scope (hidden services, hidden
 * operations, allowed tenants) applies to the counts exactly as to the list. The key starts with
 * the day: the writer's upserts all land in the newest days' pages (which stay in the page cache)
 * rather than all over the table, and a reader seeks (day, actor) once per stored day of its window.
 *
 * It is kept exact in the transaction that changes the events: the writer counts the rows it
 * inserted (a duplicate, `ON CONFLICT DO NOTHING`, inserts none), and whatever deletes events
 * (retention and duplicate folding, maintenance.ts) takes them out first; a group left with no
 * event is deleted. Nothing updates an event's counted columns (ts, actor, tenant, service,
 * operation, result); code that writes `audit_events` another way must do the same, or call
 * `backfillActorDays`. (Triggers would cover every path, but a trigger on `audit_events` cost an
 * insert about 8 µs more on the development machine, several times this counting.)
 *
 * `day` is `ts / 86400000` in SQLite's integer division, the expression the raw count groups by.
 */
import type { Database, Statement } from '../../../src/store/database.js';

const GROUP_COLUMNS = 'actor_id, day, tenant_id, service, operation_id';
const DAY_MS = 86_400_000;

export const ACTOR_DAYS_TABLE = `
  CREATE TABLE audit_actor_days (
    actor_id INTEGER NOT NULL,
    day INTEGER NOT NULL,
    tenant_id INTEGER NOT NULL,
    service TEXT NOT NULL,
    operation_id INTEGER NOT NULL,
    events INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    PRIMARY KEY (day, actor_id, tenant_id, service, operation_id)
  ) WITHOUT ROWID;`;

/** The groups of the events `where` selects, with their event and failure counts. */
const groups = (where: string) => `
  SELECT e.actor_id, e.ts / 86400000, e.tenant_id, e.service, e.operation_id, count(*),
    sum(EXISTS (SELECT 1 FROM audit_results r WHERE r.id = e.result_id AND r.normalized = 'failure'))
  FROM audit_events e ${where}
  GROUP BY 1, 2, 3, 4, 5`;

const SEQS = 'WHERE e.seq IN (SELECT value FROM json_each(?))';

/** Counts every stored event afresh (one GROUP BY): the migration's backfill, a bulk load's end. */
export function backfillActorDays(db: Database): void {
  db.exec(
    `DELETE FROM audit_actor_days; INSERT INTO audit_actor_days (${GROUP_COLUMNS}, events, failures) ${groups('')};`,
  );
}

/** One event's counted columns, as `audit_events` stores them. */
export interface CountedEvent {
  actorId: number;
  ts: number;
  tenantId: number;
  service: string;
  operationId: number;
  resultId: number;
}

/**
 * Keeps the rollup right for events the caller inserts or deletes, inside the caller's
 * transaction: `added` for each row inserted, `removing` before rows are deleted.
 */
export class ActorDays {
  private readonly add: Statement;
  private readonly gone: Statement;
  private readonly subtract: Statement;
  private readonly dropEmpty: Statement;

  constructor(db: Database) {
    // From the values just inserted (no second read of the row): `day` truncated as SQLite's
    // integer division truncates the stored (integer) ts.
    this.add = db.prepare(`
      INSERT INTO audit_actor_days (${GROUP_COLUMNS}, events, failures)
      VALUES (?, ?, ?, ?, ?, 1, EXISTS (SELECT 1 FROM audit_results WHERE id = ? AND normalized = 'failure'))
      ON CONFLICT DO UPDATE SET events = events + 1, failures = failures + excluded.failures`);
    this.gone = db.prepare(groups(SEQS)).raw(true);
    const key = 'actor_id = ? AND day = ? AND tenant_id = ? AND service = ? AND operation_id = ?';
    this.subtract = db.prepare(
      `UPDATE audit_actor_days SET events = events - ?, failures = failures - ? WHERE ${key}`,
    );
    this.dropEmpty = db.prepare(`DELETE FROM audit_actor_days WHERE ${key} AND events <= 0`);
  }

  /** Counts an event just inserted. */
  added(e: CountedEvent): void {
    this.add.run(e.actorId, Math.trunc(e.ts / DAY_MS), e.tenantId, e.service, e.operationId, e.resultId);
  }

  /** Takes out events about to be deleted; a group left with none is deleted. */
  removing(seqs: readonly number[]): void {
    if (!seqs.length) return;
    const rows = this.gone.all(JSON.stringify(seqs)) as Array<
      [number, number, number, string, number, number, number]
    >;
    for (const [actor, day, tenant, service, operation, events, failures] of rows) {
      this.subtract.run(events, failures, actor, day, tenant, service, operation);
      this.dropEmpty.run(actor, day, tenant, service, operation);
    }
  }
}
