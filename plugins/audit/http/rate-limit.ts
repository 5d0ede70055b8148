/**
 * Rate-limit tiers (spec "Limits"): `fetch`, `ask`, `write`, `default`, each a limit per window
 * per client address; `/api/config/auth` and `/api/config/features` are exempt (`/health` and
 * `/metrics` are the hub's and never pass through here).
 *
 * The counts live in the cache store (spec: CACHE_URL "for caching, rate limits and the job
 * queue"): the hub's SQLite file by default, so limits survive a restart, or Redis with
 * `CACHE_URL=redis://…`, so hubs sharing one Redis share the limits. Each tier is a fixed window
 * per client that opens at the client's first request: up to `limit` requests pass, the rest
 * are 429 with Retry-After (the seconds until the window closes). Refused requests count too, so
 * a client that keeps hammering stays refused until its window closes.
 *
 * The verdict is the one rate limiter's fixed-window verdict (src/kernel/rate-limit.ts).
 *
 * Fail-closed: when the store fails (Redis down or hanging, SQLite refusing), no request of a
 * limited tier passes — 503 with Retry-After, a problem naming the cause, never a 500.
 */
import type { MiddlewareHandler } from 'hono';
import { ProblemError } from '../../../src/http/problem.js';
import { fixedWindowVerdict, type RateVerdict } from '../../../src/kernel/rate-limit.js';
import type { RateCounter } from '../cache/store.js';
import type { RateLimitRule, RateLimitTier } from '../settings.js';
import type { AuditEnv } from './context.js';
import { clientAddress } from './context.js';

export type Decision = RateVerdict;

/** The cache store could not count a request; the limiter refuses it. */
export class RateLimitStoreError extends Error {
  override readonly name = 'RateLimitStoreError';
}

/** Seconds a client is told to wait when the store failed. */
export const STORE_FAILED_RETRY_S = 5;

export class RateLimiter {
  private lastErrorLog = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly rules: Record<RateLimitTier, RateLimitRule>,
    private readonly counter: RateCounter,
    private readonly options: {
      now?: () => number;
      /** Told about store failures, at most once per 30 s (the store is likely down for all). */
      onStoreError?: (error: Error) => void;
    } = {},
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Counts one request of `client` in `tier`; throws RateLimitStoreError when the store fails. */
  async take(tier: RateLimitTier, client: string): Promise<Decision> {
    const rule = this.rules[tier];
    let hit: Awaited<ReturnType<RateCounter['hit']>>;
    try {
      hit = await this.counter.hit(`${tier}:${client}`, rule.windowMs);
    } catch (error) {
      const now = this.now();
      if (now - this.lastErrorLog >= 30_000) {
        this.lastErrorLog = now;
        this.options.onStoreError?.(error as Error);
      }
      throw new RateLimitStoreError((error as Error).message);
    }
    return fixedWindowVerdict(
      { count: rule.limit, windowMs: rule.windowMs },
      { hits: hit.count, resetAt: hit.resetAt },
      this.now(),
    );
  }
}

export function rateLimit(options: {
  limiter: RateLimiter;
  tierOf: (method: string, path: string) => RateLimitTier | undefined;
  onLimited?: (tier: RateLimitTier) => void;
}): MiddlewareHandler<AuditEnv> {
  return async function auditRateLimitMiddleware(c, next) {
    if (c.req.method === 'OPTIONS') return next();
    const tier = options.tierOf(c.req.method, c.req.path);
    if (!tier) return next();
    await admit(options.limiter, tier, clientAddress(c), options.onLimited);
    return next();
  };
}

/**
 * Counts one request of `client` in `tier`: a 429 problem past the limit, a 503 when the store
 * fails (fail-closed). The middleware above and MCP over HTTP (mcp/http.ts) both count here.
 */
export async function admit(
  limiter: RateLimiter,
  tier: RateLimitTier,
  client: string,
  onLimited?: (tier: RateLimitTier) => void,
): Promise<void> {
  let decision: Decision;
  try {
    decision = await limiter.take(tier, client);
  } catch {
    // Whatever failed, the request does not pass unlimited (fail-closed).
    throw new ProblemError(
      503,
      'the rate limiter cannot count requests right now (its cache store failed); try again shortly',
      { headers: { 'retry-after': String(STORE_FAILED_RETRY_S) }, tier },
    );
  }
  if (!decision.ok) {
    onLimited?.(tier);
    throw new ProblemError(429, 'too many requests; try again later', {
      headers: { 'retry-after': String(decision.retryAfterSeconds) },
      tier,
    });
  }
}

/** Which tier a request counts against (undefined: exempt). */
export function auditTierOf(method: string, path: string): RateLimitTier | undefined {
  if (path === '/api/config/auth' || path === '/api/config/features') return undefined;
  if (path === '/api/fetch') return 'fetch';
  if (path === '/api/ask' || path.startsWith('/api/ask/') || path.endsWith('/explain')) return 'ask';
  if (path.startsWith('/api/webhooks/')) return 'default';
  if (method === 'GET' || method === 'HEAD') return 'default';
  return 'write';
}
