/**
 * The one login throttle of a process: every password login goes through it, over HTTP
 * (`POST /api/v1/auth/token` on the hub and on the upstream) and over MQTT (README "Logins and
 * tokens").
 *
 * - Failures are counted per (username, client address) and per client address (any username).
 *   Past a few free failures each further attempt must wait: 1 s, 2 s, 4 s, … up to a cap. There
 *   is no lock a stranger can set: failing from address A never delays the user on address B.
 *   With `ipv6By64` (the upstream, on the internet, where one client usually holds a whole /64)
 *   the per-address budget counts an IPv6 client by its /64; the hub, on a LAN whose hosts share
 *   one /64, counts each address.
 * - An attempt counts as a failure from the moment it is let through (a burst of concurrent
 *   guesses cannot all slip in while the first one's scrypt runs); a success takes it back.
 * - A refused attempt costs no password check. At most `maxConcurrentChecks` checks (32 MiB of
 *   scrypt each) run at once and `maxQueuedChecks` wait; beyond that the attempt is refused as
 *   busy, so a flood from many addresses cannot exhaust memory.
 * - Memory is bounded: at most `maxEntries` keys per counter, the least recently failed go first.
 */
import { isIPv6 } from 'node:net';
import { exponentialDelay } from '../kernel/backoff.js';
import { retryAfterSeconds } from '../kernel/rate-limit.js';

export interface LoginThrottleOptions {
  /** Failures of one username from one address before its delays start. */
  failuresBeforeDelay?: number;
  /** Failures from one address, whatever the usernames, before its delays start. */
  addressFailuresBeforeDelay?: number;
  /** The first delay; each further failure doubles it. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** A key's failures are forgotten this long after its last one (at least `maxDelayMs`). */
  forgetAfterMs?: number;
  maxEntries?: number;
  maxConcurrentChecks?: number;
  maxQueuedChecks?: number;
  /** Count the per-address budget of IPv6 clients by their /64. */
  ipv6By64?: boolean;
  now?: () => number;
}

export type LoginRefusal = {
  outcome: 'throttled';
  retryAfterSeconds: number;
  /** What refused it: the (username, address) pair, the address, or a full password-check queue. */
  by: 'username' | 'address' | 'busy';
};

export type LoginResult<U> = { outcome: 'ok'; user: U } | { outcome: 'failed' } | LoginRefusal;

interface Failures {
  count: number;
  lastAt: number;
}

class FailureCounter {
  private readonly entries = new Map<string, Failures>();

  constructor(
    private readonly free: number,
    private readonly baseDelayMs: number,
    private readonly maxDelayMs: number,
    private readonly forgetAfterMs: number,
    private readonly maxEntries: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** The wait after `count` failures. */
  delayAfter(count: number): number {
    if (count < this.free) return 0;
    return exponentialDelay(count - this.free, this.baseDelayMs, this.maxDelayMs);
  }

  /** Milliseconds until `key` may try again; 0 when it may now. */
  waitFor(key: string, now: number): number {
    const entry = this.live(key, now);
    if (!entry) return 0;
    return Math.max(0, entry.lastAt + this.delayAfter(entry.count) - now);
  }

  fail(key: string, now: number): void {
    const entry = this.live(key, now);
    // Re-inserted: the Map's order is then least recently failed first.
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { count: (entry?.count ?? 0) + 1, lastAt: now });
  }

  /** Takes back one failure (an attempt that turned out right, or was not checked). */
  undo(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (entry.count <= 1) this.entries.delete(key);
    else entry.count--;
  }

  clear(key: string): void {
    this.entries.delete(key);
  }

