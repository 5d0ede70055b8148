/**
 * What the reading writer keeps in memory between writes (docs/architecture.md "Data flows" 1):
 * each node's latest row and its open hourly and daily buckets. A reading's commit writes its raw
 * row only; a bucket's row is written when the bucket closes (a newer bucket opens, the bucket
 * goes stale, the hub stops), and the latest row when the day closes. `readings_open` names the buckets held
 * here, so after a crash the writer rebuilds them from the raw rows (reading-writer.ts, `recover`).
 *
 * Readers ask here before the tables, through the one registry per database (as
 * reading-observers.ts): `/weather/latest`, the MQTT latest events, the history's current bucket
 * and the sync outbox's rollup records all see what a write-through store would show.
 */
import type { Database } from './database.js';
import { ACC_SIZE, type RollupInterval } from './rollups.js';

/** One open bucket: its start and its whole accumulator (rollups.ts layout), the stored row's share included. */
export interface OpenBucket {
  start: number;
  acc: number[];
}

/** One node's latest row: value and value time per metric slot (NaN / -Infinity when unknown). */
export interface LatestRow {
  /** The newest reading stored for the node: nothing at or after it can be a duplicate. */
  ts: number;
  values: number[];
  times: number[];
}

/** A node's state in memory. Replaced whole after each commit (copy-on-write), never changed in place. */
export interface OpenNode {
  latest: LatestRow;
  /** The latest row differs from its `readings_latest` row. */
  latestDirty: boolean;
  hour: OpenBucket | undefined;
  day: OpenBucket | undefined;
}

export const EMPTY_BUCKET_ACC: readonly number[] = new Array<number>(ACC_SIZE).fill(0);

/** A row of `readings_latest`'s reading columns: node_id, ts, then each metric's value or null. */
export type LatestValuesRow = [nodeId: string, ts: number, ...values: (number | null)[]];

export class OpenBuckets {
  readonly nodes = new Map<string, OpenNode>();

  /** The open bucket of `nodeId` for `interval`, if the writer holds one. */
  bucket(interval: RollupInterval, nodeId: string): OpenBucket | undefined {
    const node = this.nodes.get(nodeId);
    return interval === '1h' ? node?.hour : node?.day;
  }

  /** One node's latest values, as `readings_latest` would give them. */
  latestRow(nodeId: string): LatestValuesRow | undefined {
    const node = this.nodes.get(nodeId);
    return node && node.latest.ts !== Number.NEGATIVE_INFINITY ? valuesRow(nodeId, node.latest) : undefined;
  }

  /** Every node's latest values ordered by node id as SQLite orders TEXT (UTF-8 bytes), at most `limit`. */
  latestRows(limit: number): LatestValuesRow[] {
    const ids: string[] = [];
    for (const [nodeId, node] of this.nodes)
      if (node.latest.ts !== Number.NEGATIVE_INFINITY) ids.push(nodeId);
    ids.sort(utf8Order);
    if (ids.length > limit) ids.length = limit;
    return ids.map((nodeId) => valuesRow(nodeId, this.nodes.get(nodeId)!.latest));
  }
}

function valuesRow(nodeId: string, latest: LatestRow): LatestValuesRow {
  const row: LatestValuesRow = [nodeId, latest.ts];
  for (let slot = 0; slot < latest.values.length; slot++) {
    row.push(latest.times[slot] === Number.NEGATIVE_INFINITY ? null : latest.values[slot]!);
  }
  return row;
}

/**
 * String order by code point, which is SQLite's BINARY order of UTF-8 text: JavaScript's `<`
 * compares UTF-16 units, which puts surrogates (U+D800–DFFF) below U+E000–FFFF.
 */
export function utf8Order(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codeUnitRank(x) - codeUnitRank(y);
  }
  return a.length - b.length;
}

function codeUnitRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit <= 0xdfff ? unit + 0x2000 : unit - 0x800;
}

const registry = new WeakMap<Database, OpenBuckets>();

/** Makes `open` what readers of `db` consult (the writer's, once it is constructed). */
export function registerOpenBuckets(db: Database, open: OpenBuckets): void {
  registry.set(db, open);
}

/** What the writer of `db` holds in memory, or undefined when no writer runs on it. */
export function openBuckets(db: Database): OpenBuckets | undefined {
  return registry.get(db);
}
