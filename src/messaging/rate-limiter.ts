/**
 * Rate limits of POST /api/v1/messages (per subscriber, per target node): a token bucket per
 * key holding `count` tokens and refilling `count` per `windowMs`, so a burst of `count` passes
 * and then one more every `windowMs / count`. `check` and `consume` are split so a request
 * refused by one limit uses up nothing of the other. In memory: a restart refills the buckets.
 */

export interface RateLimit {
  count: number;
  windowMs: number;
}

export type RateVerdict = { ok: true } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perMs: number;

  constructor(
    readonly limit: RateLimit,
    private readonly options: { maxKeys?: number; now?: () => number } = {},
  ) {
    this.perMs = limit.count / limit.windowMs;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private level(key: string, now: number): number {
    const bucket = this.buckets.get(key);
    if (!bucket) return this.limit.count;
    return Math.min(this.limit.count, bucket.tokens + (now - bucket.updatedAt) * this.perMs);
  }

  /** Whether one more request for `key` would pass now (takes nothing). */
  check(key: string): RateVerdict {
    const tokens = this.level(key, this.now());
    if (tokens >= 1) return { ok: true };
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / this.perMs / 1000)) };
  }

  consume(key: string): void {
    const now = this.now();
    const tokens = this.level(key, now) - 1;
    this.buckets.delete(key);
    if (this.buckets.size >= (this.options.maxKeys ?? 100_000)) this.prune(now);
    this.buckets.set(key, { tokens, updatedAt: now });
  }

  private prune(now: number): void {
    // A full bucket is the same as no bucket: forget those first, then the least recently used.
    for (const key of this.buckets.keys())
      if (this.level(key, now) >= this.limit.count) this.buckets.delete(key);
    const maxKeys = this.options.maxKeys ?? 100_000;
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < maxKeys) break;
      this.buckets.delete(key);
    }
  }
}
