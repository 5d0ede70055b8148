/**
 * Rate limits of POST /api/v1/messages on the upstream, per subscriber and per target node,
 * counted in PostgreSQL (`rate_windows`) so every upstream process behind the load balancer
 * shares them.
 *
 * The bucket is the one rate limiter's (src/kernel/rate-limit.ts), as the hub's in memory: one
 * row per scope whose `window_start` is the time the scope's bucket is full again (GCRA's
 * `fullAt`), and whose `count` is how many requests it let through since it was last full. A
 * row whose `window_start` has passed means a full bucket, the same as no row.
 *
 * Every scope is locked for the caller's transaction (`pg_advisory_xact_lock`, in a fixed
 * order) before it is read, so two processes never both take the last token; the caller
 * stores the message in that same transaction, and a refused request rolls back having taken
 * nothing of either limit.
 */
import type pg from 'pg';
import { type RateCheck, type RateTake, takeAll } from '../../../src/kernel/rate-limit.js';

interface Bucket {
  fullAt: number;
  count: number;
}

/**
 * In the caller's transaction: locks every scope (a check's `key`), checks each limit in order,
 * and when all of them pass takes one request from each. Refused: takes nothing and names the
 * first limit that refused (the caller rolls back anyway). The locks last until the transaction
 * ends.
 */
export async function takeRateTokens<C extends RateCheck>(
  client: pg.ClientBase,
  checks: readonly C[],
  now: number,
): Promise<RateTake<C>> {
  // A fixed order: two transactions locking the same scopes can never wait on each other.
  const scopes = [...new Set(checks.map((c) => c.key))].sort();
  for (const scope of scopes) {
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('meshhub:rate:' || $1, 0))", [scope]);
  }
  const { rows } = await client.query<{ scope: string; window_start: string; count: number }>(
    'SELECT scope, window_start, count FROM rate_windows WHERE scope = ANY($1::text[])',
    [scopes],
  );
  const buckets = new Map<string, Bucket>();
  for (const row of rows) {
    const fullAt = Number(row.window_start);
    const prior = buckets.get(row.scope);
    if (!prior || fullAt > prior.fullAt) buckets.set(row.scope, { fullAt, count: row.count });
  }
  const outcome = takeAll(checks, (scope) => buckets.get(scope)?.fullAt, now, { wholeMs: true });
  if (!outcome.ok) return outcome;
  for (const { check, fullAt } of outcome.taken) {
    const bucket = buckets.get(check.key);
    const count = bucket !== undefined && bucket.fullAt > now ? bucket.count + 1 : 1;
    // One row per scope: the lock above makes delete-then-insert safe.
    await client.query('DELETE FROM rate_windows WHERE scope = $1', [check.key]);
    await client.query('INSERT INTO rate_windows (scope, window_start, count) VALUES ($1, $2, $3)', [
      check.key,
      fullAt,
      count,
    ]);
    buckets.set(check.key, { fullAt, count });
  }
  return outcome;
}
/** Deletes up to 1000 rows of buckets that are full again (the same as no row); returns how many. */
export async function pruneRateWindows(pool: pg.Pool, now: number): Promise<number> {
  const result = await pool.query(
    `DELETE FROM rate_windows WHERE ctid IN
       (SELECT ctid FROM rate_windows WHERE window_start <= $1 LIMIT 1000)`,
    [now],
  );
  return result.rowCount ?? 0;
}
