/**
 * Rollup buckets and their arithmetic, the one rule of both applications (docs/architecture.md
 * "The two applications"): the hub's writer (src/store/reading-writer.ts) and the upstream's batch
 * apply (sync/upstream/apply-readings.ts) add to them, the weather reads take means out of them,
 * and both schemas (src/store/migrations.ts, sync/upstream/db/schema.ts) make their reading,
 * latest and rollup columns from the lists here. Buckets are UTC-aligned: an hour starts at
 * floor(ts / 3 600 000) × 3 600 000, a day at UTC midnight (epoch days have no leap seconds).
 */
import { READING_METRICS } from '../domain/reading.js';

export type RollupInterval = '1h' | '1d';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export const BUCKET_MS: Record<RollupInterval, number> = { '1h': HOUR_MS, '1d': DAY_MS };
export const ROLLUP_TABLE: Record<RollupInterval, string> = {
  '1h': 'readings_hourly',
  '1d': 'readings_daily',
};

export function bucketStart(ts: number, interval: RollupInterval): number {
  const size = BUCKET_MS[interval];
  return Math.floor(ts / size) * size;
}

/** SQL column of each metric, in READING_METRICS order (the same words as the API's names). */
export const METRIC_COLUMNS = [
  'temperature_c',
  'humidity_percent',
  'pressure_pa',
  'wind_speed_ms',
  'wind_direction',
  'pm25_ugm3',
  'pm10_ugm3',
  'gas_resistance_kohm',
] as const;

export type MetricColumn = (typeof METRIC_COLUMNS)[number];

/** The metrics averaged arithmetically (wind direction has sin/cos sums instead). */
export const LINEAR_METRIC_COLUMNS: readonly MetricColumn[] = METRIC_COLUMNS.filter(
  (c) => c !== 'wind_direction',
);

export const WIND_DIRECTION_SLOT = READING_METRICS.indexOf('windDirection');

/**
 * Layout of one bucket's accumulator (an array of ACC_SIZE numbers) and of the rollup columns after
 * (node_id, bucket_start): sum and count of every metric but wind direction, in slot order, then
 * the wind direction's sum of sin, sum of cos and count.
 */
export const ACC_SIZE = (METRIC_COLUMNS.length - 1) * 2 + 3;
const ACC_WIND_SIN = ACC_SIZE - 3;
const ACC_WIND_COS = ACC_SIZE - 2;
const ACC_WIND_COUNT = ACC_SIZE - 1;

/** Accumulator offset of a linear (non wind-direction) metric's sum; its count follows. */
export const ACC_OFFSET: readonly number[] = METRIC_COLUMNS.map((_, slot) =>
  slot === WIND_DIRECTION_SLOT ? -1 : (slot < WIND_DIRECTION_SLOT ? slot : slot - 1) * 2,
);

export const ROLLUP_COLUMNS: readonly string[] = [
  ...LINEAR_METRIC_COLUMNS.flatMap((c) => [`${c}_sum`, `${c}_count`]),
  'wind_direction_sin_sum',
  'wind_direction_cos_sum',
  'wind_direction_count',
];

const DEG = Math.PI / 180;

/** Adds one reading's values (slot order, null for absent) to a bucket accumulator. */
export function accumulate(acc: number[], values: readonly (number | null)[]): void {
  for (let slot = 0; slot < values.length; slot++) {
    const v = values[slot];
    if (v === null || v === undefined) continue;
    if (slot === WIND_DIRECTION_SLOT) {
      const rad = v * DEG;
      acc[ACC_WIND_SIN]! += Math.sin(rad);
      acc[ACC_WIND_COS]! += Math.cos(rad);
      acc[ACC_WIND_COUNT]! += 1;
    } else {
      const at = ACC_OFFSET[slot]!;
      acc[at]! += v;
      acc[at + 1]! += 1;
    }
  }
}

/**
 * The circular mean of directions given as sums of sin and cos, in whole degrees [0, 360);
 * undefined when the directions cancel out (e.g. exactly 90° and 270°) and no mean exists.
 */
