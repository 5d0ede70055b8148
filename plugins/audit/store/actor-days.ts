/**
 * Issue 29, the actor timeline's counts at 10 million events: `audit_actor_days` holds, per actor,
 * UTC day, tenant, service and operation, how many events there are and how many of them failed
 * (the result normalized as 'failure'). The timeline's counts (event-query.ts `daily`) read at most
 * days × tenants × services × operations rows of it instead of one index entry per event.
 *
 * Operation and tenant are in the key because the privacy scope (hidden services, hidden
 * operations, allowed tenants) applies to the counts exactly as to the list.
 *
 * It stays exact by triggers on `audit_events`, in the same transaction as the change: an insert
 * adds one (a duplicate that is `ON CONFLICT DO NOTHING` inserts nothing, so counts nothing), a
 * delete — retention, duplicate folding, anything later — takes one away and drops a group at
 * zero, and an update of a counted column moves the event between groups. A migration that
 * rebuilds `audit_events` (create, copy, drop, rename) drops its triggers with the old table: it
 * must call `createActorDaysTriggers` again, as it recreates the indexes.
 *
 * `day` is `ts / 86400000` in SQLite's integer division, the expression the raw count groups by.
 */
import type { Database } from '../../../src/store/database.js';

const DAY = 'ts / 86400000';
const KEY = ['actor_id', 'day', 'tenant_id', 'service', 'operation_id'] as const;
/** 1 when the event's result is normalized as a failure (a primary-key lookup, 0 for no result row). */
const failed = (ref: string) =>
  `EXISTS (SELECT 1 FROM audit_results WHERE id = ${ref}.result_id AND normalized = 'failure')`;
const keyOf = (ref: string) =>
  `${ref}.actor_id, ${ref}.${DAY}, ${ref}.tenant_id, ${ref}.service, ${ref}.operation_id`;

export const ACTOR_DAYS_TABLE = `
  CREATE TABLE audit_actor_days (
    actor_id INTEGER NOT NULL,
    day INTEGER NOT NULL,
    tenant_id INTEGER NOT NULL,
    service TEXT NOT NULL,
    operation_id INTEGER NOT NULL,
    events INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    PRIMARY KEY (${KEY.join(', ')})
  ) WITHOUT ROWID;`;

/** Counts the event `ref` (new or old) in its group. */
const add = (ref: string) => `
    INSERT INTO audit_actor_days (${KEY.join(', ')}, events, failures)
    VALUES (${keyOf(ref)}, 1, ${failed(ref)})
    ON CONFLICT DO UPDATE SET events = events + 1, failures = failures + excluded.failures;`;

/** Takes the event `ref` out of its group; a group left with no event is deleted. */
const remove = (ref: string) => {
  const where = `actor_id = ${ref}.actor_id AND day = ${ref}.${DAY} AND tenant_id = ${ref}.tenant_id AND service = ${ref}.service AND operation_id = ${ref}.operation_id`;
  return `
    UPDATE audit_actor_days SET events = events - 1, failures = failures - ${failed(ref)} WHERE ${where};
    DELETE FROM audit_actor_days WHERE ${where} AND events <= 0;`;
};

/** The triggers that keep the rollup exact (run by the migration, and after a table rebuild). */
export function createActorDaysTriggers(db: Database): void {
  db.exec(`
    CREATE TRIGGER audit_actor_days_insert AFTER INSERT ON audit_events BEGIN ${add('new')}
    END;
    CREATE TRIGGER audit_actor_days_delete AFTER DELETE ON audit_events BEGIN ${remove('old')}
    END;
    CREATE TRIGGER audit_actor_days_update
      AFTER UPDATE OF ts, service, operation_id, result_id, actor_id, tenant_id ON audit_events
    BEGIN ${remove('old')} ${add('new')}
    END;`);
}

/** Recounts the whole rollup from `audit_events` (one GROUP BY): the migration's backfill, bulk loads. */
export function backfillActorDays(db: Database): void {
  db.exec(`
    DELETE FROM audit_actor_days;
    INSERT INTO audit_actor_days (${KEY.join(', ')}, events, failures)
      SELECT actor_id, ${DAY}, tenant_id, service, operation_id, count(*), sum(${failed('e')})
      FROM audit_events e
      GROUP BY 1, 2, 3, 4, 5;`);
}
