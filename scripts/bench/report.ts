/**
 * One benchmark result: our path against the raw library baseline, measured in the same run.
 * `higherIsBetter` says how to read the ratio (throughput vs time).
 */
export interface Measurement {
  label: string;
  value: number;
  unit: string;
}

export interface BenchResult {
  name: string;
  baseline: Measurement;
  ours: Measurement;
  /** ours / baseline. */
  ratio: number;
  /** The target, in words: "≥ 50% of baseline", "≤ 10% of baseline time". */
  target: string;
  pass: boolean;
  notes?: string;
}

export function compare(
  name: string,
  baseline: Measurement,
  ours: Measurement,
  target: { atLeast?: number; atMost?: number; text: string },
  notes?: string,
): BenchResult {
  const ratio = ours.value / baseline.value;
  const pass =
    (target.atLeast === undefined || ratio >= target.atLeast) &&
    (target.atMost === undefined || ratio <= target.atMost);
  return { name, baseline, ours, ratio, target: target.text, pass, ...(notes ? { notes } : {}) };
}

/** A standalone figure with an absolute target (e.g. a p99 bound), not a ratio. */
export function absolute(
  name: string,
  ours: Measurement,
  limit: { atMost: number; text: string },
): BenchResult {
  return {
    name,
    baseline: { label: 'limit', value: limit.atMost, unit: ours.unit },
    ours,
    ratio: ours.value / limit.atMost,
    target: limit.text,
    pass: ours.value <= limit.atMost,
  };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
