/**
 * The one rate limiter (src/kernel/rate-limit.ts): the token bucket in memory, taking from all
 * buckets of a request or none, and the fixed-window verdict.
 */
import { describe, expect, it } from 'vitest';
import { fixedWindowVerdict, RateLimiter, retryAfterSeconds } from '../../src/kernel/rate-limit.js';

describe('RateLimiter', () => {
  it('lets a burst of `count` pass, then one per window/count; check never consumes', () => {
    let now = 0;
    const limit = { count: 3, windowMs: 60_000 };
    const limiter = new RateLimiter({ now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(limiter.check('alice', limit)).toEqual({ ok: true });
      limiter.consume('alice', limit);
    }
    expect(limiter.check('alice', limit)).toEqual({ ok: false, retryAfterSeconds: 20 });
    expect(limiter.check('alice', limit)).toEqual({ ok: false, retryAfterSeconds: 20 });
    expect(limiter.check('bob', limit)).toEqual({ ok: true });
    now += 19_000;
    expect(limiter.check('alice', limit)).toEqual({ ok: false, retryAfterSeconds: 1 });
    now += 1_000;
    expect(limiter.check('alice', limit)).toEqual({ ok: true });
  });

  it('take: a request refused by one bucket takes nothing of the others, and names the first that refused', () => {
    const now = 0;
    const limiter = new RateLimiter({ now: () => now });
    const wide = { count: 5, windowMs: 60_000 };
    const narrow = { count: 1, windowMs: 60_000 };
    const checks = [
      { key: 'subscriber:a', limit: wide },
      { key: 'node:n', limit: narrow },
    ];
    expect(limiter.take(checks).ok).toBe(true);
    const refused = limiter.take(checks);
    expect(refused).toEqual({ ok: false, refused: checks[1], retryAfterSeconds: 60 });
    // The subscriber's bucket lost only the first token: four more pass.
    for (let i = 0; i < 4; i++) expect(limiter.take([checks[0]!]).ok).toBe(true);
    expect(limiter.take([checks[0]!]).ok).toBe(false);
  });

  it('forgets full buckets first when it holds maxKeys', () => {
    let now = 0;
    const limit = { count: 1, windowMs: 1_000 };
    const limiter = new RateLimiter({ maxKeys: 2, now: () => now });
    limiter.consume('a', limit);
    now = 500;
    limiter.consume('b', limit);
    now = 1_200;
    limiter.consume('c', limit);
    expect(limiter.check('b', limit).ok).toBe(false);
    expect(limiter.check('c', limit).ok).toBe(false);
  });
});

describe('fixedWindowVerdict', () => {
  it('passes up to `count` hits in a window, then waits for the window to close', () => {
    const limit = { count: 2, windowMs: 10_000 };
    expect(fixedWindowVerdict(limit, { hits: 2, resetAt: 10_000 }, 0)).toEqual({ ok: true });
    expect(fixedWindowVerdict(limit, { hits: 3, resetAt: 10_000 }, 2_500)).toEqual({
      ok: false,
      retryAfterSeconds: 8,
    });
    expect(fixedWindowVerdict(limit, { hits: Number.NaN, resetAt: 0 }, 0)).toEqual({
      ok: false,
      retryAfterSeconds: 1,
    });
  });

  it('Retry-After is whole seconds, at least 1', () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1_001)).toBe(2);
  });
});
