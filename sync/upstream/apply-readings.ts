/**
 * A batch's readings on the upstream: what each adds (only what it adds, as the hub's
 * src/store/reading-writer.ts counts it), the rows stored (COPY), the sums for the hourly and
 * daily rollups (src/store/rollups.ts, staged through a temporary table) and the merge into the
 * latest rows; and the `rollup` records, buckets a site sends whole. batch-apply.ts says how the
 * fast and the careful path fit in a batch's transaction.
 */
import type pg from 'pg';
import { addToRollups, METRIC_COLUMNS, ROLLUP_COLUMNS, RollupBuckets } from '../../src/store/rollups.js';
import type { ReadingRow, RecordBody } from '../protocol.js';
import {
  COPY_READINGS,
  CREATE_ROLLUP_STAGE,
  encodeRollupStage,
  type NodeBuckets,
  ReadingsCopy,
  ROLLUP_STAGE,
} from './db/copy-encoder.js';
import { copyFrom } from './db/copy-from.js';
import { type ColumnType, pgArray, unnestSource } from './db/unnest.js';

const SLOTS = METRIC_COLUMNS.length;
const UNIQUE_VIOLATION = '23505';

/** The fast path met a reading stored already: redo the batch the careful way. */
export class FastPathConflict extends Error {}

/**
 * Puts a reading row's metrics into `values` (slot order); false when it has none (as on the hub,
 * a reading with no metric is not stored).
 */
function readValues(row: ReadingRow, values: (number | null)[]): boolean {
  let any = false;
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = row[2 + slot] as number | null;
    values[slot] = v;
    if (v !== null) any = true;
  }
  return any;
}

/** One node's share of a batch: its rollup sums, and per metric the newest value it added. */
interface NodeContribution extends NodeBuckets {
  /** The newest ts among the readings that added something. */
  ts: number;
  values: (number | null)[];
  /** -Infinity: the batch added nothing to this metric. */
  times: number[];
  /** The newest reading added (for the live stream). */
  newest: ReadingRow | undefined;
}

/**
 * What the batch's readings add to the rollups and latest rows, summed in JS as the hub sums
 * them (`accumulate`), then written in one statement.
 */
export class Contributions {
  readonly nodes = new Map<string, NodeContribution>();
  count = 0;
  private last: NodeContribution | undefined;

  node(nodeId: string): NodeContribution {
    const last = this.last;
    if (last && last.nodeId === nodeId) return last;
    let node = this.nodes.get(nodeId);
    if (!node) {
      node = {
        nodeId,
        hours: new RollupBuckets(),
        days: new RollupBuckets(),
        ts: Number.NEGATIVE_INFINITY,
        values: new Array<number | null>(SLOTS).fill(null),
        times: new Array<number>(SLOTS).fill(Number.NEGATIVE_INFINITY),
        newest: undefined,
      };
      this.nodes.set(nodeId, node);
    }
    this.last = node;
    return node;
  }

  /**
   * A reading that added `values` (metric slots, null where it added nothing; at least one
   * not null). Later readings win ties, as in the hub's mergeLatest.
   */
  add(node: NodeContribution, ts: number, values: readonly (number | null)[], row: ReadingRow): void {
    this.count++;
    addToRollups(node, ts, values);
    for (let slot = 0; slot < SLOTS; slot++) {
      const v = values[slot];
      if (v === null || v === undefined || ts < node.times[slot]!) continue;
      node.values[slot] = v;
      node.times[slot] = ts;
    }
    if (ts >= node.ts) {
      node.ts = ts;
      node.newest = row;
    }
  }

  /** The hourly and daily sums as binary COPY data for the rollup stage (copy-encoder.ts). */
  rollupCopy(): Buffer {
    return encodeRollupStage(this.nodes);
  }

  /** Rows of `[node_id, ts, value, value_ts, …]` of the newest values, to merge into readings_latest. */
  latest(): (string | number | null)[][] {
    const rows: (string | number | null)[][] = [];
    for (const node of this.nodes.values()) {
      const row: (string | number | null)[] = [node.nodeId, node.ts];
      for (let slot = 0; slot < SLOTS; slot++) {
        const known = node.times[slot] !== Number.NEGATIVE_INFINITY;
        row.push(known ? node.values[slot]! : null, known ? node.times[slot]! : null);
      }
      rows.push(row);
    }
    return rows;
  }

  newest(): ReadingRow[] {
    const rows: ReadingRow[] = [];
    for (const node of this.nodes.values()) if (node.newest) rows.push(node.newest);
    return rows;
  }
}

/**
 * Connections whose stage table exists: marked once the transaction that made it committed (a
 * rolled-back one takes the table with it).
 */
export const staged = new WeakSet<pg.PoolClient>();

/**
 * Copies the batch's rollup sums into ROLLUP_STAGE, made first on a connection that has not got
 * it yet; returns true when it made it (the caller marks the connection once committed).
 */
