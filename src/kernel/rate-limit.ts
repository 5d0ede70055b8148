/**
 * The one rate limiter of both applications: a token bucket per key holding `count` tokens and
 * refilling `count` per `windowMs`, so a burst of `count` passes and then one more every
 * `windowMs / count`. What is limited, by how much, and what a refusal says stay with each
 * feature (messaging, the audit tiers, the login throttle).
 *
 * A bucket is kept as its equivalent GCRA (generic cell rate algorithm) state: the time it is
 * full again (`fullAt`, the "theoretical arrival time"). A request passes when the bucket holds
 * a whole token, i.e. `max(fullAt, now) + windowMs / count − now ≤ windowMs`; taking it moves
 * `fullAt` on by `windowMs / count`. A `fullAt` in the past is a full bucket, the same as none.
 * One number per key, so the state lives as well in a Map (`RateLimiter`, in memory: a restart
 * refills the buckets) as in a database row (the upstream's `rate_windows`).
 *
 * `fixedWindowVerdict` is the same verdict for a counter kept elsewhere as a fixed window (the
 * audit plugin's cache store counts that way, atomically, in SQLite or Redis).
 */

export interface RateLimit {
  count: number;
  windowMs: number;
}

export type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

/** One limit to pass: the bucket `key` under `limit`. */
export interface RateCheck {
  key: string;
  limit: RateLimit;
}

/** Every check passed and took a token (each bucket's new `fullAt`), or the first that refused. */
export type RateTake<C extends RateCheck = RateCheck> =
  | { ok: true; taken: Array<{ check: C; fullAt: number }> }
  | { ok: false; refused: C; retryAfterSeconds: number };

/** A wait in ms as the whole seconds of a Retry-After header: at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The milliseconds one request uses up of a bucket (the refill period of one token). */
function emission(limit: RateLimit): number {
  return limit.windowMs / limit.count;
}

/** Whether one more request passes a bucket that is full again at `fullAt` (takes nothing). */
export function bucketVerdict(limit: RateLimit, fullAt: number, now: number): RateVerdict {
  const over = Math.max(fullAt, now) - now - (limit.windowMs - emission(limit));
  if (over <= 0) return { ok: true };
  return { ok: false, retryAfterSeconds: retryAfterSeconds(over) };
}

/** The first of `checks` that refuses a request now (`fullAtOf` reads a bucket; undefined: full). */
export function firstRefusal<C extends RateCheck>(
  checks: readonly C[],
  fullAtOf: (key: string) => number | undefined,
  now: number,
): { refused: C; retryAfterSeconds: number } | undefined {
  for (const check of checks) {
    const verdict = bucketVerdict(check.limit, fullAtOf(check.key) ?? now, now);
    if (!verdict.ok) return { refused: check, retryAfterSeconds: verdict.retryAfterSeconds };
  }
  return undefined;
}

/**
 * Takes one token from each bucket, whatever it holds (a bucket's level may go below zero), and
 * returns each bucket's new `fullAt` for the caller to store. `wholeMs` rounds it up to a whole
 * ms (for a BIGINT column).
 */
export function takeTokens<C extends RateCheck>(
  checks: readonly C[],
  fullAtOf: (key: string) => number | undefined,
  now: number,
  options: { wholeMs?: boolean } = {},
): Array<{ check: C; fullAt: number }> {
  const after = new Map<string, number>();
  return checks.map((check) => {
    const prior = after.get(check.key) ?? fullAtOf(check.key) ?? now;
    const next = Math.max(prior, now) + emission(check.limit);
    const fullAt = options.wholeMs ? Math.ceil(next) : next;
    after.set(check.key, fullAt);
    return { check, fullAt };
  });
}

/**
 * Checks every limit in order and, when all of them pass, takes one token from each: a request
 * refused by one limit uses up nothing of another.
 */
export function takeAll<C extends RateCheck>(
  checks: readonly C[],
  fullAtOf: (key: string) => number | undefined,
  now: number,
  options: { wholeMs?: boolean } = {},
): RateTake<C> {
  const refusal = firstRefusal(checks, fullAtOf, now);
  if (refusal) return { ok: false, ...refusal };
  return { ok: true, taken: takeTokens(checks, fullAtOf, now, options) };
}

/**
 * The verdict of a fixed-window counter: the window that opened with a key's first request
 * holds `hits` requests (refused ones too) and closes at `resetAt`; up to `limit.count` pass.
 */
export function fixedWindowVerdict(
  limit: RateLimit,
  window: { hits: number; resetAt: number },
  now: number,
): RateVerdict {
  if (Number.isFinite(window.hits) && window.hits <= limit.count) return { ok: true };
  return { ok: false, retryAfterSeconds: retryAfterSeconds(Math.max(0, window.resetAt - now)) };
}

/**
 * Token buckets in memory, each check naming its bucket and limit. `take` checks several and
 * takes from all or none; `check` and `consume` are its two halves for one bucket. At most
 * `maxKeys` buckets are remembered: full ones go first, then the least recently used.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, number>();

  constructor(private readonly options: { maxKeys?: number; now?: () => number } = {}) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Whether one more request for `key` under `limit` would pass now (takes nothing). */
  check(key: string, limit: RateLimit): RateVerdict {
    const now = this.now();
    return bucketVerdict(limit, this.buckets.get(key) ?? now, now);
  }

  /** Takes a token for `key`, even from an empty bucket (it then refills that much later). */
  consume(key: string, limit: RateLimit): void {
    this.store(takeTokens([{ key, limit }], (k) => this.buckets.get(k), this.now()));
  }

  /** Every check passes and takes a token, or the first that refuses is named and nothing is taken. */
  take<C extends RateCheck>(checks: readonly C[]): RateTake<C> {
    const outcome = takeAll(checks, (key) => this.buckets.get(key), this.now());
    if (outcome.ok) this.store(outcome.taken);
    return outcome;
  }

  private store(taken: ReadonlyArray<{ check: RateCheck; fullAt: number }>): void {
    const now = this.now();
    const maxKeys = this.options.maxKeys ?? 100_000;
    for (const { check, fullAt } of taken) {
      this.buckets.delete(check.key);
      if (this.buckets.size >= maxKeys) this.prune(now, maxKeys);
      this.buckets.set(check.key, fullAt);
    }
  }

  private prune(now: number, maxKeys: number): void {
    // A full bucket is the same as no bucket: forget those first, then the least recently used.
    for (const [key, fullAt] of this.buckets) if (fullAt <= now) this.buckets.delete(key);
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < maxKeys) break;
      this.buckets.delete(key);
    }
  }
}
