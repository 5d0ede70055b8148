/**
 * Reads readings for the weather API and serializes them straight to the response body.
 *
 * - `latestJson`: the `/weather/latest` body, built from `readings_latest` (one row per node,
 *   each field its newest value, `timestamp` the newest reading), ordered by node_id. It is
 *   cached and rebuilt only on the first request after `invalidate()` (called on every
 *   `reading.stored`), so a burst of polling dashboards costs one query, not one per request.
 * - `history`: raw rows ascending by timestamp in [start, end), or one object per UTC hour/day
 *   bucket whose start lies in [floor_bucket(start), end), read from the rollup tables only
 *   (through a BucketCache of serialized buckets, truncated by `invalidate(readings)`) —
 *   never a scan of raw rows — with each field the bucket mean (to 6 decimals) and wind
 *   direction the circular mean in whole degrees [0, 360), left out when the directions cancel
 *   out. Every query is bounded by `limit` (+1 to see if more remain).
 *
 * API objects use the spec's snake_case names; absent metrics are omitted; timestamps are ISO
 * 8601 UTC with Z; wind_direction (an integer in the spec) is rounded into [0, 360).
 */

import type { Reading } from '../domain/reading.js';
import type { Database, Statement } from '../store/database.js';
import { type OpenBucket, openBuckets } from '../store/open-buckets.js';
import { decodedMetricsSql, NODE_KEY_OF } from '../store/reading-codec.js';
import { METRIC_COLUMNS, ROLLUP_TABLE, type RollupInterval } from '../store/rollups.js';
import { BucketHistory, type BucketSelect } from './bucket-cache.js';
import {
  bucketJson,
  bucketMeanColumns,
  bucketMeanRow,
  EMPTY_BODY,
  type HistoryPage,
  type HistoryQuery,
  pageOf,
  rawLower,
  readingJson,
  type WeatherReads,
} from './weather-reads.js';

/** Bound on the latest query: far beyond any one site's mesh. */
export const MAX_LATEST_NODES = 10_000;

export interface WeatherServiceOptions {
  db: Database;
  /** Bound on the serialized buckets kept for history, in bytes (default 8 MB). */
  cacheBytes?: number;
  /** The id a node goes by now (an old id of a renumbered node names the node under its new id). */
  resolveNodeId?: (nodeId: string) => string;
}

/** The hub's WeatherReads over SQLite: `/latest` narrowed by node, one series per node. */
export class WeatherService implements WeatherReads<string | undefined, undefined> {
  private readonly selectLatest: Statement<unknown[], unknown[]>;
  private readonly selectRaw: Statement<unknown[], unknown[]>;
  private latestAll: string | undefined;
  private latestByNode = new Map<string, string>();
  private readonly buckets: BucketHistory;
  private readonly resolve: (nodeId: string) => string;
  private readonly db: Database;

  constructor(options: WeatherServiceOptions) {
    const { db } = options;
    this.db = db;
    this.resolve = options.resolveNodeId ?? ((nodeId) => nodeId);
    const cols = METRIC_COLUMNS.join(', ');
    this.selectLatest = db
      .prepare(`SELECT node_id, ts, ${cols} FROM readings_latest ORDER BY node_id LIMIT ${MAX_LATEST_NODES}`)
      .raw(true) as Statement<unknown[], unknown[]>;
    this.selectRaw = db
      .prepare(
        `SELECT ts, ${decodedMetricsSql()} FROM reading_rows
         WHERE node_key = ${NODE_KEY_OF} AND ts >= ? AND ts < ? ORDER BY ts LIMIT ?`,
      )
      .raw(true) as Statement<unknown[], unknown[]>;
    // Means come out of SQLite (sum / 0 is NULL there: no value); wind direction as its sums.
    const means = bucketMeanColumns((sum, count) => `${sum} / ${count}`);
    const buckets = (interval: RollupInterval): BucketSelect => {
      const stored = db
        .prepare(
          `SELECT bucket_start, ${means}
           FROM ${ROLLUP_TABLE[interval]}
           WHERE node_id = ? AND bucket_start >= ? AND bucket_start < ? ORDER BY bucket_start LIMIT ?`,
        )
        .raw(true) as Statement<unknown[], unknown[]>;
      return {
        all: (nodeId, from, to, max) =>
          withOpenBucket(
            stored.all(nodeId, from, to, max),
            openBuckets(db)?.bucket(interval, nodeId),
            from,
            to,
            max,
          ),
      };
    };
    this.buckets = new BucketHistory(
      { '1h': buckets('1h'), '1d': buckets('1d') },
      (nodeId, start, row) => bucketJson(nodeId, start, row, 1),
      options.cacheBytes,
    );
  }

  /**
   * Call after readings were stored. Drops the cached latest body, and the cached buckets those
   * readings may have changed; without `readings`, every cached bucket.
   */
  invalidate(readings?: readonly Reading[]): void {
    this.latestAll = undefined;
    if (readings === undefined) {
      this.buckets.clear();
      return;
    }
    for (const { nodeId, timestamp } of readings) this.buckets.changed(nodeId, timestamp);
  }

  /** The `/weather/latest` body: every node, or only `nodeId` (`{"data":[]}` when unknown). */
  latestJson(nodeId?: string): string {
    if (this.latestAll === undefined) this.rebuildLatest();
    if (nodeId === undefined) return this.latestAll!;
    const one = this.latestByNode.get(nodeId);
    return one === undefined ? EMPTY_BODY : `{"data":[${one}]}`;
  }

  latestBody(nodeId: string | undefined): string {
    return this.latestJson(nodeId === undefined ? undefined : this.resolve(nodeId));
  }

  historyPage(_series: undefined, query: HistoryQuery): HistoryPage {
    return this.history({ ...query, nodeId: this.resolve(query.nodeId) });
  }

  private rebuildLatest(): void {
    const byNode = new Map<string, string>();
    const parts: string[] = [];
    const open = openBuckets(this.db);
    for (const row of open ? open.latestRows(MAX_LATEST_NODES) : this.selectLatest.all()) {
      const nodeId = row[0] as string;
      const json = readingJson(nodeId, row[1] as number, row, 2);
      byNode.set(nodeId, json);
      parts.push(json);
    }
    this.latestByNode = byNode;
    this.latestAll = `{"data":[${parts.join(',')}]}`;
  }

  history(query: HistoryQuery): HistoryPage {
    if (query.interval !== 'raw') return this.buckets.page(query, query.interval);
    const { nodeId, end, limit } = query;
    const rows = this.selectRaw.all(nodeId, rawLower(query), end, limit + 1);
    return pageOf(rows, limit, (row, ts) => readingJson(nodeId, ts, row, 1));
  }
}

/**
 * The stored buckets of a range with the writer's open bucket in its place (its accumulator holds
 * the stored row's share too): replacing the stored row, or inserted in order, within `max` rows.
 */
function withOpenBucket(
  rows: unknown[][],
  open: OpenBucket | undefined,
  from: number,
  to: number,
  max: number,
): unknown[][] {
  if (open === undefined || open.start < from || open.start >= to) return rows;
  let at = 0;
  while (at < rows.length && (rows[at]![0] as number) < open.start) at++;
  const row = bucketMeanRow(open.start, open.acc);
  if (at < rows.length && rows[at]![0] === open.start) rows[at] = row;
  else if (at < max) {
    rows.splice(at, 0, row);
    if (rows.length > max) rows.length = max;
  }
  return rows;
}
