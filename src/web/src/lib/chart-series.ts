/**
 * Chart data from history rows: one x array (seconds, as uPlot wants) and one y array per
 * metric in display units. The x values span the chosen range, not only the data: 24 h of
 * readings under "7 d" fill the last seventh of the chart. Where nothing was heard for longer
 * than a few buckets (hourly or daily means) or a few times the usual spacing (raw readings),
 * a null breaks the line instead of drawing a false ramp.
 */
import type { HistoryInterval } from './history-plan.js';
import type { MetricInfo, MetricKey, ReadingJson } from './metrics.js';

export interface ChartSeries {
  x: number[];
  y: Partial<Record<MetricKey, Array<number | null>>>;
  /** Metrics with at least one value, in catalogue order. */
  present: MetricInfo[];
}

export interface ChartRange {
  /** The chosen range (ms): the x axis spans at least this. */
  start: number;
  end: number;
  interval: HistoryInterval;
}

/** Seconds per bucket of the means (raw readings have none). */
const BUCKET_S: Record<HistoryInterval, number | undefined> = { raw: undefined, '1h': 3_600, '1d': 86_400 };

/** A line is broken across a silence longer than this many buckets, or times the usual raw spacing. */
export const GAP_FACTOR = 3;

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The longest silence (s) a line is drawn across. */
export function gapThreshold(times: readonly number[], interval: HistoryInterval = 'raw'): number {
  const bucket = BUCKET_S[interval];
  if (bucket !== undefined) return bucket * GAP_FACTOR;
  const steps: number[] = [];
  for (let i = 1; i < times.length; i++) steps.push(times[i]! - times[i - 1]!);
  return Math.max(median(steps) * GAP_FACTOR, 1);
}

export function chartSeries(
  rows: readonly ReadingJson[],
  metrics: readonly MetricInfo[],
  range?: ChartRange,
): ChartSeries {
  const times = rows.map((r) => Date.parse(r.timestamp) / 1000);
  const gap = gapThreshold(times.filter(Number.isFinite), range?.interval);
  const x: number[] = [];
  const y: ChartSeries['y'] = {};
  const present = metrics.filter((m) => rows.some((r) => typeof r[m.key] === 'number'));
  for (const m of present) y[m.key] = [];
  const empty = () => {
    for (const m of present) y[m.key]!.push(null);
  };
  for (let i = 0; i < rows.length; i++) {
    const t = times[i]!;
    if (!Number.isFinite(t)) continue;
    const previous = x[x.length - 1];
    if (previous !== undefined && t - previous > gap) {
      x.push((previous + t) / 2);
      empty();
    }
    x.push(t);
    for (const m of present) {
      const v = rows[i]![m.key];
      y[m.key]!.push(typeof v === 'number' && Number.isFinite(v) ? m.display(v) : null);
    }
  }
  if (range && x.length > 0) {
    // Empty ends at the range's edges: uPlot fits its x axis to them, and draws nothing there.
    const start = range.start / 1000;
    const end = range.end / 1000;
    if (start < x[0]!) {
      x.unshift(start);
      for (const m of present) y[m.key]!.unshift(null);
    }
    if (end > x[x.length - 1]!) {
      x.push(end);
      empty();
    }
  }
  return { x, y, present };
}

/** True when a value has no value beside it: a line cannot show it, a point must. */
export function hasLoneValue(values: ReadonlyArray<number | null>): boolean {
  return values.some(
    (v, i) => v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null,
  );
}

/** Decimal places that tell the axis' ticks apart: 0.05 steps get 2, 10 steps get 0. */
export function tickDigits(splits: readonly number[], atMost = 3): number {
  let step = Infinity;
  for (let i = 1; i < splits.length; i++) step = Math.min(step, Math.abs(splits[i]! - splits[i - 1]!));
  if (!Number.isFinite(step) || step <= 0) return 0;
  return Math.min(atMost, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
}

export interface SeriesSummary {
  min: number;
  max: number;
  last: number;
}

/** Minimum, maximum and last value: the text a screen reader gets instead of the canvas. */
export function summarise(values: ReadonlyArray<number | null>): SeriesSummary | undefined {
  let min = Infinity;
  let max = -Infinity;
  let last: number | undefined;
  for (const v of values) {
    if (v === null) continue;
    if (v < min) min = v;
    if (v > max) max = v;
    last = v;
  }
  return last === undefined ? undefined : { min, max, last };
}
