/**
 * Applies one site batch to PostgreSQL, atomically and exactly once (docs/sync.md "Upstream",
 * issue 12 "Bad input and faults").
 *
 * One transaction per batch. It starts with `SELECT … FROM sites … FOR UPDATE`, which
 * serialises the batches of one site across every upstream process sharing the database: the
 * second of two processes handed the same batch waits there, then finds the batch in
 * `sync_batches` and acknowledges it as a duplicate without applying anything. A signed
 * request's `jti` goes into `sync_request_ids` in the same transaction (a replay is refused). A
 * refusal (gap, backwards, replay, unknown or revoked site) rolls everything back.
 *
 * Records are applied in bulk, a few multi-row statements per batch over `unnest()` arrays, never
 * one statement per record (the catch-up after days offline is ~100k readings). Readings follow
 * the hub's own rules (src/store/reading-writer.ts), so the upstream's rollups carry the same
 * figures as the site's:
 * - only what a reading adds counts: all of a new row, or only the fields it fills in a row
 *   stored before (COALESCE, never overwriting); a reading seen again adds nothing;
 * - contributions are summed per (node, hour) and (node, day) in record order with the hub's
 *   own `accumulate`, then added to each bucket once — unless the bucket came whole from the site
 *   (`from_site`, a `rollup` record for readings the site dropped from its outbox), whose
 *   figures stand;
 * - the latest row moves field by field, only to a value at least as new.
 * Like the hub's writer, readings newer than the newest the node has upstream are inserted
 * without looking them up first; should one exist after all, that part is redone the careful way.
 */
import type pg from 'pg';
import type { Logger } from '../../src/log.js';
import { ACC_SIZE, accumulate, bucketStart, ROLLUP_COLUMNS } from '../../src/store/rollups.js';
import {
  type Batch,
  batchCoverageProblem,
  type RecordBody,
  type SyncRecord,
  UPSTREAM_PRINCIPAL_PREFIX,
} from '../protocol.js';
import { ensurePartitions } from './db/partitions.js';
import { withTransaction } from './db/pool.js';
import { METRIC_COLUMNS } from './db/schema.js';
import { rememberRequestId } from './sites.js';

export type ApplyRefusal =
  | 'gap'
  | 'sequence_backwards'
  | 'unknown_site'
  | 'revoked_site'
  | 'replayed_request';

export type ApplyOutcome =
  | { kind: 'applied' | 'duplicate'; ackedSeq: number }
  | { kind: 'refused'; reason: ApplyRefusal; expectedSeq: number; detail: string };

export interface BatchApplierOptions {
  now?: () => number;
  /** Told, after the commit, the ids of the messages a batch inserted or changed. */
  onMessages?: (siteId: string, messageIds: string[]) => void;
  log?: Logger;
}

const SLOTS = METRIC_COLUMNS.length;
const UNIQUE_VIOLATION = '23505';
/** SQLSTATEs of partition DDL that lost a race or a lock: the rows go to the default partition for now. */
const PARTITION_RACES = new Set(['55P03', '23514', '40P01', '42P07']);

/** A refusal decided inside the transaction: thrown to roll it back, caught in apply(). */
class Refused extends Error {
  constructor(readonly outcome: Extract<ApplyOutcome, { kind: 'refused' }>) {
    super(outcome.detail);
  }
}

/** A reading believed new turned out to be stored already: redo the readings the careful way. */
class FastPathConflict extends Error {}

type RecordsOf<K extends SyncRecord['kind']> = RecordBody<K>[];

interface Sorted {
  reading: RecordsOf<'reading'>;
  rollup: RecordsOf<'rollup'>;
  node: RecordsOf<'node'>;
  message: RecordsOf<'message'>;
  message_transition: RecordsOf<'message_transition'>;
  subscription: RecordsOf<'subscription'>;
  audit_event: RecordsOf<'audit_event'>;
  audit_tags: RecordsOf<'audit_tags'>;
  audit_comment: RecordsOf<'audit_comment'>;
}

