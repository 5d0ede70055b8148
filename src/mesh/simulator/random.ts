/**
 * Deterministic randomness for the simulator: every simulated value is a pure function of
 * (seed, node, time), so a replay to a reconnected client produces identical packets.
 */

const TWO_POW_32 = 4_294_967_296;

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A well-mixed 32-bit hash of integer keys; keys may exceed 32 bits (epoch milliseconds). */
export function hash32(...keys: number[]): number {
  let h = 0x9e3779b9;
  for (const key of keys) {
    const k = Math.floor(key);
    h = fmix32((h ^ (k >>> 0)) >>> 0);
    h = fmix32((h + (Math.floor(k / TWO_POW_32) >>> 0) + 0x7f4a7c15) >>> 0);
  }
  return h;
}

/** A uniform value in [0, 1) for the keys. */
export function unitHash(...keys: number[]): number {
  return hash32(...keys) / TWO_POW_32;
}

/** Smooth value noise in [0, 1): `x` in cells, equal keys give equal curves. */
export function smoothNoise(x: number, ...keys: number[]): number {
  const i = Math.floor(x);
  const f = x - i;
  const t = f * f * (3 - 2 * f);
  const a = unitHash(...keys, i);
  const b = unitHash(...keys, i + 1);
  return a + (b - a) * t;
}

/** A seeded PRNG (mulberry32) for sequences: node identities, schedule jitter. */
export function seededRandom(seed: number): () => number {
  let state = hash32(seed);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / TWO_POW_32;
  };
}
