/**
 * Runs a function in one `BEGIN IMMEDIATE` transaction (nested calls become savepoints). The
 * better-sqlite3 transaction wrapper is built once per connection and reused: building one per
 * call costs more than the statements of a small write.
 */
import type { Database } from '../store/database.js';

export type Atomically = <R>(fn: () => R) => R;

const perConnection = new WeakMap<Database, Atomically>();

export function transactionOn(db: Database): Atomically {
  let atomically = perConnection.get(db);
  if (!atomically) {
    const run = db.transaction((fn: () => unknown) => fn());
    atomically = <R>(fn: () => R) => run.immediate(fn) as R;
    perConnection.set(db, atomically);
  }
  return atomically;
}
