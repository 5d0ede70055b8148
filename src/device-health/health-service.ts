/**
 * Reads device health for its routes, serialized straight to the body like the weather reads
 * (src/weather/weather-reads.ts: the same paging, bucket bounds and 6-decimal means): raw
 * samples ascending in [start, end), or hourly / daily buckets from the rollup tables only,
 * each field its bucket mean; and every node's newest values.
 */
import type { Database, Statement } from '../store/database.js';
import type { RollupInterval } from '../store/rollups.js';
import { BucketHistory } from '../weather/bucket-cache.js';
import {
  EMPTY_BODY,
  type HistoryPage,
  type HistoryQuery,
  pageOf,
  rawLower,
  roundMean,
} from '../weather/weather-reads.js';
import {
  HEALTH_COLUMNS,
  HEALTH_LATEST_TABLE,
  HEALTH_ROLLUP_TABLE,
  HEALTH_SLOTS,
  HEALTH_TABLE,
  type HealthRow,
} from './columns.js';

/** Bound on the latest list: far beyond any one site's mesh. */
export const MAX_LATEST_NODES = 10_000;

const KEYS = HEALTH_COLUMNS.map((c) => `,"${c}":`);

/** A sample's JSON from the values in slot order at `row[first…]` (null: absent); `mean`: round as a bucket mean. */
export function healthJson(nodeId: string, ts: number, row: unknown[], first: number, mean = false): string {
  let json = `{"node_id":${JSON.stringify(nodeId)},"timestamp":"${new Date(ts).toISOString()}"`;
  for (let slot = 0; slot < HEALTH_SLOTS; slot++) {
    const v = row[first + slot] as number | null;
    if (v === null) continue;
    json += KEYS[slot]! + (mean ? roundMean(v) : v);
  }
  return `${json}}`;
}

export interface RadioHealth {
  nodeId: string;
  ts: number;
  channelUtilization?: number;
  airUtilTx?: number;
  noiseFloor?: number;
}

export class HealthService {
  private readonly selectRaw: Statement<unknown[], unknown[]>;
  private readonly buckets: BucketHistory;
  private readonly selectLatest: Statement<unknown[], unknown[]>;
  private readonly selectLatestOne: Statement<unknown[], unknown[]>;
  private readonly selectRadio: Statement<unknown[], unknown[]>;

  /** `cacheBytes`: bound on the serialized buckets kept (the weather history's cache, default 8 MB). */
  constructor(db: Database, cacheBytes?: number) {
    const cols = HEALTH_COLUMNS.join(', ');
    this.selectRaw = db
      .prepare(
        `SELECT ts, ${cols} FROM ${HEALTH_TABLE} WHERE node_id = ? AND ts >= ? AND ts < ? ORDER BY ts LIMIT ?`,
      )
      .raw(true) as Statement<unknown[], unknown[]>;
    const means = HEALTH_COLUMNS.map((c) => `${c}_sum / ${c}_count`).join(', ');
    const buckets = (interval: RollupInterval) =>
      db
        .prepare(
          `SELECT bucket_start, ${means} FROM ${HEALTH_ROLLUP_TABLE[interval]}
           WHERE node_id = ? AND bucket_start >= ? AND bucket_start < ? ORDER BY bucket_start LIMIT ?`,
        )
        .raw(true) as Statement<unknown[], unknown[]>;
    this.buckets = new BucketHistory(
      { '1h': buckets('1h'), '1d': buckets('1d') },
      (nodeId, start, row) => healthJson(nodeId, start, row, 1, true),
      cacheBytes,
    );
    const latest = `SELECT node_id, ts, ${cols} FROM ${HEALTH_LATEST_TABLE}`;
    this.selectLatest = db
      .prepare(`${latest} ORDER BY node_id LIMIT ${MAX_LATEST_NODES}`)
      .raw(true) as Statement<unknown[], unknown[]>;
    this.selectLatestOne = db.prepare(`${latest} WHERE node_id = ?`).raw(true) as Statement<
      unknown[],
      unknown[]
    >;
    this.selectRadio = db
      .prepare(
        `SELECT node_id, coalesce(max(channel_utilization_ts, air_util_tx_ts), channel_utilization_ts, air_util_tx_ts), channel_utilization, air_util_tx, noise_floor
         FROM ${HEALTH_LATEST_TABLE} WHERE node_id = ?`,
      )
      .raw(true) as Statement<unknown[], unknown[]>;
  }

  /** One page of a node's history (the weather history's rules). */
  history(query: HistoryQuery): HistoryPage {
    const { nodeId, end, limit, interval } = query;
    if (interval === 'raw') {
      const rows = this.selectRaw.all(nodeId, rawLower(query), end, limit + 1);
      return pageOf(rows, limit, (row, ts) => healthJson(nodeId, ts, row, 1));
    }
    return this.buckets.page(query, interval);
  }

  /** Samples were stored: the cached buckets they may have changed are dropped. */
  stored(rows: readonly HealthRow[]): void {
    for (const row of rows) this.buckets.changed(row.nodeId, row.ts);
  }

  /** Forgets every cached bucket (a node's series moved to another id). */
  moved(): void {
    this.buckets.clear();
  }

  /** Every node's newest values (each field its own newest), or one node's; ordered by node_id. */
  latestBody(nodeId?: string): string {
    if (nodeId !== undefined) {
      const one = this.latestOf(nodeId);
      return one === undefined ? EMPTY_BODY : `{"data":[${one}]}`;
    }
    const rows = this.selectLatest.all();
    if (rows.length === 0) return EMPTY_BODY;
    return `{"data":[${rows.map((row) => healthJson(row[0] as string, row[1] as number, row, 2)).join(',')}]}`;
  }

  /** One node's newest values as `latestBody` lists them, or undefined when it has none. */
  latestOf(nodeId: string): string | undefined {
    const row = this.selectLatestOne.get(nodeId);
    return row ? healthJson(nodeId, row[1] as number, row, 2) : undefined;
  }

  /** The radio's own channel figures (from its device metrics / LocalStats), when it sent any. */
  radio(nodeId: string): RadioHealth | undefined {
    const row = this.selectRadio.get(nodeId);
    if (!row || row[1] === null) return undefined;
    const out: RadioHealth = { nodeId, ts: row[1] as number };
    if (row[2] !== null) out.channelUtilization = row[2] as number;
    if (row[3] !== null) out.airUtilTx = row[3] as number;
    if (row[4] !== null) out.noiseFloor = row[4] as number;
    return out;
  }
}
