/**
 * Applies one site batch to PostgreSQL, atomically and exactly once (docs/sync.md "Upstream",
 * issue 12 "Bad input and faults").
 *
 * One transaction per batch, in few statements (BENCHMARKS.md "Issue 12": each statement and
 * each commit is a cost per batch, whatever its size):
 * 1. one statement locks the site's row (`SELECT … FOR UPDATE`, which serialises the batches of
 *    one site across every upstream process sharing the database: the second of two processes
 *    handed the same batch waits there), remembers the signed request's `jti` in
 *    `sync_request_ids` (a replay is refused) and looks the batch up in `sync_batches` (a retry
 *    of an applied batch is acknowledged as a duplicate, nothing applied). That lookup used the
 *    statement's snapshot, taken before the lock was granted: a batch that looks like it goes
 *    backwards is looked up once more before it is refused, so the process that waited for the
 *    other to commit the same batch finds it;
 * 2. the records: readings as one binary `COPY … FROM STDIN` into `readings`, the rest in bulk
 *    (a few multi-row statements over `unnest()` arrays, never one statement per record);
 * 3. one statement adds the readings' sums to the hourly and daily rollups, merges the latest
 *    rows, records the batch in `sync_batches` and moves the site's cursor, counters and (for a
 *    signed request) last-contact time.
 * Expired request ids are deleted at most once a minute, outside the batches' transactions. A
 * refusal (gap, backwards, replay, unknown or revoked site) rolls everything back.
 *
 * Readings follow the hub's own rules (src/store/reading-writer.ts), so the upstream's rollups
 * mean the same as the site's:
 * - only what a reading adds counts: all of a new row, or only the fields it fills in a row
 *   stored before (COALESCE, never overwriting); a reading seen again adds nothing;
 * - contributions are summed per (node, hour) and (node, day) with the hub's own `accumulate`,
 *   then added to each bucket once (`col = col + excluded.col`) — unless the bucket came whole
 *   from the site (`from_site`, a `rollup` record for readings it dropped from its outbox),
 *   whose figures stand;
 * - the latest row moves field by field, only to a value at least as new.
 * The fast path takes every row of the batch for a new one and COPYs them all: the primary key
 * is the check. Should any be stored already (a fill of a row the upstream holds, the same row
 * twice in the batch, or an old-style `reading` record that repeats a whole row), the COPY
 * fails with a unique violation, the transaction is rolled back, and the batch is applied again
 * the careful way: the rows looked up first, and only what each adds stored and counted. So the
 * rollups never depend on what a site promises about its rows, and a batch applied once adds
 * its values once.
 */
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import { ACC_SIZE, accumulate, bucketStart, ROLLUP_COLUMNS } from '../../src/store/rollups.js';
import {
  type Batch,
  batchCoverageProblem,
  type ReadingRow,
  type RecordBody,
  recordEntries,
  type SyncRecord,
  UPSTREAM_PRINCIPAL_PREFIX,
} from '../protocol.js';
import { copyFrom } from './db/copy-from.js';
import { ensurePartitions } from './db/partitions.js';
import { withTransaction } from './db/pool.js';
import { METRIC_COLUMNS } from './db/schema.js';
import { notifyHistoryChanged } from './history-changes.js';
import { sendSubscriptionsForNewNodes } from './subscription-fanout.js';

export type ApplyRefusal =
  | 'gap'
  | 'sequence_backwards'
  | 'unknown_site'
  | 'revoked_site'
  | 'replayed_request';

export type ApplyOutcome =
  | { kind: 'applied' | 'duplicate'; ackedSeq: number }
  | { kind: 'refused'; reason: ApplyRefusal; expectedSeq: number; detail: string };

/** What a batch changed, for the live stream (told after the commit). */
export interface AppliedChanges {
  /** Readings the batch added (new rows and rows it filled). */
  readingCount: number;
  /**
   * Per node, the newest reading the batch added (node id, ts, then the metrics it added, null
   * elsewhere): what a dashboard needs to move its latest values, whatever the batch's size.
   */
  latestReadings: ReadingRow[];
  /** The node rows of the batch, the newest per node. */
  nodes: RecordBody<'node'>[];
}

export interface BatchApplierOptions {
  now?: () => number;
  /** Told, after the commit, the ids of the messages a batch inserted or changed. */
  onMessages?: (siteId: string, messageIds: string[]) => void;
  /** Told, after the commit, the readings and nodes a batch applied (when it applied any). */
  onApplied?: (siteId: string, changes: AppliedChanges) => void;
  log?: Logger;
}

const SLOTS = METRIC_COLUMNS.length;
const UNIQUE_VIOLATION = '23505';
/** SQLSTATEs of partition DDL that lost a race or a lock: the rows go to the default partition for now. */
const PARTITION_RACES = new Set(['55P03', '23514', '40P01', '42P07']);
/** How long past its `exp` a request id is kept: the verifier's clock tolerance, and some. */
const REQUEST_ID_GRACE_MS = 5 * 60_000;
/** Expired request ids are deleted at most this often (by whichever batch comes then). */
const REQUEST_ID_PRUNE_MS = 60_000;

/** A refusal decided inside the transaction: thrown to roll it back, caught in apply(). */
class Refused extends Error {
  constructor(readonly outcome: Extract<ApplyOutcome, { kind: 'refused' }>) {
    super(outcome.detail);
  }
}

/** The fast path met a reading stored already: redo the batch the careful way. */
class FastPathConflict extends Error {}

type RecordsOf<K extends SyncRecord['kind']> = RecordBody<K>[];

interface Sorted {
  /** Every reading row of the batch in sequence order (`readings` rows, `reading` records). */
  readings: ReadingRow[];
  /** A time in each month the readings and audit events fall in (for their partitions). */
  months: Set<number>;
  rollup: RecordsOf<'rollup'>;
  node: RecordsOf<'node'>;
  message: RecordsOf<'message'>;
  message_transition: RecordsOf<'message_transition'>;
  subscription: RecordsOf<'subscription'>;
  audit_event: RecordsOf<'audit_event'>;
  audit_tags: RecordsOf<'audit_tags'>;
  audit_comment: RecordsOf<'audit_comment'>;
}

