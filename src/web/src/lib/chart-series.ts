/**
 * Chart data from history rows: one x array (seconds, as uPlot wants) and one y array per
 * metric in display units. Where the readings stop for much longer than their usual spacing
 * (a node was off), a null is put in so the line breaks instead of drawing a false ramp.
 */
import type { MetricInfo, MetricKey, ReadingJson } from './metrics.js';

export interface ChartSeries {
  x: number[];
  y: Partial<Record<MetricKey, Array<number | null>>>;
  /** Metrics with at least one value, in catalogue order. */
  present: MetricInfo[];
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function chartSeries(rows: readonly ReadingJson[], metrics: readonly MetricInfo[]): ChartSeries {
  const times = rows.map((r) => Date.parse(r.timestamp) / 1000);
  const steps: number[] = [];
  for (let i = 1; i < times.length; i++) steps.push(times[i]! - times[i - 1]!);
  const gap = Math.max(median(steps) * 3, 1);
  const x: number[] = [];
  const y: ChartSeries['y'] = {};
  const present = metrics.filter((m) => rows.some((r) => typeof r[m.key] === 'number'));
  for (const m of present) y[m.key] = [];
  for (let i = 0; i < rows.length; i++) {
    const t = times[i]!;
    if (!Number.isFinite(t)) continue;
    const previous = x[x.length - 1];
    if (previous !== undefined && t - previous > gap) {
      x.push((previous + t) / 2);
      for (const m of present) y[m.key]!.push(null);
    }
    x.push(t);
    for (const m of present) {
      const v = rows[i]![m.key];
      y[m.key]!.push(typeof v === 'number' && Number.isFinite(v) ? m.display(v) : null);
    }
  }
  return { x, y, present };
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
