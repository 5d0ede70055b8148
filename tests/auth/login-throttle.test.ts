import { describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../src/auth/login-throttle.js';

describe('LoginThrottle', () => {
  const clock = () => {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };

  it('blocks a username after its failures until the window ends; a success clears it', () => {
    const c = clock();
    const throttle = new LoginThrottle({ maxFailuresPerUsername: 3, windowMs: 60_000, now: c.now });
    for (let i = 0; i < 3; i++) expect(throttle.attempt('alice', '10.0.0.1').allowed).toBe(true);
    c.advance(10_000);
    expect(throttle.attempt('alice', '10.0.0.2')).toEqual({
      allowed: false,
      retryAfterSeconds: 50,
      by: 'username',
    });
    c.advance(50_000);
    expect(throttle.attempt('alice', '10.0.0.1').allowed).toBe(true);
    throttle.succeeded('alice', '10.0.0.1');
    for (let i = 0; i < 3; i++) expect(throttle.attempt('alice', '10.0.0.1').allowed).toBe(true);
  });

  it('blocks an address across usernames; successes do not count against it', () => {
    const c = clock();
    const throttle = new LoginThrottle({ maxFailuresPerAddress: 4, windowMs: 60_000, now: c.now });
    for (let i = 0; i < 10; i++) {
      expect(throttle.attempt('ok-user', '10.0.0.9').allowed).toBe(true);
      throttle.succeeded('ok-user', '10.0.0.9');
    }
    for (let i = 0; i < 4; i++) expect(throttle.attempt(`user-${i}`, '10.0.0.9').allowed).toBe(true);
    const verdict = throttle.attempt('ok-user', '10.0.0.9');
    expect(verdict).toMatchObject({ allowed: false, by: 'address' });
    expect(throttle.attempt('ok-user', '10.0.0.10').allowed).toBe(true);
  });

  it('stays bounded in memory', () => {
    const throttle = new LoginThrottle({ maxEntries: 100 });
    for (let i = 0; i < 10_000; i++) throttle.attempt(`user-${i}`, `addr-${i}`);
    expect(throttle.trackedKeys).toBeLessThanOrEqual(200);
  });
});