export async function stageRollups(client: pg.PoolClient, data: Buffer): Promise<boolean> {
  const create = !staged.has(client);
  if (create) await client.query(CREATE_ROLLUP_STAGE);
  const copy = copyFrom(client, `COPY ${ROLLUP_STAGE} FROM STDIN (FORMAT binary)`);
  await copy.write(data);
  await copy.end();
  return create;
}

/**
 * The fast path: every row of the batch is taken for a new one and COPYed, summed as it goes
 * (JS sums the next chunk while PostgreSQL loads the one before). A row stored already makes
 * the COPY fail: FastPathConflict.
 */
export async function copyNewReadings(
  client: pg.PoolClient,
  siteId: string,
  rows: readonly ReadingRow[],
  now: number,
  /** Called once every row is sent, while PostgreSQL still loads the last of them. */
  sent: (contributions: Contributions) => void,
): Promise<Contributions> {
  const contributions = new Contributions();
  const copy = copyFrom(client, COPY_READINGS);
  const out = new ReadingsCopy(siteId, now);
  const values = new Array<number | null>(SLOTS);
  try {
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      // As on the hub: a reading with no metric is not stored.
      if (!readValues(row, values)) continue;
      const nodeId = row[0];
      contributions.add(contributions.node(nodeId), row[1], values, row);
      out.row(nodeId, row[1], values);
      if (out.full) await copy.write(out.take(false));
    }
    await copy.write(out.take(true));
    sent(contributions);
    await copy.end();
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) throw new FastPathConflict();
    throw error;
  }
  return contributions;
}

const key = (nodeId: string, ts: number) => `${nodeId} ${ts}`;

interface StoredReading {
  nodeId: string;
  ts: number;
  values: (number | null)[];
  /** The row was in the database before this batch. */
  existed: boolean;
  /** This batch added something to it. */
  changed: boolean;
}

async function loadExisting(
  client: pg.PoolClient,
  siteId: string,
  rows: readonly ReadingRow[],
): Promise<Map<string, StoredReading>> {
  const existing = new Map<string, StoredReading>();
  if (rows.length === 0) return existing;
  const { rows: found } = await client.query<Record<string, number | string | null>>(
    `SELECT r.node_id, r.ts, ${METRIC_COLUMNS.map((c) => `r.${c}`).join(', ')}
     FROM readings r JOIN unnest($2::text[], $3::bigint[]) AS k(node_id, ts)
       ON r.node_id = k.node_id AND r.ts = k.ts
     WHERE r.site_id = $1`,
    [siteId, pgArray(rows.map((r) => r[0])), pgArray(rows.map((r) => r[1]))],
  );
  for (const row of found) {
    const nodeId = String(row.node_id);
    const ts = Number(row.ts);
    const values = METRIC_COLUMNS.map((c) => {
      const v = row[c];
      return typeof v === 'number' ? v : null;
    });
    existing.set(key(nodeId, ts), { nodeId, ts, values, existed: true, changed: false });
  }
  return existing;
}

const READING_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['ts', 'bigint'],
  ...METRIC_COLUMNS.map((c) => [c, 'float8'] as const),
];

/**
 * The careful path: the batch's rows are looked up first; a new row is stored whole, a stored
 * one only gets the fields it lacks, and only what each reading adds is summed (a row twice in
 * the batch, or one the upstream has, adds only what it fills).
 */
export async function mergeReadings(
  client: pg.PoolClient,
  siteId: string,
  readings: readonly ReadingRow[],
  now: number,
): Promise<Contributions> {
  const rows = await loadExisting(client, siteId, readings);
  const contributions = new Contributions();
  const added = new Array<number | null>(SLOTS);
  for (const reading of readings) {
    if (!readValues(reading, added)) continue;
    const [nodeId, ts] = reading;
    const k = key(nodeId, ts);
    let row = rows.get(k);
    if (!row) {
      row = { nodeId, ts, values: added.slice(), existed: false, changed: true };
      rows.set(k, row);
    } else {
      let filled = 0;
      for (let slot = 0; slot < SLOTS; slot++) {
        if (row.values[slot] !== null) added[slot] = null;
        else if (added[slot] !== null) {
          row.values[slot] = added[slot]!;
          filled++;
        }
      }
      if (filled === 0) continue;
      row.changed = true;
    }
    contributions.add(contributions.node(nodeId), ts, added, [nodeId, ts, ...added] as ReadingRow);
  }

  const fresh: StoredReading[] = [];
  const filled: (string | number | null)[][] = [];
  for (const row of rows.values()) {
    if (!row.changed) continue;
    if (row.existed) filled.push([row.nodeId, row.ts, ...row.values]);
    else fresh.push(row);
  }
  if (fresh.length > 0) {
    const copy = copyFrom(client, COPY_READINGS);
    const out = new ReadingsCopy(siteId, now);
    for (const row of fresh) {
      out.row(row.nodeId, row.ts, row.values);
      if (out.full) await copy.write(out.take(false));
    }
    await copy.write(out.take(true));
    await copy.end();
  }
  if (filled.length > 0) {
    const params: unknown[] = [siteId];
    const source = unnestSource(READING_COLUMNS, filled, params);
    await client.query(
      `UPDATE readings r SET ${METRIC_COLUMNS.map((c) => `${c} = COALESCE(r.${c}, u.${c})`).join(', ')}
       FROM ${source} WHERE r.site_id = $1 AND r.node_id = u.node_id AND r.ts = u.ts`,
      params,
    );
  }
  return contributions;
}

