/**
 * Exponential backoff, the one copy every retry loop uses: the wait before retry `attempt`
 * (0, 1, 2, …) is `baseMs · 2^attempt`, at most `maxMs`; a jitter spreads the waits of many
 * clients that failed together.
 */

/** `baseMs · 2^attempt` (a negative attempt counts as 0), at most `maxMs`. */
export function exponentialDelay(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt)));
}

/** "Equal jitter": half of `ceilingMs`, plus a random share of the other half (whole milliseconds). */
export function equalJitter(ceilingMs: number, random: () => number = Math.random): number {
  return Math.round(ceilingMs / 2 + random() * (ceilingMs / 2));
}

/** "Full jitter": uniform in [0, `ceilingMs`) (whole milliseconds). */
export function fullJitter(ceilingMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * ceilingMs);
}
