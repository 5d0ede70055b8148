/**
 * Rollup buckets and their arithmetic, shared by the writer (which adds to them) and the weather
 * service (which reads means out of them). Buckets are UTC-aligned: an hour starts at
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
export const METRIC_COLUMNS: readonly string[] = [
  'temperature_c',
  'humidity_percent',
  'pressure_pa',
  'wind_speed_ms',
  'wind_direction',
  'pm25_ugm3',
  'pm10_ugm3',
  'gas_resistance_kohm',
];

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
const ACC_OFFSET: readonly number[] = METRIC_COLUMNS.map((_, slot) =>
  slot === WIND_DIRECTION_SLOT ? -1 : (slot < WIND_DIRECTION_SLOT ? slot : slot - 1) * 2,
);

export const ROLLUP_COLUMNS: readonly string[] = [
  ...METRIC_COLUMNS.filter((_, slot) => slot !== WIND_DIRECTION_SLOT).flatMap((c) => [
    `${c}_sum`,
    `${c}_count`,
  ]),
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
