/**
 * The charts' x axis spans the chosen range, not the data; lines break where nothing was heard
 * for longer than a few buckets; a lone value is drawn as a point.
 */
import { describe, expect, it } from 'vitest';
import { chartSeries, GAP_FACTOR, hasLoneValue, tickDigits } from '../../src/web/src/lib/chart-series.js';
import { planHistory } from '../../src/web/src/lib/history-plan.js';
import { METRICS, type ReadingJson } from '../../src/web/src/lib/metrics.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 28, 12);

function hourly(fromMs: number, hours: number): ReadingJson[] {
  return Array.from({ length: hours }, (_, i) => ({
    node_id: '!a1b2c3d4',
    timestamp: new Date(fromMs + i * HOUR).toISOString(),
    temperature_c: 10 + (i % 5),
  }));
}

describe('the chart’s x axis', () => {
  it('spans the whole 7 days chosen when only the last 24 h have data', () => {
    const plan = planHistory({ kind: 'preset', preset: '7d' }, NOW);
    if ('error' in plan) throw new Error(plan.error);
    const rows = hourly(NOW - 24 * HOUR, 24);
    const series = chartSeries(rows, METRICS, plan);
    expect(series.x[0]).toBe(plan.start / 1000);
    expect(series.x[series.x.length - 1]).toBe(plan.end / 1000);
    expect(series.x[series.x.length - 1]! - series.x[0]!).toBe(7 * 24 * 3600);
    // Nothing is drawn at the padded ends.
    expect(series.y.temperature_c![0]).toBeNull();
    expect(series.y.temperature_c!.at(-1)).toBeNull();
    // The 24 values are all there, in order.
    expect(series.y.temperature_c!.filter((v) => v !== null)).toHaveLength(24);
  });

  it('keeps data that arrived after the range was planned (live readings) inside the axis', () => {
    const start = NOW - 24 * HOUR;
    const rows = hourly(start, 3);
    const series = chartSeries(rows, METRICS, { start, end: start + HOUR, interval: '1h' });
    expect(series.x[0]).toBe(start / 1000);
    expect(series.x.at(-1)).toBe((start + 2 * HOUR) / 1000);
  });

  it('puts one reading on the chosen range, not on an axis of its own', () => {
    const plan = planHistory({ kind: 'preset', preset: '24h' }, NOW);
    if ('error' in plan) throw new Error(plan.error);
    const rows = [{ node_id: 'garden', timestamp: new Date(NOW - HOUR).toISOString(), temperature_c: 21.5 }];
    const series = chartSeries(rows, METRICS, plan);
    expect(series.x).toEqual([plan.start / 1000, (NOW - HOUR) / 1000, plan.end / 1000]);
    expect(series.y.temperature_c).toEqual([null, 21.5, null]);
    // No line can show it: the chart draws it as a point.
    expect(hasLoneValue(series.y.temperature_c!)).toBe(true);
  });

  it('breaks hourly means across a silence longer than a few hours, and joins shorter ones', () => {
    const start = NOW - 48 * HOUR;
    const rows = [...hourly(start, 4), ...hourly(start + 6 * HOUR, 2), ...hourly(start + 30 * HOUR, 2)];
    const series = chartSeries(rows, METRICS, { start, end: NOW, interval: '1h' });
    const values = series.y.temperature_c!;
    // Hours 3 → 6 (a 3-hour step, GAP_FACTOR buckets) stay joined; 7 → 30 break.
    expect(GAP_FACTOR).toBe(3);
    const breaks = values.slice(1, -1).filter((v) => v === null);
    expect(breaks).toHaveLength(1);
    const hourOf = (x: number) => (x * 1000 - start) / HOUR;
    const nullAt = series.x.slice(1, -1).find((_, i) => values[i + 1] === null)!;
    expect(hourOf(nullAt)).toBeGreaterThan(7);
    expect(hourOf(nullAt)).toBeLessThan(30);
  });

  it('breaks daily means across more than three days', () => {
    const day = 24 * HOUR;
    const start = NOW - 30 * day;
    const at = (d: number) => ({
      node_id: 'n',
      timestamp: new Date(start + d * day).toISOString(),
      humidity_percent: d,
    });
    const series = chartSeries([at(0), at(1), at(4), at(9)], METRICS, { start, end: NOW, interval: '1d' });
    expect(series.y.humidity_percent).toEqual([0, 1, 4, null, 9, null]);
  });

  it('draws points only where a value has no neighbour', () => {
    expect(hasLoneValue([1, 2, null, 3, 4])).toBe(false);
    expect(hasLoneValue([null, 1, null])).toBe(true);
    expect(hasLoneValue([1, 2, null, 5])).toBe(true);
    expect(hasLoneValue([null, null])).toBe(false);
  });
});

describe('the y axis’ ticks', () => {
  it('have as many decimals as tell them apart, at most three', () => {
    expect(tickDigits([29.9, 29.95, 30])).toBe(2);
    expect(tickDigits([1000, 1010, 1020])).toBe(0);
    expect(tickDigits([10, 10.5, 11])).toBe(1);
    expect(tickDigits([0.0001, 0.0002])).toBe(3);
    expect(tickDigits([5])).toBe(0);
  });
});
