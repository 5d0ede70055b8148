/**
 * What `/api/v1/weather` reads, whatever stores it (docs/architecture.md "The two
 * applications"): the storage interface (`WeatherReads`) the one route definition (routes.ts)
 * answers from — the hub's SQLite (weather-service.ts) or the upstream's PostgreSQL
 * (sync/upstream/weather/pg-reads.ts) — and the JSON of a Reading both write, straight into the body.
 *
 * A Reading (spec "Reading"): `node_id`, on the upstream `site_id`, `timestamp` ISO 8601 UTC with
 * Z, then each metric present under its API name (the same words as its column, rollups.ts);
 * absent metrics are left out; `wind_direction` (an integer in the spec) in whole degrees
 * [0, 360). A rollup bucket's fields are means (sum / count) to 6 decimals and wind direction the
 * circular mean of its sin/cos sums, left out when the directions cancel out.
 */
import { METRIC_API_NAMES, READING_METRICS } from '../domain/reading.js';
import {
  ACC_OFFSET,
  ACC_SIZE,
  bucketStart,
  circularMeanDegrees,
  METRIC_COLUMNS,
  type RollupInterval,
  WIND_DIRECTION_SLOT,
} from '../store/rollups.js';
import type { HistoryInterval } from './schemas.js';

/** A response body: JSON text, or its UTF-8 bytes (when it comes from a cache). */
export type Body = string | Uint8Array<ArrayBuffer>;

export interface HistoryQuery {
  nodeId: string;
  /** ms UTC, inclusive. */
  start: number;
  /** ms UTC, exclusive. */
  end: number;
  interval: HistoryInterval;
  limit: number;
  /** Continue after this timestamp (raw) or bucket start (1h/1d): the previous page's last one. */
  after?: number;
}

export interface HistoryPage {
  /** The serialized response body, `{"data":[...]}`. */
  body: Body;
  /** Set when more rows remain: the `after` of the next page. */
  nextAfter?: number;
}

/**
 * The storage side of `/api/v1/weather`. `Filter`: what `/latest` may be narrowed by (the hub: a
 * node; the upstream: a node and a site); `Series`: whose series `/history` reads (the hub has
 * one; the upstream one per site). SQLite answers at once, PostgreSQL with a promise.
 */
export interface WeatherReads<Filter, Series> {
  /** The `/latest` body: one Reading per node (and site), each field its newest value. */
  latestBody(filter: Filter): Body | Promise<Body>;
  /** One page of `/history`: raw rows ascending in [start, end), or buckets from floor_bucket(start). */
  historyPage(series: Series, query: HistoryQuery): HistoryPage | Promise<HistoryPage>;
}

export const EMPTY_BODY = '{"data":[]}';

/** `"key":` prefixes of each metric, in slot order (the names are plain ASCII: no escaping needed). */
const KEYS = READING_METRICS.map((m) => `,"${METRIC_API_NAMES[m]}":`);
const SLOTS = KEYS.length;

/** A wind direction in whole degrees [0, 360), as the API writes it. */
export function wholeDegrees(value: number): number {
  return ((Math.round(value) % 360) + 360) % 360;
}

/** Means to 6 decimals: beyond any sensor's resolution, and free of float noise (0.15000000000000002). */
export function roundMean(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

function objectStart(nodeId: string, ts: number, siteId: string | undefined): string {
  const site = siteId === undefined ? '' : `,"site_id":${JSON.stringify(siteId)}`;
  return `{"node_id":${JSON.stringify(nodeId)}${site},"timestamp":"${new Date(ts).toISOString()}"`;
}

/** A Reading's JSON from the metric values in slot order at `row[first…]` (null: absent). */
export function readingJson(
  nodeId: string,
  ts: number,
  row: unknown[],
  first: number,
  siteId?: string,
): string {
  let json = objectStart(nodeId, ts, siteId);
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = row[first + slot] as number | null;
    if (v === null) continue;
    json += KEYS[slot]! + (slot === WIND_DIRECTION_SLOT ? wholeDegrees(v) : v);
  }
  return `${json}}`;
}

/**
 * The columns a bucket's JSON is written from (after its start): each metric's mean in slot order
 * (NULL for wind direction, and where the count is 0), then wind direction's sin sum, cos sum and
 * count. `divide(sum, count)`: the dialect's mean that is NULL for a count of 0.
 */
export function bucketMeanColumns(divide: (sum: string, count: string) => string): string {
  const means = READING_METRICS.map((_, slot) =>
    slot === WIND_DIRECTION_SLOT
      ? 'NULL'
      : divide(`${METRIC_COLUMNS[slot]}_sum`, `${METRIC_COLUMNS[slot]}_count`),
  );
  return `${means.join(', ')}, wind_direction_sin_sum, wind_direction_cos_sum, wind_direction_count`;
}

/**
 * bucketMeanColumns' row, after the bucket start, from an accumulator held in memory (an open
 * bucket, src/store/open-buckets.ts): the same doubles SQLite's `sum / count` gives.
 */
export function bucketMeanRow(start: number, acc: readonly number[]): unknown[] {
  const row: unknown[] = [start];
  for (let slot = 0; slot < SLOTS; slot++) {
    if (slot === WIND_DIRECTION_SLOT) {
      row.push(null);
      continue;
    }
    const at = ACC_OFFSET[slot]!;
    row.push(acc[at + 1] === 0 ? null : acc[at]! / acc[at + 1]!);
  }
  row.push(acc[ACC_SIZE - 3], acc[ACC_SIZE - 2], acc[ACC_SIZE - 1]);
  return row;
}

/** A bucket's Reading JSON from bucketMeanColumns at `row[first…]`. */
export function bucketJson(
  nodeId: string,
  start: number,
  row: unknown[],
  first: number,
  siteId?: string,
): string {
  let json = objectStart(nodeId, start, siteId);
  for (let slot = 0; slot < SLOTS; slot++) {
    if (slot === WIND_DIRECTION_SLOT) {
      const at = first + SLOTS;
      const mean = circularMeanDegrees(row[at] as number, row[at + 1] as number, row[at + 2] as number);
      if (mean !== undefined) json += KEYS[slot]! + mean;
      continue;
    }
    const mean = row[first + slot] as number | null;
    if (mean !== null) json += KEYS[slot]! + roundMean(mean);
  }
  return `${json}}`;
}

/** The first raw timestamp a page reads: `start`, or just after the previous page's last. */
export function rawLower(query: HistoryQuery): number {
  return query.after === undefined ? query.start : Math.max(query.start, query.after + 1);
}

/** The first bucket start a page reads: the bucket of `start`, or just after the previous page's last. */
export function bucketLower(query: HistoryQuery, interval: RollupInterval): number {
  const from = bucketStart(query.start, interval);
  return query.after === undefined ? from : Math.max(from, query.after + 1);
}

/**
 * A page from up to `limit` + 1 rows (one more: whether more remain), each with its time at
 * `row[0]` (a number, or PostgreSQL's BIGINT text), written by `toJson`.
 */
export function pageOf(
  rows: unknown[][],
  limit: number,
  toJson: (row: unknown[], at: number) => string,
): HistoryPage {
  const more = rows.length > limit;
  if (more) rows.length = limit;
  const parts = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) parts[i] = toJson(rows[i]!, Number(rows[i]![0]));
  const body = `{"data":[${parts.join(',')}]}`;
  return more ? { body, nextAfter: Number(rows[rows.length - 1]![0]) } : { body };
}