function sortRecords(records: readonly SyncRecord[]): Sorted {
  const sorted: Sorted = {
    reading: [],
    rollup: [],
    node: [],
    message: [],
    message_transition: [],
    subscription: [],
    audit_event: [],
    audit_tags: [],
    audit_comment: [],
  };
  const inOrder = [...records].sort((a, b) => a.seq - b.seq);
  for (const record of inOrder) (sorted[record.kind] as unknown[]).push(record.body);
  return sorted;
}

/**
 * A PostgreSQL array literal: numbers bare, strings quoted. Faster than pg's own serialiser
 * (which quotes every element) on the 5 000-row columns of a batch; numbers keep their shortest
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

/** One node's latest row: value and time per metric slot (null / -Infinity when unknown). */
interface LatestRow {
  ts: number;
  values: (number | null)[];
  times: number[];
  changed: boolean;
}

interface StoredReading {
  nodeId: string;
  ts: number;
  values: (number | null)[];
  /** The row was in the database before this batch. */
  existed: boolean;
  /** This batch added something to it. */
  changed: boolean;
}

interface Bucket {
  nodeId: string;
  start: number;
  acc: number[];
}

export class BatchApplier {
  private readonly now: () => number;

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
  ): Promise<ApplyOutcome> {
    if (batch.site_id !== siteId) throw new Error(`the batch is for site ${batch.site_id}, not ${siteId}`);
    const coverage = batchCoverageProblem(batch);
    if (coverage) throw new Error(`the batch does not cover its range: ${coverage}`);
    const records = sortRecords(batch.records);
    await this.preparePartitions(records);
    const now = this.now();
    let messageIds: string[] = [];
    try {
      const outcome = await withTransaction(this.pool, async (client) => {
        const acked = await this.lockSite(client, siteId, batch, jti, now);
        const applied = await client.query<{ last_seq: number }>(
          'SELECT last_seq FROM sync_batches WHERE site_id = $1 AND first_seq = $2',
          [siteId, batch.first_seq],
        );
        if (applied.rows[0]?.last_seq === batch.last_seq)
          return { kind: 'duplicate', ackedSeq: acked } as const;
        if (batch.first_seq > acked + 1) {
          throw new Refused({
            kind: 'refused',
            reason: 'gap',
            expectedSeq: acked + 1,
            detail: `the batch starts at ${batch.first_seq}, but the next sequence number the upstream needs is ${acked + 1}`,
          });
        }
        if (batch.first_seq <= acked) {
          throw new Refused({
            kind: 'refused',
            reason: 'sequence_backwards',
            expectedSeq: acked + 1,
            detail: `the batch starts at ${batch.first_seq}, at or before ${acked}, which is applied already`,
          });
        }
        messageIds = await this.applyRecords(client, siteId, records, now);
        await client.query(
          'INSERT INTO sync_batches (site_id, first_seq, last_seq, records, applied_at) VALUES ($1, $2, $3, $4, $5)',
          [siteId, batch.first_seq, batch.last_seq, batch.records.length, now],
        );
        const newest = batch.records.reduce<number | null>(
          (max, r) => (max === null || r.at > max ? r.at : max),
          null,
        );
        await client.query(
          `UPDATE sites SET acked_seq = $2, last_batch_at = $3,
             last_record_at = GREATEST(last_record_at, $4::bigint),
             records_applied = records_applied + $5
           WHERE site_id = $1`,
          [siteId, batch.last_seq, now, newest, batch.records.length],
        );
        return { kind: 'applied', ackedSeq: batch.last_seq } as const;
      });
      if (outcome.kind === 'applied' && messageIds.length > 0) this.options.onMessages?.(siteId, messageIds);
      return outcome;
    } catch (error) {
      if (error instanceof Refused) return error.outcome;
      throw error;
    }
  }

  /** Locks the site's row (serialising its batches in every process) and checks the request; returns acked_seq. */
  private async lockSite(
    client: pg.PoolClient,
    siteId: string,
    batch: Batch,
    jti: { value: string; expiresAt: number } | undefined,
    now: number,
  ): Promise<number> {
    const { rows } = await client.query<{ acked_seq: number; revoked_at: number | null }>(
      'SELECT acked_seq, revoked_at FROM sites WHERE site_id = $1 FOR UPDATE',
      [siteId],
    );
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
    if (jti && !(await rememberRequestId(client, siteId, jti.value, jti.expiresAt, now))) {
      throw new Refused({
        kind: 'refused',
        reason: 'replayed_request',
        expectedSeq,
        detail: `this signed request (batch ${batch.first_seq}..${batch.last_seq}) was received before`,
      });
    }
    return site.acked_seq;
  }

  /** Creates the monthly partitions the batch's rows need, outside the batch's transaction. */
  private async preparePartitions(records: Sorted): Promise<void> {
    const times = new Set<number>();
    for (const r of records.reading) times.add(r.ts);
    for (const e of records.audit_event) times.add(e.ts);
    if (times.size === 0) return;
    try {
      await ensurePartitions(this.pool, [...times], { now: this.now });
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
  ): Promise<string[]> {
    if (r.reading.length > 0) {
      await client.query('SAVEPOINT readings');
      try {
        await applyReadings(client, siteId, r.reading, now, true);
      } catch (error) {
        if (!(error instanceof FastPathConflict)) throw error;
        await client.query('ROLLBACK TO SAVEPOINT readings');
        await applyReadings(client, siteId, r.reading, now, false);
      }
    }
    if (r.rollup.length > 0) await applyRollupRecords(client, siteId, r.rollup);
    if (r.node.length > 0) await applyNodes(client, siteId, r.node, now);
    const messageIds = r.message.length > 0 ? await applyMessages(client, siteId, r.message, now) : [];
    if (r.message_transition.length > 0) await applyTransitions(client, siteId, r.message_transition);
    if (r.subscription.length > 0) await applySubscriptions(client, siteId, r.subscription);
    if (r.audit_event.length > 0) await applyAuditEvents(client, siteId, r.audit_event, now);
    if (r.audit_tags.length > 0) await applyAuditTags(client, siteId, r.audit_tags);
    if (r.audit_comment.length > 0) await applyAuditComments(client, siteId, r.audit_comment);
    return messageIds;
  }
}

