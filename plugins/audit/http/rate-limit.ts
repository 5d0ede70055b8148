/**
 * Rate-limit tiers (spec "Limits"): `fetch`, `ask`, `write`, `default`, each a token bucket per
 * client address; `/api/config/auth` and `/api/config/features` are exempt (`/health` and
 * `/metrics` are the hub's and never pass through here).
 *
 * The spec keeps limits in a cache store (CACHE_URL); a hub on a Pi has none, so buckets live in
 * memory — per process, lost on restart. The limiter fails closed: when it cannot decide (its
 * table is full of active clients, or it throws), the request is refused with 429.
 */
import type { MiddlewareHandler } from 'hono';
import { ProblemError } from '../../../src/http/problem.js';
import type { RateLimitRule, RateLimitTier } from '../config.js';
import type { AuditEnv } from './context.js';
import { clientAddress } from './context.js';

interface Bucket {
  tokens: number;
  updated: number;
}

export type Decision = { ok: true } | { ok: false; retryAfterMs: number };

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rules: Record<RateLimitTier, RateLimitRule>,
    private readonly maxClients: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  take(tier: RateLimitTier, client: string): Decision {
    const rule = this.rules[tier];
    const now = this.now();
    const perMs = rule.limit / rule.windowMs;
    const key = `${tier}\u0000${client}`;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxClients) this.sweep();
      if (this.buckets.size >= this.maxClients) return { ok: false, retryAfterMs: Math.ceil(1 / perMs) };
      bucket = { tokens: rule.limit, updated: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(rule.limit, bucket.tokens + (now - bucket.updated) * perMs);
    bucket.updated = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil((1 - bucket.tokens) / perMs) };
  }

  /** Forgets buckets that have refilled completely: they hold nothing a fresh bucket would not. */
  sweep(): void {
    const now = this.now();
    for (const [key, bucket] of this.buckets) {
      const tier = key.slice(0, key.indexOf('\u0000')) as RateLimitTier;
      const rule = this.rules[tier];
      if (bucket.tokens + (now - bucket.updated) * (rule.limit / rule.windowMs) >= rule.limit) {
        this.buckets.delete(key);
      }
    }
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
    let decision: Decision;
    try {
      decision = options.limiter.take(tier, clientAddress(c));
    } catch {
      decision = { ok: false, retryAfterMs: 1000 };
    }
    if (!decision.ok) {
      options.onLimited?.(tier);
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      throw new ProblemError(429, 'too many requests; try again later', {
        headers: { 'retry-after': String(seconds) },
        tier,
      });
    }
    return next();
  };
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
