/**
 * Observers of the reading writer's transactions: called INSIDE the transaction that stores the
 * readings, with exactly what it added, so a record kept elsewhere in the same database (the sync
 * outbox, sync/site/outbox.ts) commits or rolls back together with the readings. An observer that
 * throws fails the whole write.
 *
 * Registered per database connection rather than per writer: the module that observes (sync) is
 * created apart from the actor that owns the writer (src/store/ingest-writer-actor.ts), and src/store must
 * not know who observes.
 */
import type { Database } from './database.js';

/**
 * One reading as stored: node id, timestamp (whole ms), then one value per METRIC_COLUMNS slot
 * (rollups.ts order). A value is null unless this write added it: a new row carries all its
 * values, a row that existed carries only the fields it filled.
 */
export type StoredReadingRow = [nodeId: string, ts: number, ...values: (number | null)[]];

export type ReadingsObserver = (rows: readonly StoredReadingRow[]) => void;

const observers = new WeakMap<Database, Set<ReadingsObserver>>();

/** Calls `observer` in every reading transaction on `db` from now on; returns the unsubscribe. */
export function observeStoredReadings(db: Database, observer: ReadingsObserver): () => void {
  let set = observers.get(db);
  if (!set) {
    set = new Set();
    observers.set(db, set);
  }
  set.add(observer);
  return () => {
    set.delete(observer);
  };
}

/** The observers of `db`, or undefined when there are none (the writer's fast check). */
export function readingsObservers(db: Database): ReadonlySet<ReadingsObserver> | undefined {
  const set = observers.get(db);
  return set && set.size > 0 ? set : undefined;
}