// ---- readings, rollups, latest ----

const READING_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['ts', 'bigint'],
  ...METRIC_COLUMNS.map((c) => [c, 'float8'] as const),
];
const LATEST_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['ts', 'bigint'],
  ...METRIC_COLUMNS.flatMap((c) => [[c, 'float8'] as const, [`${c}_ts`, 'bigint'] as const]),
];
const BUCKET_COLUMNS: readonly (readonly [string, ColumnType])[] = [
  ['node_id', 'text'],
  ['bucket_start', 'bigint'],
  ...ROLLUP_COLUMNS.map((c) => [c, c.endsWith('_count') ? 'integer' : 'float8'] as const),
];

const key = (nodeId: string, ts: number) => `${nodeId} ${ts}`;

async function loadLatest(
  client: pg.PoolClient,
  siteId: string,
  nodeIds: string[],
): Promise<Map<string, LatestRow>> {
  const { rows } = await client.query<Record<string, number | string | null>>(
    `SELECT node_id, ts, ${METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`]).join(', ')}
     FROM readings_latest WHERE site_id = $1 AND node_id = ANY($2::text[])`,
    [siteId, nodeIds],
  );
  const latest = new Map<string, LatestRow>();
  for (const row of rows) {
    const entry: LatestRow = {
      ts: Number(row.ts),
      values: new Array<number | null>(SLOTS).fill(null),
      times: new Array<number>(SLOTS).fill(Number.NEGATIVE_INFINITY),
      changed: false,
    };
    METRIC_COLUMNS.forEach((c, slot) => {
      const value = row[c];
      const time = row[`${c}_ts`];
      if (typeof value === 'number' && time !== null && time !== undefined) {
        entry.values[slot] = value;
        entry.times[slot] = Number(time);
      }
    });
    latest.set(String(row.node_id), entry);
  }
  return latest;
}

async function loadExisting(
  client: pg.PoolClient,
  siteId: string,
  keys: { nodeId: string; ts: number }[],
): Promise<Map<string, StoredReading>> {
  const existing = new Map<string, StoredReading>();
  if (keys.length === 0) return existing;
  const { rows } = await client.query<Record<string, number | string | null>>(
    `SELECT r.node_id, r.ts, ${METRIC_COLUMNS.map((c) => `r.${c}`).join(', ')}
     FROM readings r JOIN unnest($2::text[], $3::bigint[]) AS k(node_id, ts)
       ON r.node_id = k.node_id AND r.ts = k.ts
     WHERE r.site_id = $1`,
    [siteId, pgArray(keys.map((k) => k.nodeId)), pgArray(keys.map((k) => k.ts))],
  );
  for (const row of rows) {
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

/**
 * Stores readings and what they add to the rollups and latest rows. `fast`: readings newer than
 * the node's latest row are taken to be new without a lookup (FastPathConflict if one was not).
 */
async function applyReadings(
  client: pg.PoolClient,
  siteId: string,
  readings: RecordsOf<'reading'>,
  now: number,
  fast: boolean,
): Promise<void> {
  const nodeIds = [...new Set(readings.map((r) => r.node_id))];
  const latest = await loadLatest(client, siteId, nodeIds);
  const lookup = readings
    .filter((r) => !fast || r.ts <= (latest.get(r.node_id)?.ts ?? Number.NEGATIVE_INFINITY))
    .map((r) => ({ nodeId: r.node_id, ts: r.ts }));
  const rows = await loadExisting(client, siteId, lookup);

  const hours = new Map<string, Bucket>();
  const days = new Map<string, Bucket>();
  const added = new Array<number | null>(SLOTS);
  for (const reading of readings) {
    let any = false;
    for (let slot = 0; slot < SLOTS; slot++) {
      const v = reading[METRIC_COLUMNS[slot]!];
      added[slot] = v;
      if (v !== null) any = true;
    }
    // As on the hub: a reading with no metric is not stored.
    if (!any) continue;
    const k = key(reading.node_id, reading.ts);
    let row = rows.get(k);
    if (!row) {
      row = { nodeId: reading.node_id, ts: reading.ts, values: added.slice(), existed: false, changed: true };
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
    accumulate(bucketFor(hours, reading.node_id, bucketStart(reading.ts, '1h')), added);
    accumulate(bucketFor(days, reading.node_id, bucketStart(reading.ts, '1d')), added);
    let node = latest.get(reading.node_id);
    if (!node) {
      node = {
        ts: Number.NEGATIVE_INFINITY,
        values: new Array<number | null>(SLOTS).fill(null),
        times: new Array<number>(SLOTS).fill(Number.NEGATIVE_INFINITY),
        changed: false,
      };
      latest.set(reading.node_id, node);
    }
    mergeLatest(node, reading.ts, added);
  }

  const fresh: (string | number | null)[][] = [];
  const filled: (string | number | null)[][] = [];
  for (const row of rows.values()) {
    if (!row.changed) continue;
    (row.existed ? filled : fresh).push([row.nodeId, row.ts, ...row.values]);
  }
  if (fresh.length > 0) {
    const params: unknown[] = [siteId, now];
    const source = unnestSource(READING_COLUMNS, fresh, params);
    const cols = READING_COLUMNS.map(([c]) => c).join(', ');
    // A plain INSERT (no ON CONFLICT: a third faster on the partitioned table). These rows were
    // looked up or are newer than anything stored, so a unique violation means the fast path
    // guessed wrong: the caller rolls back to its savepoint and redoes the readings carefully.
    try {
      await client.query(
        `INSERT INTO readings (site_id, ${cols}, received_at) SELECT $1, ${cols}, $2 FROM ${source}`,
        params,
      );
    } catch (error) {
      if (fast && (error as { code?: unknown }).code === UNIQUE_VIOLATION) throw new FastPathConflict();
      throw error;
    }
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
  await addToBuckets(client, siteId, 'readings_hourly', hours);
  await addToBuckets(client, siteId, 'readings_daily', days);
  await writeLatest(client, siteId, latest);
}

function bucketFor(buckets: Map<string, Bucket>, nodeId: string, start: number): number[] {
  const k = key(nodeId, start);
  let bucket = buckets.get(k);
  if (!bucket) {
    bucket = { nodeId, start, acc: new Array<number>(ACC_SIZE).fill(0) };
    buckets.set(k, bucket);
  }
  return bucket.acc;
}

/** As the hub's mergeLatest: a field moves only to a value at least as new as the one it has. */
function mergeLatest(latest: LatestRow, ts: number, values: readonly (number | null)[]): void {
  let changed = false;
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = values[slot];
    if (v === null || v === undefined || ts < latest.times[slot]!) continue;
    latest.values[slot] = v;
    latest.times[slot] = ts;
    changed = true;
  }
  if (changed) {
    latest.changed = true;
    if (ts > latest.ts) latest.ts = ts;
  }
}

/** Adds the batch's sums to each bucket (as the hub: `col = col + excluded.col`), except buckets the site sent whole. */
async function addToBuckets(
  client: pg.PoolClient,
  siteId: string,
  table: 'readings_hourly' | 'readings_daily',
  buckets: Map<string, Bucket>,
): Promise<void> {
  if (buckets.size === 0) return;
  const rows = [...buckets.values()].map((b) => [b.nodeId, b.start, ...b.acc]);
  const params: unknown[] = [siteId];
  const source = unnestSource(BUCKET_COLUMNS, rows, params);
  const cols = BUCKET_COLUMNS.map(([c]) => c).join(', ');
  await client.query(
    `INSERT INTO ${table} AS t (site_id, ${cols}) SELECT $1, ${cols} FROM ${source}
     ON CONFLICT (site_id, node_id, bucket_start) DO UPDATE SET
       ${ROLLUP_COLUMNS.map((c) => `${c} = t.${c} + EXCLUDED.${c}`).join(', ')}
     WHERE NOT t.from_site`,
    params,
  );
}

async function writeLatest(
  client: pg.PoolClient,
  siteId: string,
  latest: Map<string, LatestRow>,
): Promise<void> {
  const rows: (string | number | null)[][] = [];
  for (const [nodeId, row] of latest) {
    if (!row.changed) continue;
    const line: (string | number | null)[] = [nodeId, row.ts];
    for (let slot = 0; slot < SLOTS; slot++) {
      const known = row.times[slot] !== Number.NEGATIVE_INFINITY;
      line.push(known ? row.values[slot]! : null, known ? row.times[slot]! : null);
    }
    rows.push(line);
  }
  if (rows.length === 0) return;
  const params: unknown[] = [siteId];
  const source = unnestSource(LATEST_COLUMNS, rows, params);
  const cols = LATEST_COLUMNS.map(([c]) => c);
  await client.query(
    `INSERT INTO readings_latest (site_id, ${cols.join(', ')}) SELECT $1, ${cols.join(', ')} FROM ${source}
     ON CONFLICT (site_id, node_id) DO UPDATE SET
       ${cols
         .slice(1)
         .map((c) => `${c} = EXCLUDED.${c}`)
         .join(', ')}`,
    params,
  );
}

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

// ---- nodes, messages, subscriptions ----

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

/** Node rows: the newest `updated_at` wins (the later record on a tie). */
async function applyNodes(client: pg.PoolClient, siteId: string, nodes: RecordsOf<'node'>, now: number) {
  const newest = new Map<string, RecordBody<'node'>>();
  for (const n of nodes) {
    const seen = newest.get(n.node_id);
    if (!seen || n.updated_at >= seen.updated_at) newest.set(n.node_id, n);
  }
  const rows = [...newest.values()].map((n) => NODE_COLUMNS.map(([c]) => n[c]));
  const params: unknown[] = [siteId, now];
  const source = unnestSource(NODE_COLUMNS, rows, params);
  const cols = NODE_COLUMNS.map(([c]) => c);
  await client.query(
    `INSERT INTO nodes AS n (site_id, ${cols.join(', ')}, received_at) SELECT $1, ${cols.join(', ')}, $2 FROM ${source}
     ON CONFLICT (site_id, node_id) DO UPDATE SET
       ${[...cols.slice(1), 'received_at'].map((c) => `${c} = EXCLUDED.${c}`).join(', ')}
     WHERE EXCLUDED.updated_at >= n.updated_at`,
    params,
  );
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
