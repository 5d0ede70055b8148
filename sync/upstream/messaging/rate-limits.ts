/**
 * Rate limits of POST /api/v1/messages on the upstream, per subscriber and per target node,
 * counted in PostgreSQL (`rate_windows`) so every upstream process behind the load balancer
 * shares them.
 *
 * The semantics are the hub's (src/messaging/rate-limiter.ts): a token bucket per key holding
 * `count` tokens and refilling `count` per `windowMs` — a burst of `count`, then one more every
 * `windowMs / count` — with the same Retry-After. In the database it is kept as its equivalent
 * GCRA (generic cell rate algorithm): one row per scope whose `window_start` is the time the
 * scope's bucket is full again (the "theoretical arrival time"), and whose `count` is how many
 * requests it let through since it was last full. A request passes when the bucket holds a
 * whole token, i.e. `max(full_at, now) + windowMs / count − now ≤ windowMs`; taking it moves
 * `full_at` on by `windowMs / count`. A row whose `full_at` has passed means a full bucket, the
 * same as no row.
 *
 * Every scope is locked for the caller's transaction (`pg_advisory_xact_lock`, in a fixed
 * order) before it is read, so two processes never both take the last token; the caller
 * stores the message in that same transaction, and a refused request rolls back having taken
 * nothing of either limit.
 */
import type pg from 'pg';
import type { z } from 'zod';
import type { RateLimit, RateVerdict } from '../../../src/messaging/rate-limiter.js';
import type { messagingSettings } from '../../../src/messaging/settings.js';

/** What `MESSAGE_RATE_PER_SUBSCRIBER` / `MESSAGE_RATE_PER_NODE` parse to: `{ count, windowMs }`. */
export type RateSetting = z.output<typeof messagingSettings>['MESSAGE_RATE_PER_SUBSCRIBER'];

/** The `rate_windows.scope` of a subscriber's limit. */
export const subscriberScope = (principal: string): string => `subscriber:${principal}`;
/** The `rate_windows.scope` of a node's limit. */
export const nodeScope = (nodeId: string): string => `node:${nodeId}`;

export interface RateCheck {
  scope: string;
  limit: RateLimit;
}

export type RateOutcome = { ok: true } | { ok: false; refused: RateCheck; retryAfterSeconds: number };

interface Bucket {
  fullAt: number;
  count: number;
}

/** The milliseconds one request uses up of a bucket (the refill period of one token). */
function emission(limit: RateLimit): number {
  return limit.windowMs / limit.count;
}

/** Whether one more request passes a bucket that is full again at `fullAt` (takes nothing). */
export function verdict(limit: RateLimit, fullAt: number, now: number): RateVerdict {
  const tolerance = limit.windowMs - emission(limit);
  const over = Math.max(fullAt, now) - now - tolerance;
  if (over <= 0) return { ok: true };
  return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(over / 1000)) };
}

/**
 * In the caller's transaction: locks every scope, checks each limit in order, and when all of
 * them pass takes one request from each. Refused: takes nothing and names the first limit that
 * refused (the caller rolls back anyway). The locks last until the transaction ends.
 */
export async function takeRateTokens(
  client: pg.ClientBase,
  checks: readonly RateCheck[],
  now: number,
): Promise<RateOutcome> {
  // A fixed order: two transactions locking the same scopes can never wait on each other.
  const scopes = [...new Set(checks.map((c) => c.scope))].sort();
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
  for (const check of checks) {
    const v = verdict(check.limit, buckets.get(check.scope)?.fullAt ?? now, now);
    if (!v.ok) return { ok: false, refused: check, retryAfterSeconds: v.retryAfterSeconds };
  }
  for (const check of checks) {
    const bucket = buckets.get(check.scope);
    const busy = bucket !== undefined && bucket.fullAt > now;
    const fullAt = Math.ceil(Math.max(bucket?.fullAt ?? now, now) + emission(check.limit));
    const count = busy ? bucket.count + 1 : 1;
    // One row per scope: the lock above makes delete-then-insert safe.
    await client.query('DELETE FROM rate_windows WHERE scope = $1', [check.scope]);
    await client.query('INSERT INTO rate_windows (scope, window_start, count) VALUES ($1, $2, $3)', [
      check.scope,
      fullAt,
      count,
    ]);
    buckets.set(check.scope, { fullAt, count });
  }
  return { ok: true };
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