export function circularMeanDegrees(sinSum: number, cosSum: number, count: number): number | undefined {
  if (!(count > 0)) return undefined;
  if (Math.hypot(sinSum, cosSum) / count < 1e-9) return undefined;
  const degrees = Math.round(Math.atan2(sinSum, cosSum) / DEG);
  return ((degrees % 360) + 360) % 360;
}

/**
 * The buckets one node touches in one batch: nearly always one, a few hours and days at most,
 * visited in time order, so a short list with the last hit remembered beats a Map (and allocates
 * far less on the hot path). `get` gives a bucket's accumulator (for `accumulate`).
 */
export class RollupBuckets {
  readonly starts: number[] = [];
  readonly accs: number[][] = [];
  private last = -1;

  /** `size`: numbers per accumulator (the readings' ACC_SIZE; `linearAccSize(n)` for n plain metrics). */
  constructor(private readonly size: number = ACC_SIZE) {}

  get(start: number): number[] {
    if (this.last >= 0 && this.starts[this.last] === start) return this.accs[this.last]!;
    let at = this.starts.lastIndexOf(start);
    if (at < 0) {
      at = this.starts.push(start) - 1;
      this.accs.push(new Array<number>(this.size).fill(0));
    }
    this.last = at;
    return this.accs[at]!;
  }
}

/** One node's hourly and daily buckets of a batch. */
export interface NodeRollups {
  hours: RollupBuckets;
  days: RollupBuckets;
}

/**
 * Adds one reading's values (slot order, null for absent) to its hour's and its day's bucket;
 * `add` is `accumulate` for readings, `accumulateLinear` for series of plain metrics.
 */
export function addToRollups(
  node: NodeRollups,
  ts: number,
  values: readonly (number | null)[],
  add: (acc: number[], values: readonly (number | null)[]) => void = accumulate,
): void {
  add(node.hours.get(bucketStart(ts, '1h')), values);
  add(node.days.get(bucketStart(ts, '1d')), values);
}

// ---- series of plain metrics (device health): the same sums and counts, no circular metric ----

/** Accumulator size of `metrics` plain metrics: sum and count of each, in slot order. */
export function linearAccSize(metrics: number): number {
  return metrics * 2;
}

/** Rollup columns of plain metrics, in accumulator order: `<c>_sum`, `<c>_count` of each. */
export function linearRollupColumns(columns: readonly string[]): string[] {
  return columns.flatMap((c) => [`${c}_sum`, `${c}_count`]);
}

/** `accumulate` for plain metrics: each present value adds to its slot's sum and count. */
export function accumulateLinear(acc: number[], values: readonly (number | null)[]): void {
  for (let slot = 0; slot < values.length; slot++) {
    const v = values[slot];
    if (v === null || v === undefined) continue;
    acc[slot * 2]! += v;
    acc[slot * 2 + 1]! += 1;
  }
}

// ---- the columns of both schemas (SQLite on the hub, PostgreSQL on the upstream) ----

/** A SQL dialect's types for the reading tables. */
export interface ReadingColumnTypes {
  /** A metric's value, a sum. */
  real: string;
  /** A time (ms since the epoch). */
  time: string;
}

/** `readings`: one nullable column per metric. */
export function readingColumnsDdl(
  t: ReadingColumnTypes,
  columns: readonly string[] = METRIC_COLUMNS,
): string[] {
  return columns.map((c) => `${c} ${t.real}`);
}

/** `readings_latest`: each metric's newest value and its time. */
export function latestColumnsDdl(
  t: ReadingColumnTypes,
  columns: readonly string[] = METRIC_COLUMNS,
): string[] {
  return columns.map((c) => `${c} ${t.real}, ${c}_ts ${t.time}`);
}

/** `readings_hourly` / `readings_daily` (or another series' `columns`): sums real and counts INTEGER, 0 by default. */
export function rollupColumnsDdl(
  t: ReadingColumnTypes,
  columns: readonly string[] = ROLLUP_COLUMNS,
): string[] {
  return columns.map((c) => `${c} ${c.endsWith('_count') ? 'INTEGER' : t.real} NOT NULL DEFAULT 0`);
}