  private live(key: string, now: number): Failures | undefined {
    const entry = this.entries.get(key);
    if (entry && now - entry.lastAt >= this.forgetAfterMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
}

/** The part of an address the throttle counts by: the address, or with `by64` an IPv6 address's /64. */
export function addressKey(address: string, by64 = false): string {
  const plain = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '').replace(/%.*$/, '');
  if (!by64 || !isIPv6(plain)) return plain.slice(0, 64);
  const [head = '', tail] = plain.toLowerCase().split('::');
  const front = head ? head.split(':') : [];
  const back = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? front : [...front, ...Array(8 - front.length - back.length).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class LoginThrottle {
  private readonly byPair: FailureCounter;
  private readonly byAddress: FailureCounter;
  private readonly now: () => number;
  private readonly maxConcurrentChecks: number;
  private readonly maxQueuedChecks: number;
  private readonly ipv6By64: boolean;
  private active = 0;
  private readonly queue: Array<() => void> = [];
  /** Password checks started (each one scrypt). */
  checks = 0;
  /** Attempts refused without a check, by what refused them. */
  readonly refused = { username: 0, address: 0, busy: 0 };

  constructor(options: LoginThrottleOptions = {}) {
    const baseDelayMs = options.baseDelayMs ?? 1_000;
    const maxDelayMs = Math.max(baseDelayMs, options.maxDelayMs ?? 5 * 60_000);
    const forgetAfterMs = Math.max(maxDelayMs, options.forgetAfterMs ?? 15 * 60_000);
    const maxEntries = options.maxEntries ?? 10_000;
    this.byPair = new FailureCounter(
      options.failuresBeforeDelay ?? 3,
      baseDelayMs,
      maxDelayMs,
      forgetAfterMs,
      maxEntries,
    );
    this.byAddress = new FailureCounter(
      options.addressFailuresBeforeDelay ?? 20,
      baseDelayMs,
      maxDelayMs,
      forgetAfterMs,
      maxEntries,
    );
    this.now = options.now ?? Date.now;
    this.maxConcurrentChecks = Math.max(1, options.maxConcurrentChecks ?? 2);
    this.maxQueuedChecks = Math.max(0, options.maxQueuedChecks ?? 8);
    this.ipv6By64 = options.ipv6By64 ?? false;
  }

  /**
   * Runs `check` (the password check) unless the attempt is throttled or too many checks are
   * under way. `check` resolves with the user, or undefined for wrong credentials; if it
   * throws, the attempt is taken back and the error passed on.
   */
  async login<U>(
    username: string,
    address: string,
    check: () => Promise<U | undefined>,
  ): Promise<LoginResult<U>> {
    const pair = pairKey(username, address);
    const addr = addressKey(address, this.ipv6By64);
    const now = this.now();
    const pairWait = this.byPair.waitFor(pair, now);
    const addrWait = this.byAddress.waitFor(addr, now);
    if (pairWait > 0 || addrWait > 0) {
      const by = pairWait >= addrWait ? 'username' : 'address';
      this.refused[by]++;
      return { outcome: 'throttled', retryAfterSeconds: retryAfterSeconds(Math.max(pairWait, addrWait)), by };
    }
    if (this.active >= this.maxConcurrentChecks && this.queue.length >= this.maxQueuedChecks) {
      this.refused.busy++;
      return { outcome: 'throttled', retryAfterSeconds: 1, by: 'busy' };
    }
    this.byPair.fail(pair, now);
    this.byAddress.fail(addr, now);
    const takeBack = () => {
      this.byPair.undo(pair);
      this.byAddress.undo(addr);
    };
    await this.slot();
    let user: U | undefined;
    try {
      this.checks++;
      user = await check();
    } catch (error) {
      takeBack();
      throw error;
    } finally {
      this.release();
    }
    if (user === undefined) return { outcome: 'failed' };
    this.byPair.clear(pair);
    this.byAddress.undo(addr);
    return { outcome: 'ok', user };
  }

  /** Keys remembered (bounded by `maxEntries` per counter). */
  get trackedKeys(): number {
    return this.byPair.size + this.byAddress.size;
  }

  /** Password checks running and waiting. */
  get pendingChecks(): number {
    return this.active + this.queue.length;
  }

  private slot(): Promise<void> {
    if (this.active < this.maxConcurrentChecks) {
      this.active++;
      return Promise.resolve();
    }
    // The slot passes straight from release() to the next in line: `active` stays counted.
    return new Promise((resolve) => this.queue.push(resolve));
  }

  private release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.active--;
  }
}

function pairKey(username: string, address: string): string {
  return `${addressKey(address)} ${username.trim().toLowerCase().slice(0, 64)}`;
}