function readingRowOf(body: RecordBody<'reading'>): ReadingRow {
  return [
    body.node_id,
    body.ts,
    body.temperature_c,
    body.humidity_percent,
    body.pressure_pa,
    body.wind_speed_ms,
    body.wind_direction,
    body.pm25_ugm3,
    body.pm10_ugm3,
    body.gas_resistance_kohm,
  ];
}

function sortRecords(records: readonly SyncRecord[]): Sorted {
  const sorted: Sorted = {
    readings: [],
    months: new Set(),
    rollup: [],
    node: [],
    message: [],
    message_transition: [],
    subscription: [],
    audit_event: [],
    audit_tags: [],
    audit_comment: [],
  };
  let ordered = true;
  for (let i = 1; i < records.length && ordered; i++) ordered = records[i - 1]!.seq < records[i]!.seq;
  const inOrder = ordered ? records : [...records].sort((a, b) => a.seq - b.seq);
  // The month of the row before: a month is worked out only when a row leaves it (rows come
  // mostly in time order).
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  const month = (ts: number) => {
    const d = new Date(ts);
    from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    sorted.months.add(from);
  };
  const readings = sorted.readings;
  for (const record of inOrder) {
    if (record.kind === 'readings') {
      const rows = record.body.rows;
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i]!;
        readings.push(row);
        const ts = row[1];
        if (ts < from || ts >= to) month(ts);
      }
    } else if (record.kind === 'reading') {
      readings.push(readingRowOf(record.body));
      month(record.body.ts);
    } else {
      if (record.kind === 'audit_event') month(record.body.ts);
      (sorted[record.kind] as unknown[]).push(record.body);
    }
  }
  return sorted;
}

/**
 * A PostgreSQL array literal: numbers bare, strings quoted. Faster than pg's own serialiser
 * (which quotes every element) on the columns of a batch; numbers keep their shortest
 * round-trip form, which PostgreSQL parses back to the same double.
 */
