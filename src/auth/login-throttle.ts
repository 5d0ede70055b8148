/**
 * Login throttling for `POST /api/v1/auth/token`: failed attempts are counted per username and
 * per client address in a window that starts at the first failure. Past the limit, further
 * attempts are refused with 429 and Retry-After until the window ends, before any password is
 * checked. An attempt counts as a failure from the moment it starts (so a burst of concurrent
 * guesses cannot all slip in while scrypt runs); a success takes it back and clears the
 * username's count. Memory is bounded: at most `maxEntries` keys each.
 */

export interface LoginThrottleOptions {
  maxFailuresPerUsername?: number;
  maxFailuresPerAddress?: number;
  windowMs?: number;
  maxEntries?: number;
  now?: () => number;
}

interface Window {
  startedAt: number;
  failures: number;
}

export type ThrottleVerdict =
  | { allowed: true }
  | { allowed: false; retryAfterSeconds: number; by: 'username' | 'address' };

class FailureCounter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.windows.size;
  }

  /** Seconds until `key` may try again, or 0 when it may now. */
  blockedFor(key: string, now: number): number {
    const w = this.windows.get(key);
    if (!w) return 0;
    const endsAt = w.startedAt + this.windowMs;
    if (endsAt <= now) {
      this.windows.delete(key);
      return 0;
    }
    return w.failures >= this.max ? Math.ceil((endsAt - now) / 1000) : 0;
  }

  fail(key: string, now: number): void {
    const w = this.windows.get(key);
    if (w && w.startedAt + this.windowMs > now) {
      w.failures++;
      return;
    }
    this.windows.delete(key);
    if (this.windows.size >= this.maxEntries) this.prune(now);
    this.windows.set(key, { startedAt: now, failures: 1 });
  }

  clear(key: string): void {
    this.windows.delete(key);
  }

  undo(key: string, now: number): void {
    const w = this.windows.get(key);
    if (w && w.startedAt + this.windowMs > now && w.failures > 0) w.failures--;
  }

  private prune(now: number): void {
    for (const [key, w] of this.windows) if (w.startedAt + this.windowMs <= now) this.windows.delete(key);
    // Still full: forget the oldest windows (Map keeps insertion order).
    for (const key of this.windows.keys()) {
      if (this.windows.size < this.maxEntries) break;
      this.windows.delete(key);
    }
  }
}

export class LoginThrottle {
  private readonly byUsername: FailureCounter;
  private readonly byAddress: FailureCounter;
  private readonly now: () => number;

  constructor(options: LoginThrottleOptions = {}) {
    const windowMs = options.windowMs ?? 15 * 60_000;
    const maxEntries = options.maxEntries ?? 10_000;
    this.byUsername = new FailureCounter(options.maxFailuresPerUsername ?? 5, windowMs, maxEntries);
    this.byAddress = new FailureCounter(options.maxFailuresPerAddress ?? 20, windowMs, maxEntries);
    this.now = options.now ?? Date.now;
  }

  /** Refuses a throttled attempt; otherwise counts it as a failure until `succeeded` says otherwise. */
  attempt(username: string, address: string): ThrottleVerdict {
    const now = this.now();
    const user = this.byUsername.blockedFor(username, now);
    const addr = this.byAddress.blockedFor(address, now);
    if (user || addr) {
      return user >= addr
        ? { allowed: false, retryAfterSeconds: user, by: 'username' }
        : { allowed: false, retryAfterSeconds: addr, by: 'address' };
    }
    this.byUsername.fail(username, now);
    this.byAddress.fail(address, now);
    return { allowed: true };
  }

  /** Usernames and addresses currently remembered (bounded by `maxEntries` each). */
  get trackedKeys(): number {
    return this.byUsername.size + this.byAddress.size;
  }

  succeeded(username: string, address: string): void {
    this.byUsername.clear(username);
    this.byAddress.undo(address, this.now());
  }
}
