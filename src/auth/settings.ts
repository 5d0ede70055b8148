/** Settings of the hub's (and the upstream's) logins and tokens (README "Logins and tokens"). */
import { z } from 'zod';
import { duration, int } from '../config/fields.js';
import { LoginThrottle } from './login-throttle.js';

export const authSettings = z.object({
  /** Lifetime of access tokens from POST /api/v1/auth/token and /refresh (not of `meshhub token`). */
  AUTH_TOKEN_TTL: duration.prefault('15m'),
  /** Lifetime of a refresh token, renewed by each use; `0s`: no refresh tokens. */
  AUTH_REFRESH_TTL: duration.prefault('14d'),
  /** Failed logins of one username from one address before each further one must wait. */
  AUTH_LOGIN_FREE_FAILURES: int(1, 100).default(3),
  /** Failed logins from one address, any usernames, before each further one must wait. */
  AUTH_LOGIN_ADDRESS_FREE_FAILURES: int(1, 10_000).default(20),
  /** The longest wait; the waits double from 1 s up to it. */
  AUTH_LOGIN_MAX_DELAY: duration.prefault('5m'),
  /** Password checks (scrypt, 32 MiB each) at once; a few more wait, the rest are refused as busy. */
  AUTH_LOGIN_CONCURRENCY: int(1, 16).default(2),
});

export type AuthSettings = z.output<typeof authSettings>;

/**
 * The process's one login throttle, from the settings above. `internet`: the upstream, whose
 * IPv6 clients count by their /64 in the per-address budget (login-throttle.ts).
 */
export function loginThrottleFrom(
  settings: Pick<
    AuthSettings,
    | 'AUTH_LOGIN_FREE_FAILURES'
    | 'AUTH_LOGIN_ADDRESS_FREE_FAILURES'
    | 'AUTH_LOGIN_MAX_DELAY'
    | 'AUTH_LOGIN_CONCURRENCY'
  >,
  options: { now?: (() => number) | undefined; internet?: boolean } = {},
): LoginThrottle {
  return new LoginThrottle({
    ipv6By64: options.internet ?? false,
    failuresBeforeDelay: settings.AUTH_LOGIN_FREE_FAILURES,
    addressFailuresBeforeDelay: settings.AUTH_LOGIN_ADDRESS_FREE_FAILURES,
    maxDelayMs: Math.max(1_000, settings.AUTH_LOGIN_MAX_DELAY),
    maxConcurrentChecks: settings.AUTH_LOGIN_CONCURRENCY,
    maxQueuedChecks: 4 * settings.AUTH_LOGIN_CONCURRENCY,
    ...(options.now ? { now: options.now } : {}),
  });
}