export function pgArray(values: readonly (string | number | boolean | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'number') out += Number.isFinite(v) ? String(v) : 'NULL';
    else if (typeof v === 'boolean') out += v ? 't' : 'f';
    else out += `"${storable(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }
  return `${out}}`;
}

/**
 * PostgreSQL text cannot hold NUL, which SQLite (and JSON) can: a site's text with one would
 * otherwise fail its batch, and every retry of it, forever. It becomes U+FFFD.
 */
export function storable(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/** A JSON array of strings for a `json` column, each storable. */
const jsonStrings = (values: readonly string[]) => JSON.stringify(values.map(storable));

type ColumnType = 'text' | 'bigint' | 'integer' | 'float8' | 'uuid' | 'boolean' | 'json';

/**
 * Rows as one `unnest($n::t[], …) AS u(col, …)` source: one array parameter per column, however
 * many rows. `params` continues the caller's parameter list.
 */
function unnestSource(
  columns: readonly (readonly [name: string, type: ColumnType])[],
  rows: readonly (readonly (string | number | boolean | null)[])[],
  params: unknown[],
): string {
  const args = columns.map(([, type], c) => {
    params.push(pgArray(rows.map((row) => row[c] ?? null)));
    return `$${params.length}::${type}[]`;
  });
  return `unnest(${args.join(', ')}) AS u(${columns.map(([name]) => name).join(', ')})`;
}

// ---- readings: what a batch adds, and the binary COPY of its rows ----

/**
 * The buckets one node touches in one batch: a few hours and days, visited in time order, so a
 * short list with the last hit remembered beats a Map (as in the hub's writer).
 */
class Buckets {
  readonly starts: number[] = [];
  readonly accs: number[][] = [];
  private last = -1;

  get(start: number): number[] {
    if (this.last >= 0 && this.starts[this.last] === start) return this.accs[this.last]!;
    let at = this.starts.lastIndexOf(start);
    if (at < 0) {
      at = this.starts.push(start) - 1;
      this.accs.push(new Array<number>(ACC_SIZE).fill(0));
    }
    this.last = at;
    return this.accs[at]!;
  }
}

/** One node's share of a batch: its rollup sums, and per metric the newest value it added. */
interface NodeContribution {
  nodeId: string;
  hours: Buckets;
  days: Buckets;
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
class Contributions {
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
        hours: new Buckets(),
        days: new Buckets(),
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
    accumulate(node.hours.get(bucketStart(ts, '1h')), values);
    accumulate(node.days.get(bucketStart(ts, '1d')), values);
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

  /**
   * The hourly and daily sums as binary COPY data for ROLLUP_STAGE (binary: no text to write
   * here or to parse there, which for the ~9,000 buckets of 100,000 readings is a real cost).
   */
  rollupCopy(): Buffer {
    let buckets = 0;
    for (const node of this.nodes.values()) buckets += node.hours.starts.length + node.days.starts.length;
    const buf = Buffer.allocUnsafe(COPY_HEADER.length + buckets * STAGE_ROW_MAX + 2);
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let o = COPY_HEADER.copy(buf, 0);
    for (const node of this.nodes.values()) {
      const id = Buffer.from(node.nodeId, 'utf8');
      for (const [hourly, { starts, accs }] of [
        [true, node.hours],
        [false, node.days],
      ] as const) {
        for (let b = 0; b < starts.length; b++) {
          view.setInt16(o, STAGE_FIELDS);
          view.setInt32(o + 2, 1);
          buf[o + 6] = hourly ? 1 : 0;
          view.setInt32(o + 7, id.length);
          o += 11 + id.copy(buf, o + 11);
          const start = starts[b]!;
          const hi = Math.floor(start / TWO_32);
          view.setInt32(o, 8);
          view.setInt32(o + 4, hi);
          view.setUint32(o + 8, start - hi * TWO_32);
          o += 12;
          const acc = accs[b]!;
          for (let i = 0; i < ACC_SIZE; i++) {
            if (ROLLUP_IS_COUNT[i]) {
              view.setInt32(o, 4);
              view.setInt32(o + 4, acc[i]!);
              o += 8;
            } else {
              view.setInt32(o, 8);
              view.setFloat64(o + 4, acc[i]!);
              o += 12;
            }
          }
        }
      }
    }
    view.setInt16(o, -1);
    return buf.subarray(0, o + 2);
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

/** `readings` columns in the order the COPY sends them. */
const COPY_READINGS = `COPY readings (site_id, node_id, ts, ${METRIC_COLUMNS.join(', ')}, received_at) FROM STDIN (FORMAT binary)`;
// site_id, node_id, ts, the metrics, received_at.
const COPY_FIELDS = 4 + SLOTS;
/** PGCOPY signature, flags (0) and header extension length (0). */
const COPY_HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);
/** A chunk is sent once it holds this many bytes: PostgreSQL loads one while the next is built. */
const COPY_CHUNK = 256 * 1024;
/** The most one row takes: 63-byte site id, 64-byte node id, 10 numbers of 8 bytes, lengths. */
const COPY_ROW_MAX = 2 + (4 + 63) + (4 + 64 * 4) + 12 * (COPY_FIELDS - 2);
const TWO_32 = 2 ** 32;

/**
 * The batch's rollup sums on their way into readings_hourly / readings_daily: a temporary table
 * of the connection (made once per connection), emptied at every commit.
 */
const ROLLUP_STAGE = 'sync_rollup_stage';
const ROLLUP_IS_COUNT = ROLLUP_COLUMNS.map((c) => c.endsWith('_count'));
const STAGE_FIELDS = 3 + ROLLUP_COLUMNS.length;
/** hourly, a 64-byte node id, bucket_start, the sums and counts, with their lengths. */
const STAGE_ROW_MAX = 2 + 5 + (4 + 64 * 4) + 12 + 12 * ROLLUP_COLUMNS.length;
const CREATE_ROLLUP_STAGE = `CREATE TEMPORARY TABLE IF NOT EXISTS ${ROLLUP_STAGE} (
  hourly BOOLEAN NOT NULL, node_id TEXT NOT NULL, bucket_start BIGINT NOT NULL,
  ${ROLLUP_COLUMNS.map((c, i) => `${c} ${ROLLUP_IS_COUNT[i] ? 'INTEGER' : 'DOUBLE PRECISION'} NOT NULL`).join(', ')}
) ON COMMIT DELETE ROWS`;
/**
 * Connections whose stage table exists: marked once the transaction that made it committed (a
 * rolled-back one takes the table with it).
 */
const staged = new WeakSet<pg.PoolClient>();

/**
 * Copies the batch's rollup sums into ROLLUP_STAGE, made first on a connection that has not got
 * it yet; returns true when it made it (the caller marks the connection once committed).
 */
async function stageRollups(client: pg.PoolClient, data: Buffer): Promise<boolean> {
  const create = !staged.has(client);
  if (create) await client.query(CREATE_ROLLUP_STAGE);
  const copy = copyFrom(client, `COPY ${ROLLUP_STAGE} FROM STDIN (FORMAT binary)`);
  await copy.write(data);
  await copy.end();
  return create;
}

/**
 * Rows in PostgreSQL's binary COPY format: doubles and int8s as they are (no text to parse on
 * either side: BENCHMARKS.md "Issue 12", binary against text COPY).
 */
class ReadingsCopy {
  private buf = Buffer.allocUnsafe(COPY_CHUNK + COPY_ROW_MAX);
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  private at = 0;
  private readonly site: Buffer;
  /** Per node id, what starts each of its rows: field count, site id, node id, ts's length. */
  private readonly prefixes = new Map<string, Uint8Array>();
  private readonly receivedHi: number;
  private readonly receivedLo: number;
  private lastId: string | undefined;
  private lastPrefix: Uint8Array | undefined;

  constructor(siteId: string, receivedAt: number) {
    this.site = Buffer.from(siteId, 'utf8');
    this.receivedHi = Math.floor(receivedAt / TWO_32);
    this.receivedLo = receivedAt - this.receivedHi * TWO_32;
    COPY_HEADER.copy(this.buf, 0);
    this.at = COPY_HEADER.length;
  }

  get full(): boolean {
    return this.at >= COPY_CHUNK;
  }

  private prefix(nodeId: string): Uint8Array {
    let prefix = this.prefixes.get(nodeId);
    if (!prefix) {
      const id = Buffer.from(nodeId, 'utf8');
      const site = this.site;
      const out = Buffer.allocUnsafe(2 + 4 + site.length + 4 + id.length + 4);
      let o = out.writeInt16BE(COPY_FIELDS, 0);
      o = out.writeInt32BE(site.length, o);
      o += site.copy(out, o);
      o = out.writeInt32BE(id.length, o);
      o += id.copy(out, o);
      out.writeInt32BE(8, o); // the length of ts, which follows
      prefix = new Uint8Array(out);
      this.prefixes.set(nodeId, prefix);
    }
    return prefix;
  }

  /** A row: node id, ts, the SLOTS values (null: NULL). */
  row(nodeId: string, ts: number, values: readonly (number | null)[]): void {
    let prefix = this.lastPrefix!;
    if (nodeId !== this.lastId) {
      prefix = this.prefix(nodeId);
      this.lastId = nodeId;
      this.lastPrefix = prefix;
    }
    const buf = this.buf;
    const view = this.view;
    let o = this.at;
    // A few dozen bytes: a loop beats a native copy call.
    for (let k = 0; k < prefix.length; k++) buf[o + k] = prefix[k]!;
    o += prefix.length;
    const hi = Math.floor(ts / TWO_32);
    view.setInt32(o, hi);
    view.setUint32(o + 4, ts - hi * TWO_32);
    o += 8;
    for (let slot = 0; slot < SLOTS; slot++) {
      const v = values[slot];
      if (v === null || v === undefined) {
        view.setInt32(o, -1);
        o += 4;
      } else {
        view.setInt32(o, 8);
        view.setFloat64(o + 4, v);
        o += 12;
      }
    }
    view.setInt32(o, 8);
    view.setInt32(o + 4, this.receivedHi);
    view.setUint32(o + 8, this.receivedLo);
    this.at = o + 12;
  }

  /** The bytes so far (a new buffer is used from here on); `last` adds the trailer. */
  take(last: boolean): Buffer {
    if (last) {
      this.view.setInt16(this.at, -1);
      this.at += 2;
    }
    const out = this.buf.subarray(0, this.at);
    this.buf = Buffer.allocUnsafe(COPY_CHUNK + COPY_ROW_MAX);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.at = 0;
    return out;
  }
}

/**
 * The fast path: every row of the batch is taken for a new one and COPYed, summed as it goes
 * (JS sums the next chunk while PostgreSQL loads the one before). A row stored already makes
 * the COPY fail: FastPathConflict.
 */
async function copyNewReadings(
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
      let any = false;
      for (let slot = 0; slot < SLOTS; slot++) {
        const v = row[2 + slot] as number | null;
        values[slot] = v;
        if (v !== null) any = true;
      }
      // As on the hub: a reading with no metric is not stored.
      if (!any) continue;
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
async function mergeReadings(
  client: pg.PoolClient,
  siteId: string,
  readings: readonly ReadingRow[],
  now: number,
): Promise<Contributions> {
  const rows = await loadExisting(client, siteId, readings);
  const contributions = new Contributions();
  const added = new Array<number | null>(SLOTS);
  for (const reading of readings) {
    let any = false;
    for (let slot = 0; slot < SLOTS; slot++) {
      const v = reading[2 + slot] as number | null;
      added[slot] = v;
      if (v !== null) any = true;
    }
    if (!any) continue;
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

/**
 * The oldest time whose rollup buckets the batch changes: its readings' times and the starts of
 * the buckets it sends whole (undefined → null: none). History caches drop buckets from there on.
 */
function changedFrom(batch: Batch): number | null {
  let oldest: number | null = null;
  const see = (ts: number) => {
    if (oldest === null || ts < oldest) oldest = ts;
  };
  for (const r of batch.records) {
    if (r.kind === 'readings')
      for (const row of (r.body as { rows: unknown[][] }).rows) see(row[1] as number);
    else if (r.kind === 'reading') see((r.body as { ts: number }).ts);
    else if (r.kind === 'rollup') see((r.body as { bucket_start: number }).bucket_start);
  }
  return oldest;
}

/**
 * Step 3, one statement: the readings' sums into the rollups, their newest values into the
 * latest rows, the batch into sync_batches, and the site's cursor, counters and contact time.
 */
function endBatchQuery(
  siteId: string,
  batch: Batch,
  readings: Contributions,
  now: number,
  contact: boolean,
): pg.QueryConfig {
  let newest: number | null = null;
  // Outbox entries carried as records (a merged `readings` record counts each of its entries),
  // as the site counts what it sent.
  let entries = 0;
  for (const r of batch.records) {
    if (newest === null || r.at > newest) newest = r.at;
    entries += recordEntries(r);
  }
  const params: unknown[] = [
    siteId,
    batch.first_seq,
    batch.last_seq,
    entries,
    now,
    newest,
    contact,
    changedFrom(batch),
  ];
  const ctes: string[] = [];
  if (readings.nodes.size > 0) {
    ctes.push(
      `hourly AS (${addToBucketsSql('readings_hourly')})`,
      `daily AS (${addToBucketsSql('readings_daily')})`,
      `latest AS (${mergeLatestSql(unnestSource(LATEST_COLUMNS, readings.latest(), params))})`,
    );
  }
  ctes.push(
    `batch AS (INSERT INTO sync_batches (site_id, first_seq, last_seq, records, applied_at, changed_from)
      VALUES ($1, $2, $3, $4, $5, $8::bigint))`,
  );
  return {
    // The same text for every batch (with readings or without): parsed once per connection.
    name: readings.nodes.size > 0 ? 'meshhub-sync-end-batch-readings' : 'meshhub-sync-end-batch',
    text: `WITH ${ctes.join(',\n')}
      UPDATE sites SET acked_seq = $3, last_batch_at = $5,
        last_contact_at = CASE WHEN $7 THEN $5 ELSE last_contact_at END,
        last_record_at = GREATEST(last_record_at, $6::bigint),
        records_applied = records_applied + $4
      WHERE site_id = $1`,
    values: params,
  };
}

/** Locks the site, remembers the request id, finds the batch if applied: step 1. */
const BEGIN_BATCH = `
  WITH site AS (SELECT acked_seq, revoked_at FROM sites WHERE site_id = $1 FOR UPDATE),
  jti AS (
    INSERT INTO sync_request_ids (site_id, jti, expires_at)
    SELECT $1, $3::text, $4::bigint FROM site WHERE $3::text IS NOT NULL
    ON CONFLICT (site_id, jti) DO NOTHING
    RETURNING 1
  )
  SELECT s.acked_seq, s.revoked_at,
    (SELECT last_seq FROM sync_batches WHERE site_id = $1 AND first_seq = $2) AS applied_last,
    (SELECT count(*)::int FROM jti) AS jti_new
  FROM site s`;

// ---- the applier ----

/** One batch request of a site in progress in this process (BatchApplier.arrived). */
export interface BatchTicket {
  readonly siteId: string;
  /** Arrival order in this process. */
  readonly number: number;
  end(): void;
}

export class BatchApplier {
  private readonly now: () => number;
  private prunedAt = Number.NEGATIVE_INFINITY;
  /** Per site, the batch requests in progress here: arrival number → settles when answered. */
  private readonly inProgress = new Map<string, Map<number, Promise<void>>>();
  private tickets = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: BatchApplierOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Applies `batch` from `siteId` in one transaction, or refuses it and changes nothing. `jti`:
   * the signed request's id, refused if seen before. Throws only for a database failure (or a
   * batch that is not for `siteId` / does not cover its range: the caller validates that).
   */
  async apply(
    siteId: string,
    batch: Batch,
    jti?: { value: string; expiresAt: number },
    ticket?: BatchTicket,
  ): Promise<ApplyOutcome> {
    if (batch.site_id !== siteId) throw new Error(`the batch is for site ${batch.site_id}, not ${siteId}`);
    const coverage = batchCoverageProblem(batch);
    if (coverage) throw new Error(`the batch does not cover its range: ${coverage}`);
    const own = ticket ?? this.arrived(siteId);
    try {
      const records = sortRecords(batch.records);
      const now = this.now();
      await this.pruneRequestIds(now);
      await this.preparePartitions(records);
      let outcome = await this.applyAndTell(siteId, batch, records, jti, now);
      if (outcome.kind === 'refused' && outcome.reason === 'gap') {
        // A site sends its next batch while the one before is still being applied: when that
        // one arrived here first and is not done yet, this one waits for it, then tries again.
        const earlier = this.earlierThan(own);
        if (earlier.length > 0) {
          await Promise.allSettled(earlier);
          outcome = await this.applyAndTell(siteId, batch, records, jti, this.now());
        }
      }
      return outcome;
    } finally {
      if (!ticket) own.end();
    }
  }

  /**
   * A batch request of `siteId` arrived at this process (before its body is read). A batch
   * that finds a gap waits for the requests of its site that arrived before it (in this
   * process) and tries again: a site keeps two batches in flight. `end()` when it is answered.
   */
  arrived(siteId: string): BatchTicket {
    let site = this.inProgress.get(siteId);
    if (!site) {
      site = new Map();
      this.inProgress.set(siteId, site);
    }
    const tickets = site;
    const number = ++this.tickets;
    let end!: () => void;
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    const ticket: BatchTicket = {
      siteId,
      number,
      end: () => {
        end();
        tickets.delete(number);
        if (tickets.size === 0 && this.inProgress.get(siteId) === tickets) this.inProgress.delete(siteId);
      },
    };
    tickets.set(number, done);
    return ticket;
  }

  private earlierThan(ticket: BatchTicket): Promise<void>[] {
    const site = this.inProgress.get(ticket.siteId);
    if (!site) return [];
    return [...site].filter(([number]) => number < ticket.number).map(([, done]) => done);
  }

  /** One try: applied (the fast path, or the careful one after a conflict), or refused. */
  private async applyAndTell(
    siteId: string,
    batch: Batch,
    records: Sorted,
    jti: { value: string; expiresAt: number } | undefined,
    now: number,
  ): Promise<ApplyOutcome> {
    try {
      let applied: { outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] };
      try {
        applied = await this.applyOnce(siteId, batch, records, jti, now, true);
      } catch (error) {
        if (!(error instanceof FastPathConflict)) throw error;
        // Rolled back whole: everything again, the readings the careful way.
        applied = await this.applyOnce(siteId, batch, records, jti, now, false);
      }
      const { outcome, changes, messageIds } = applied;
      if (outcome.kind === 'applied') {
        if (messageIds.length > 0) this.options.onMessages?.(siteId, messageIds);
        if (changes && (changes.readingCount > 0 || changes.nodes.length > 0)) {
          this.options.onApplied?.(siteId, changes);
        }
      }
      return outcome;
    } catch (error) {
      if (error instanceof Refused) return error.outcome;
      throw error;
    }
  }

  /**
   * Deletes the request ids that expired long enough ago to never verify again, at most once
   * a minute (outside any batch's transaction); called by apply, and by whoever wants it now.
   */
  async pruneRequestIds(now = this.now(), force = false): Promise<void> {
    if (!force && now - this.prunedAt < REQUEST_ID_PRUNE_MS) return;
    this.prunedAt = now;
    await this.pool.query('DELETE FROM sync_request_ids WHERE expires_at < $1', [now - REQUEST_ID_GRACE_MS]);
  }

  private async applyOnce(
    siteId: string,
    batch: Batch,
    records: Sorted,
    jti: { value: string; expiresAt: number } | undefined,
    now: number,
    fast: boolean,
  ): Promise<{ outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] }> {
    let created: pg.PoolClient | undefined;
    type Result = { outcome: ApplyOutcome; changes?: AppliedChanges; messageIds: string[] };
    const result = await withTransaction(this.pool, async (client): Promise<Result> => {
      // A signed request (it has a jti) is the site's contact; a direct apply is not.
      const contact = jti !== undefined;
      // The fast path COPYs the readings BEFORE it locks the site: the COPY, the biggest part of
      // PostgreSQL's work, then runs while the site's batch before it (the site keeps two in
      // flight) is still finishing on another connection. Nothing of it stays unless the checks
      // after it pass; a batch applied before conflicts in the COPY (its rows are there), and
      // the careful path, which locks first, finds it.
      let end: pg.QueryConfig | undefined;
      let rollups: Buffer | undefined;
      let readings: Contributions | undefined;
      if (fast && records.readings.length > 0) {
        readings = await copyNewReadings(client, siteId, records.readings, now, (sums) => {
          // What follows is made (JS) while PostgreSQL still loads the COPY's last rows.
          rollups = sums.nodes.size > 0 ? sums.rollupCopy() : undefined;
          end = endBatchQuery(siteId, batch, sums, now, contact);
        });
        if (rollups && (await stageRollups(client, rollups))) created = client;
      }
      const acked = await this.beginBatch(client, siteId, batch, jti);
      if (acked === 'duplicate') {
        // Rows this transaction copied (none, for a batch really applied before) must not stay.
        if (readings && readings.count > 0) throw new FastPathConflict();
        const site = await client.query<{ acked_seq: number }>(
          `UPDATE sites SET last_contact_at = CASE WHEN $3 THEN $2 ELSE last_contact_at END
           WHERE site_id = $1 RETURNING acked_seq`,
          [siteId, now, contact],
        );
        return { outcome: { kind: 'duplicate', ackedSeq: site.rows[0]!.acked_seq }, messageIds: [] };
      }
      if (!readings) {
        readings =
          records.readings.length === 0
            ? new Contributions()
            : await mergeReadings(client, siteId, records.readings, now);
        if (readings.nodes.size > 0 && (await stageRollups(client, readings.rollupCopy()))) created = client;
      }
      const { messageIds, nodes } = await this.applyRecords(client, siteId, records, now);
      await client.query(end ?? endBatchQuery(siteId, batch, readings, now, contact));
      // Every process's history cache drops what this batch changed, at its commit.
      const changed = changedFrom(batch);
      if (changed !== null) await notifyHistoryChanged(client, siteId, changed);
      const changes: AppliedChanges = {
        readingCount: readings.count,
        latestReadings: readings.newest(),
        nodes,
      };
      return { outcome: { kind: 'applied', ackedSeq: batch.last_seq }, changes, messageIds };
    });
    if (created) staged.add(created);
    return result;
  }

  /**
   * Step 1: locks the site's row (serialising its batches in every process), checks the
   * request and the sequence. Returns acked_seq, or 'duplicate' for a batch applied before.
   */
  private async beginBatch(
    client: pg.PoolClient,
    siteId: string,
    batch: Batch,
    jti: { value: string; expiresAt: number } | undefined,
  ): Promise<number | 'duplicate'> {
    const { rows } = await client.query<{
      acked_seq: number;
      revoked_at: number | null;
      applied_last: number | null;
      jti_new: number;
    }>({
      name: 'meshhub-sync-begin-batch',
      text: BEGIN_BATCH,
      values: [siteId, batch.first_seq, jti ? storable(jti.value) : null, jti?.expiresAt ?? null],
    });
    const site = rows[0];
    if (!site) {
      throw new Refused({
        kind: 'refused',
        reason: 'unknown_site',
        expectedSeq: 0,
        detail: `no site ${siteId}`,
      });
    }
    const expectedSeq = site.acked_seq + 1;
    if (site.revoked_at !== null) {
      throw new Refused({
        kind: 'refused',
        reason: 'revoked_site',
        expectedSeq,
        detail: `site ${siteId} is revoked`,
      });
    }
    if (jti && site.jti_new !== 1) {
      throw new Refused({
        kind: 'refused',
        reason: 'replayed_request',
        expectedSeq,
        detail: `this signed request (batch ${batch.first_seq}..${batch.last_seq}) was received before`,
      });
    }
    if (site.applied_last === batch.last_seq) return 'duplicate';
    const acked = site.acked_seq;
    if (batch.first_seq > acked + 1) {
      throw new Refused({
        kind: 'refused',
        reason: 'gap',
        expectedSeq,
        detail: `the batch starts at ${batch.first_seq}, but the next sequence number the upstream needs is ${expectedSeq}`,
      });
    }
    if (batch.first_seq <= acked) {
      // The lookup above saw the snapshot from before the lock was granted: when another
      // process committed this very batch meanwhile, only a new statement sees it.
      if (site.applied_last === null) {
        const again = await client.query<{ last_seq: number }>(
          'SELECT last_seq FROM sync_batches WHERE site_id = $1 AND first_seq = $2',
          [siteId, batch.first_seq],
        );
        if (again.rows[0]?.last_seq === batch.last_seq) return 'duplicate';
      }
      throw new Refused({
        kind: 'refused',
        reason: 'sequence_backwards',
        expectedSeq,
        detail: `the batch starts at ${batch.first_seq}, at or before ${acked}, which is applied already`,
      });
    }
    return acked;
  }

  /** Creates the monthly partitions the batch's rows need, outside the batch's transaction. */
  private async preparePartitions(records: Sorted): Promise<void> {
    if (records.months.size === 0) return;
    try {
      await ensurePartitions(this.pool, [...records.months], { now: this.now });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !PARTITION_RACES.has(code)) throw error;
      // The rows go to the default partition; a later ensurePartitions moves them.
      this.options.log?.warn({ err: error }, 'creating a partition failed; rows go to the default partition');
    }
  }

  private async applyRecords(
    client: pg.PoolClient,
    siteId: string,
    r: Sorted,
    now: number,
  ): Promise<{ messageIds: string[]; nodes: RecordBody<'node'>[] }> {
    // Before the readings' sums are added (endBatch): a bucket the site sent whole takes no more.
    if (r.rollup.length > 0) await applyRollupRecords(client, siteId, r.rollup);
    const nodes = r.node.length > 0 ? await applyNodes(client, siteId, r.node, now) : [];
    const messageIds = r.message.length > 0 ? await applyMessages(client, siteId, r.message, now) : [];
    if (r.message_transition.length > 0) await applyTransitions(client, siteId, r.message_transition);
    if (r.subscription.length > 0) await applySubscriptions(client, siteId, r.subscription);
    if (r.audit_event.length > 0) await applyAuditEvents(client, siteId, r.audit_event, now);
    if (r.audit_tags.length > 0) await applyAuditTags(client, siteId, r.audit_tags);
    if (r.audit_comment.length > 0) await applyAuditComments(client, siteId, r.audit_comment);
    return { messageIds, nodes };
  }
}

// ---- rollup records, nodes, messages, subscriptions ----

/** `rollup` records: the site's whole figures for a bucket replace ours, and stand from then on. */
async function applyRollupRecords(client: pg.PoolClient, siteId: string, rollups: RecordsOf<'rollup'>) {
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

const NODE_COLUMNS: readonly (readonly [keyof RecordBody<'node'>, ColumnType])[] = [
  ['node_id', 'text'],
  ['node_num', 'bigint'],
  ['short_name', 'text'],
  ['long_name', 'text'],
  ['hw_model', 'text'],
  ['latitude', 'float8'],
  ['longitude', 'float8'],
  ['altitude', 'float8'],
  ['last_heard', 'bigint'],
  ['battery_level', 'float8'],
  ['snr', 'float8'],
  ['updated_at', 'bigint'],
];

/** Node rows: the newest `updated_at` wins (the later record on a tie). Returns the batch's newest per node. */
async function applyNodes(
  client: pg.PoolClient,
  siteId: string,
  nodes: RecordsOf<'node'>,
  now: number,
): Promise<RecordBody<'node'>[]> {
  const newest = new Map<string, RecordBody<'node'>>();
  for (const n of nodes) {
    const seen = newest.get(n.node_id);
    if (!seen || n.updated_at >= seen.updated_at) newest.set(n.node_id, n);
  }
  const rows = [...newest.values()].map((n) => NODE_COLUMNS.map(([c]) => n[c]));
  const params: unknown[] = [siteId, now];
  const source = unnestSource(NODE_COLUMNS, rows, params);
  const cols = NODE_COLUMNS.map(([c]) => c);
  const { rows: written } = await client.query<{ node_id: string; inserted: boolean }>(
    `INSERT INTO nodes AS n (site_id, ${cols.join(', ')}, received_at) SELECT $1, ${cols.join(', ')}, $2 FROM ${source}
     ON CONFLICT (site_id, node_id) DO UPDATE SET
       ${[...cols.slice(1), 'received_at'].map((c) => `${c} = EXCLUDED.${c}`).join(', ')}
     WHERE EXCLUDED.updated_at >= n.updated_at
     RETURNING node_id, (xmax = 0) AS inserted`,
    params,
  );
  // The site's first record of a node: the upstream subscriptions covering it go down to it.
  const firstHeard = written.filter((w) => w.inserted).map((w) => w.node_id);
  await sendSubscriptionsForNewNodes(client, siteId, firstHeard, now);
  return [...newest.values()];
}

const MESSAGE_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['id', 'uuid'],
  ['subscriber', 'text'],
  ['owner', 'text'],
  ['owner_name', 'text'],
  ['node_id', 'text'],
  ['direction', 'text'],
  ['sender_node_id', 'text'],
  ['target_node_id', 'text'],
  ['text', 'text'],
  ['status', 'text'],
  ['failure_code', 'text'],
  ['failure_reason', 'text'],
  ['created_at', 'bigint'],
  ['updated_at', 'bigint'],
];

/** `read` is final for an inbound text: a late `received` never moves it back. */
function mergeStatus(current: string, incoming: string): string {
  return current === 'read' && incoming === 'received' ? 'read' : incoming;
}

/**
 * Message rows by id: the site's state of the text overwrites ours. A row that exists keeps its
 * origin and subscriber (a text an internet subscriber sent down comes back from the site under
 * owner `upstream:<principal>`; it stays theirs), and an upstream-origin row keeps its owner
 * fields. A new site-origin row owned by `upstream:<principal>` (a reply routed to an internet
 * subscriber) belongs to that subscriber. A row of another site with the same id is left alone.
 * Returns the ids inserted or changed.
 */
async function applyMessages(
  client: pg.PoolClient,
  siteId: string,
  messages: RecordsOf<'message'>,
  now: number,
): Promise<string[]> {
  const last = new Map<string, RecordBody<'message'>>();
  for (const m of messages) {
    const seen = last.get(m.id);
    last.set(m.id, seen ? { ...m, status: mergeStatus(seen.status, m.status) as typeof m.status } : m);
  }
  const rows = [...last.values()].map((m) => [
    m.id,
    m.owner?.startsWith(UPSTREAM_PRINCIPAL_PREFIX) ? m.owner.slice(UPSTREAM_PRINCIPAL_PREFIX.length) : null,
    m.owner,
    m.owner_name,
    m.node_id,
    m.direction,
    m.sender_node_id,
    m.target_node_id,
    m.text,
    m.status,
    m.failure_code,
    m.failure_reason,
    m.created_at,
    m.updated_at,
  ]);
  const params: unknown[] = [siteId, now];
  const source = unnestSource(MESSAGE_COLUMNS, rows, params);
  const cols = MESSAGE_COLUMNS.map(([c]) => c).join(', ');
  const status = `CASE WHEN m.status = 'read' AND EXCLUDED.status = 'received' THEN 'read' ELSE EXCLUDED.status END`;
  const owner = (c: string) => `CASE WHEN m.origin = 'upstream' THEN m.${c} ELSE EXCLUDED.${c} END`;
  const changing = ['sender_node_id', 'target_node_id', 'failure_code', 'failure_reason', 'updated_at'];
  const { rows: changed } = await client.query<{ id: string }>(
    `INSERT INTO messages AS m (site_id, origin, ${cols}, received_at)
     SELECT $1, 'site', ${cols}, $2 FROM ${source}
     ON CONFLICT (id) DO UPDATE SET
       owner = ${owner('owner')}, owner_name = ${owner('owner_name')}, status = ${status},
       ${changing.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, received_at = EXCLUDED.received_at
     WHERE m.site_id = EXCLUDED.site_id
       AND (m.owner, m.owner_name, m.status, ${changing.map((c) => `m.${c}`).join(', ')})
         IS DISTINCT FROM (${owner('owner')}, ${owner('owner_name')}, ${status}, ${changing.map((c) => `EXCLUDED.${c}`).join(', ')})
     RETURNING id`,
    params,
  );
  return changed.map((r) => r.id);
}

async function applyTransitions(
  client: pg.PoolClient,
  siteId: string,
  transitions: RecordsOf<'message_transition'>,
) {
  const rows = transitions.map((t) => [t.message_id, t.seq, t.status, t.reason, t.at]);
  const params: unknown[] = [siteId];
  const source = unnestSource(
    [
      ['message_id', 'uuid'],
      ['seq', 'integer'],
      ['status', 'text'],
      ['reason', 'text'],
      ['at', 'bigint'],
    ],
    rows,
    params,
  );
  await client.query(
    `INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at)
     SELECT $1, message_id, seq, status, reason, at FROM ${source}
     ON CONFLICT DO NOTHING`,
    params,
  );
}

async function applySubscriptions(client: pg.PoolClient, siteId: string, subs: RecordsOf<'subscription'>) {
  const last = new Map<number, RecordBody<'subscription'>>();
  for (const s of subs) last.set(s.id, s);
  const rows = [...last.values()].map((s) => [
    s.id,
    s.subscriber,
    s.all_nodes,
    jsonStrings(s.node_ids),
    s.status,
    s.expires_at,
    s.source,
    s.reference,
    s.created_at,
    s.updated_at,
  ]);
  const params: unknown[] = [siteId];
  const source = unnestSource(
    [
      ['id', 'bigint'],
      ['subscriber', 'text'],
      ['all_nodes', 'boolean'],
      ['node_ids', 'json'],
      ['status', 'text'],
      ['expires_at', 'bigint'],
      ['source', 'text'],
      ['reference', 'text'],
      ['created_at', 'bigint'],
      ['updated_at', 'bigint'],
    ],
    rows,
    params,
  );
  const set = [
    'subscriber',
    'all_nodes',
    'node_ids',
    'status',
    'expires_at',
    'source',
    'reference',
    'created_at',
  ];
  await client.query(
    `INSERT INTO site_subscriptions (site_id, id, subscriber, all_nodes, node_ids, status, expires_at, source, reference, created_at, updated_at)
     SELECT $1, id, subscriber, all_nodes, ARRAY(SELECT json_array_elements_text(node_ids)), status, expires_at,
            source, reference, created_at, updated_at
     FROM ${source}
     ON CONFLICT (site_id, id) DO UPDATE SET ${set.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, updated_at = EXCLUDED.updated_at`,
    params,
  );
}

// ---- audit ----

const auditKey = (source: string, sourceKey: string) => JSON.stringify([source, sourceKey]);

/**
 * Audit events are written once per (source, source_key), as on the site; `audit_event_keys`
 * says at which `ts` (the partition key) each one lives, for tag changes and comments.
 */
async function applyAuditEvents(
  client: pg.PoolClient,
  siteId: string,
  events: RecordsOf<'audit_event'>,
  now: number,
) {
  const first = new Map<string, RecordBody<'audit_event'>>();
  for (const e of events)
    if (!first.has(auditKey(e.source, e.source_key))) first.set(auditKey(e.source, e.source_key), e);
  const rows = [...first.values()].map((e) => [
    e.source,
    e.source_key,
    e.ts,
    e.service,
    e.operation,
    e.result,
    e.actor,
    e.target,
    jsonStrings(e.tags),
    e.raw,
    e.ingested_at,
  ]);
  const params: unknown[] = [siteId, now];
  const source = unnestSource(
    [
      ['source', 'text'],
      ['source_key', 'text'],
      ['ts', 'bigint'],
      ['service', 'text'],
      ['operation', 'text'],
      ['result', 'text'],
      ['actor', 'text'],
      ['target', 'text'],
      ['tags', 'json'],
      ['raw', 'text'],
      ['ingested_at', 'bigint'],
    ],
    rows,
    params,
  );
  // Only events whose key is new (or already at the same ts) are stored: never two rows for one key.
  await client.query(
    `WITH input AS (SELECT * FROM ${source}),
     keyed AS (
       INSERT INTO audit_event_keys (site_id, source, source_key, ts)
       SELECT $1, source, source_key, ts FROM input
       ON CONFLICT (site_id, source, source_key) DO UPDATE SET ts = audit_event_keys.ts
       RETURNING source, source_key, ts
     )
     INSERT INTO audit_events (site_id, source, source_key, ts, service, operation, result, actor, target, tags, raw, ingested_at, received_at)
     SELECT $1, i.source, i.source_key, i.ts, i.service, i.operation, i.result, i.actor, i.target,
            ARRAY(SELECT json_array_elements_text(i.tags)), i.raw, i.ingested_at, $2
     FROM input i JOIN keyed k ON k.source = i.source AND k.source_key = i.source_key AND k.ts = i.ts
     ON CONFLICT DO NOTHING`,
    params,
  );
}

async function applyAuditTags(client: pg.PoolClient, siteId: string, changes: RecordsOf<'audit_tags'>) {
  const last = new Map<string, RecordBody<'audit_tags'>>();
  for (const t of changes) last.set(auditKey(t.source, t.source_key), t);
  const rows = [...last.values()].map((t) => [t.source, t.source_key, jsonStrings(t.tags)]);
  const params: unknown[] = [siteId];
  const source = unnestSource(
    [
      ['source', 'text'],
      ['source_key', 'text'],
      ['tags', 'json'],
    ],
    rows,
    params,
  );
  await client.query(
    `UPDATE audit_events e SET tags = ARRAY(SELECT json_array_elements_text(u.tags))
     FROM ${source}
     JOIN audit_event_keys k ON k.site_id = $1 AND k.source = u.source AND k.source_key = u.source_key
     WHERE e.site_id = $1 AND e.source = k.source AND e.source_key = k.source_key AND e.ts = k.ts`,
    params,
  );
}

async function applyAuditComments(
  client: pg.PoolClient,
  siteId: string,
  comments: RecordsOf<'audit_comment'>,
) {
  const rows = comments.map((c) => [c.source, c.source_key, c.comment_id, c.author, c.text, c.created_at]);
  const params: unknown[] = [siteId];
  const source = unnestSource(
    [
      ['source', 'text'],
      ['source_key', 'text'],
      ['comment_id', 'bigint'],
      ['author', 'text'],
      ['text', 'text'],
      ['created_at', 'bigint'],
    ],
    rows,
    params,
  );
  await client.query(
    `INSERT INTO audit_comments (site_id, source, source_key, comment_id, author, text, created_at)
     SELECT $1, source, source_key, comment_id, author, text, created_at FROM ${source}
     ON CONFLICT DO NOTHING`,
    params,
  );
}
