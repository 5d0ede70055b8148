/**
 * The one login throttle (src/auth/login-throttle.ts) with an injected clock: growing delays per
 * (username, address) and per address, no lock a stranger can set on another address, refused
 * attempts that cost no password check, a bounded number of checks at once, bounded memory.
 */
import { describe, expect, it } from 'vitest';
import { addressKey, type LoginResult, LoginThrottle } from '../../src/auth/login-throttle.js';

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const WRONG = async () => undefined;
const RIGHT = async () => ({ username: 'alice' });

function outcomes(results: Array<LoginResult<unknown>>): string[] {
  return results.map((r) => (r.outcome === 'throttled' ? `throttled ${r.retryAfterSeconds}s` : r.outcome));
}

describe('LoginThrottle', () => {
  it('lets a few failures through, then makes each further attempt wait 1 s, 2 s, 4 s … up to the cap', async () => {
    const c = clock();
    const throttle = new LoginThrottle({ failuresBeforeDelay: 3, maxDelayMs: 8_000, now: c.now });
    const seen: Array<LoginResult<unknown>> = [];
    for (let i = 0; i < 3; i++) seen.push(await throttle.login('alice', '10.0.0.1', WRONG));
    seen.push(await throttle.login('alice', '10.0.0.1', WRONG));
    expect(outcomes(seen)).toEqual(['failed', 'failed', 'failed', 'throttled 1s']);
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      const refused = await throttle.login('alice', '10.0.0.1', WRONG);
      if (refused.outcome !== 'throttled') throw new Error('expected a refusal');
      waits.push(refused.retryAfterSeconds);
      c.advance(refused.retryAfterSeconds * 1000);
      expect((await throttle.login('alice', '10.0.0.1', WRONG)).outcome).toBe('failed');
    }
    expect(waits).toEqual([1, 2, 4, 8, 8, 8]);
    // Refused attempts ran no password check.
    expect(throttle.checks).toBe(3 + 6);
    expect(throttle.refused.username).toBe(7);
  });

  it('does not stop the user on another address: a stranger cannot lock anyone out', async () => {
    const c = clock();
    const throttle = new LoginThrottle({ now: c.now });
    for (let i = 0; i < 50; i++) await throttle.login('alice', '198.51.100.7', WRONG);
    expect((await throttle.login('alice', '198.51.100.7', RIGHT)).outcome).toBe('throttled');
    expect(await throttle.login('alice', '192.0.2.10', RIGHT)).toEqual({
      outcome: 'ok',
      user: { username: 'alice' },
    });
  });

  it('makes an address that guesses across many usernames wait; other addresses are untouched', async () => {
    const c = clock();
    const throttle = new LoginThrottle({ addressFailuresBeforeDelay: 4, ipv6By64: true, now: c.now });
    for (let i = 0; i < 4; i++)
      expect((await throttle.login(`user-${i}`, '10.0.0.9', WRONG)).outcome).toBe('failed');
    expect(await throttle.login('user-x', '10.0.0.9', RIGHT)).toEqual({
      outcome: 'throttled',
      retryAfterSeconds: 1,
      by: 'address',
    });
    expect((await throttle.login('user-x', '10.0.0.10', RIGHT)).outcome).toBe('ok');
    // With ipv6By64 (the upstream) an IPv6 client counts by its /64: the next address in it
    // shares the budget …
    for (let i = 0; i < 4; i++) await throttle.login(`v6-${i}`, '2001:db8:1:2::1', WRONG);
    expect((await throttle.login('v6-x', '2001:db8:1:2:ffff::9', RIGHT)).outcome).toBe('throttled');
    expect((await throttle.login('v6-x', '2001:db8:1:3::1', RIGHT)).outcome).toBe('ok');
    // … but not a (username, address) pair: a neighbour's failures for alice do not delay her.
    const pairs = new LoginThrottle({ ipv6By64: true, now: c.now });
    for (let i = 0; i < 10; i++) await pairs.login('alice', '2001:db8:9:9::666', WRONG);
    expect((await pairs.login('alice', '2001:db8:9:9::1', RIGHT)).outcome).toBe('ok');
    // On the hub (a LAN, whose hosts share one /64) every address counts on its own.
    const lan = new LoginThrottle({ addressFailuresBeforeDelay: 4, now: c.now });
    for (let i = 0; i < 4; i++) await lan.login(`v6-${i}`, 'fd00::66', WRONG);
    expect((await lan.login('v6-x', 'fd00::67', RIGHT)).outcome).toBe('ok');
  });

  it('forgets failures after a quiet while; a success clears its pair', async () => {
    const c = clock();
    const throttle = new LoginThrottle({ failuresBeforeDelay: 2, forgetAfterMs: 60_000, now: c.now });
    await throttle.login('bob', '10.0.0.1', WRONG);
    expect((await throttle.login('bob', '10.0.0.1', RIGHT)).outcome).toBe('ok');
    await throttle.login('bob', '10.0.0.1', WRONG);
    await throttle.login('bob', '10.0.0.1', WRONG);
    expect((await throttle.login('bob', '10.0.0.1', RIGHT)).outcome).toBe('throttled');
    c.advance(5 * 60_000);
    expect((await throttle.login('bob', '10.0.0.1', RIGHT)).outcome).toBe('ok');
  });

  it('counts an attempt from its start: a concurrent burst gets only the free attempts checked', async () => {
    const c = clock();
    const throttle = new LoginThrottle({ failuresBeforeDelay: 3, now: c.now });
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => throttle.login('carol', '10.0.0.5', WRONG)),
    );
    expect(burst.filter((r) => r.outcome === 'failed')).toHaveLength(3);
    expect(throttle.checks).toBe(3);
  });

  it('runs at most maxConcurrentChecks checks at once, queues a few, refuses the rest as busy', async () => {
    const throttle = new LoginThrottle({ maxConcurrentChecks: 2, maxQueuedChecks: 3 });
    let running = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const slow = () =>
      new Promise<undefined>((resolve) => {
        running++;
        most = Math.max(most, running);
        gates.push(() => {
          running--;
          resolve(undefined);
        });
      });
    const attempts = Array.from({ length: 10 }, (_, i) => throttle.login(`u${i}`, `10.1.0.${i}`, slow));
    const settled = Promise.all(attempts);
    await Promise.resolve();
    expect(throttle.pendingChecks).toBe(5);
    expect(throttle.refused.busy).toBe(5);
    while (gates.length || throttle.pendingChecks) {
      gates.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    const results = await settled;
    expect(most).toBe(2);
    expect(results.filter((r) => r.outcome === 'failed')).toHaveLength(5);
    expect(results.filter((r) => r.outcome === 'throttled' && r.by === 'busy')).toHaveLength(5);
    expect(throttle.checks).toBe(5);
  });

  it('takes an attempt back when the check throws', async () => {
    const throttle = new LoginThrottle({ failuresBeforeDelay: 1 });
    const broken = async () => {
      throw new Error('database gone');
    };
    await expect(throttle.login('dave', '10.0.0.1', broken)).rejects.toThrow('database gone');
    await expect(throttle.login('dave', '10.0.0.1', broken)).rejects.toThrow('database gone');
    expect((await throttle.login('dave', '10.0.0.1', RIGHT)).outcome).toBe('ok');
    expect(throttle.pendingChecks).toBe(0);
  });

  it('stays bounded in memory', async () => {
    const throttle = new LoginThrottle({ maxEntries: 100 });
    for (let i = 0; i < 5_000; i++) await throttle.login(`user-${i}`, `addr-${i}`, WRONG);
    expect(throttle.trackedKeys).toBeLessThanOrEqual(200);
  });

  it('keys IPv4, IPv4-mapped and IPv6 addresses', () => {
    expect(addressKey('192.0.2.1')).toBe('192.0.2.1');
    expect(addressKey('::ffff:192.0.2.1', true)).toBe('192.0.2.1');
    expect(addressKey('2001:db8::1')).toBe('2001:db8::1');
    expect(addressKey('2001:db8:0:1:2:3:4:5', true)).toBe('2001:db8:0:1::/64');
    expect(addressKey('2001:db8::1', true)).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1', true)).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0', true)).toBe('fe80:0:0:0::/64');
  });
});
