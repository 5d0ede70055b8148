import { describe, expect, it } from 'vitest';
import { equalJitter, exponentialDelay, fullJitter } from '../../src/kernel/backoff.js';

describe('backoff', () => {
  it('doubles from the base up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => exponentialDelay(n, 1_000, 10_000))).toEqual([
      1_000, 2_000, 4_000, 8_000, 10_000, 10_000,
    ]);
    expect(exponentialDelay(-1, 500, 30_000)).toBe(500);
    expect(exponentialDelay(5_000, 500, 30_000)).toBe(30_000);
  });

  it('jitters within the ceiling', () => {
    expect(equalJitter(1_000, () => 0)).toBe(500);
    expect(equalJitter(1_000, () => 1)).toBe(1_000);
    expect(fullJitter(1_000, () => 0)).toBe(0);
    expect(fullJitter(1_000, () => 0.9999)).toBe(999);
  });
});