const BUCKET_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['bucket_start', 'bigint'],
  ...ROLLUP_COLUMNS.map((c) => [c, c.endsWith('_count') ? 'integer' : 'float8'] as const),
];
const LATEST_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['ts', 'bigint'],
  ...METRIC_COLUMNS.flatMap((c) => [[c, 'float8'] as const, [`${c}_ts`, 'bigint'] as const]),
];

/** `INSERT … ON CONFLICT` adding a batch's sums to a rollup table, except buckets the site sent whole. */
function addToBucketsSql(table: 'readings_hourly' | 'readings_daily'): string {
  const cols = ['node_id', 'bucket_start', ...ROLLUP_COLUMNS].join(', ');
  return `INSERT INTO ${table} AS t (site_id, ${cols})
     SELECT $1, ${cols} FROM ${ROLLUP_STAGE} WHERE ${table === 'readings_hourly' ? '' : 'NOT '}hourly
     ON CONFLICT (site_id, node_id, bucket_start) DO UPDATE SET
       ${ROLLUP_COLUMNS.map((c) => `${c} = t.${c} + EXCLUDED.${c}`).join(', ')}
     WHERE NOT t.from_site`;
}

/**
 * `INSERT … ON CONFLICT` merging the batch's newest values into readings_latest, field by field:
 * a value moves only to one at least as new (as the hub's mergeLatest); `ts` to the newest.
 */
function mergeLatestSql(source: string): string {
  const cols = LATEST_COLUMNS.map(([c]) => c).join(', ');
  const newer = (c: string) =>
    `EXCLUDED.${c}_ts IS NOT NULL AND (l.${c}_ts IS NULL OR EXCLUDED.${c}_ts >= l.${c}_ts)`;
  return `INSERT INTO readings_latest AS l (site_id, ${cols}) SELECT $1, ${cols} FROM ${source}
     ON CONFLICT (site_id, node_id) DO UPDATE SET
       ts = GREATEST(l.ts, EXCLUDED.ts),
       ${METRIC_COLUMNS.map(
         (c) =>
           `${c} = CASE WHEN ${newer(c)} THEN EXCLUDED.${c} ELSE l.${c} END, ` +
           `${c}_ts = CASE WHEN ${newer(c)} THEN EXCLUDED.${c}_ts ELSE l.${c}_ts END`,
       ).join(',\n       ')}`;
}

/** The statement parts (CTEs) that add the batch's readings to the rollups and latest rows. */
export function readingsCtes(readings: Contributions, params: unknown[]): string[] {
  return [
    `hourly AS (${addToBucketsSql('readings_hourly')})`,
    `daily AS (${addToBucketsSql('readings_daily')})`,
    `latest AS (${mergeLatestSql(unnestSource(LATEST_COLUMNS, readings.latest(), params))})`,
  ];
}

/** `rollup` records: the site's whole figures for a bucket replace ours, and stand from then on. */
export async function applyRollupRecords(
  client: pg.PoolClient,
  siteId: string,
  rollups: readonly RecordBody<'rollup'>[],
) {
  for (const interval of ['1h', '1d'] as const) {
    const last = new Map<string, RecordBody<'rollup'>>();
    for (const r of rollups) if (r.interval === interval) last.set(key(r.node_id, r.bucket_start), r);
    if (last.size === 0) continue;
    const rows = [...last.values()].map((r) => [
      r.node_id,
      r.bucket_start,
      ...ROLLUP_COLUMNS.map((c) => r[c as keyof typeof r] as number),
    ]);
    const params: unknown[] = [siteId];
    const source = unnestSource(BUCKET_COLUMNS, rows, params);
    const cols = BUCKET_COLUMNS.map(([c]) => c).join(', ');
    await client.query(
      `INSERT INTO ${interval === '1h' ? 'readings_hourly' : 'readings_daily'} (site_id, ${cols}, from_site)
       SELECT $1, ${cols}, true FROM ${source}
       ON CONFLICT (site_id, node_id, bucket_start) DO UPDATE SET
         ${ROLLUP_COLUMNS.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, from_site = true`,
      params,
    );
  }
}
