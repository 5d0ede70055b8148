/**
 * Commits readings, each node's latest row and the hourly/daily rollups in ONE transaction
 * (docs/architecture.md "Data flows" 1). This is the ingest hot path, so:
 *
 * - a reading newer than everything stored for its node cannot exist yet: those (live data,
 *   nearly all) go in with multi-row INSERTs; any other reading is one `INSERT OR IGNORE`, and
 *   only one whose (node_id, ts) exists already costs a SELECT and an UPDATE, which fills the
 *   fields that were NULL and nothing else;
 * - only what a reading actually added (all of a new row, or the newly filled fields of an
 *   existing one) counts in the rollups and the latest row, so a replayed duplicate (the same
 *   packet through two MQTT gateways, a resent PUBLISH) never counts twice;
 * - rollup contributions are summed in JS per (node, hour) and (node, day), then each bucket is
 *   upserted once with an additive merge;
 * - the latest row of every node is kept in memory (loaded at construction), merged field by
 *   field in JS — a field moves only to a value at least as new as the one it has — and each
 *   changed node's row is written once. The in-memory map changes only after the commit.
 *
 * Input is not trusted: non-finite numbers are dropped, timestamps are floored to whole ms, and a
 * reading without a node id, a timestamp a Date can hold or any finite metric is skipped.
 */
import { READING_METRICS, type Reading } from '../domain/reading.js';
import type { Database, Statement } from './database.js';
import { MAX_ROWS_PER_STATEMENT, MultiRowStatement, placeholders } from './multi-row-statement.js';
import { readingsObservers, type StoredReadingRow } from './reading-observers.js';
import {
  addToRollups,
  METRIC_COLUMNS,
  type NodeRollups,
  ROLLUP_COLUMNS,
  ROLLUP_TABLE,
  RollupBuckets,
} from './rollups.js';
import { moveNodeSeries } from './series-move.js';

const SLOTS = METRIC_COLUMNS.length;
// The observed rows are written out slot by slot (applyGroup).
if (SLOTS !== 8) throw new Error(`reading-writer.ts writes observed rows of 8 metrics, not ${SLOTS}`);
/** Rows per multi-row statement: fewer calls into SQLite for the same work. */
const CHUNK = MAX_ROWS_PER_STATEMENT;
const READING_WIDTH = 2 + SLOTS;
/** The largest |ms| a JavaScript Date can hold: a reading's time must be one. */
const MAX_DATE_MS = 8.64e15;

/** One node's latest row: value and value time per metric slot (NaN / -Infinity when unknown). */
interface LatestRow {
  /** The newest reading stored for the node: nothing at or after it can be a duplicate. */
  ts: number;
  values: number[];
  times: number[];
}

/** One node's share of a transaction: its rollup buckets (rollups.ts) and its latest row. */
interface NodeContribution extends NodeRollups {
  /** Copy-on-write: the merged latest row, committed to the map only after the transaction. */
  latest: LatestRow;
  latestChanged: boolean;
}

interface Applied {
  stored: Reading[][];
  nodes: Map<string, NodeContribution>;
}

/** A multi-row insert met a row that exists after all: redo the transaction the careful way. */
class FastPathConflict extends Error {}

const DROPPED = 1 << SLOTS;

/** Puts a metric's value (or null) into its slot; returns the slot's bit, DROPPED for a non-finite value. */
function put(values: (number | null)[], slot: number, value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) {
    values[slot] = value;
    return 1 << slot;
  }
  values[slot] = null;
  return value === undefined ? 0 : DROPPED;
}

/**
 * Reads the metrics into their slots (READING_METRICS order, as METRIC_COLUMNS; named reads, as
 * this runs for every reading); returns the bit mask of the slots filled, plus DROPPED.
 */
function readMetrics(r: Reading, values: (number | null)[]): number {
  return (
    put(values, 0, r.temperatureC) |
    put(values, 1, r.humidityPercent) |
    put(values, 2, r.pressurePa) |
    put(values, 3, r.windSpeedMs) |
    put(values, 4, r.windDirection) |
    put(values, 5, r.pm25Ugm3) |
    put(values, 6, r.pm10Ugm3) |
    put(values, 7, r.gasResistanceKohm)
  );
}

export class ReadingWriter {
  private readonly latest = new Map<string, LatestRow>();
  private readonly insertReadings: MultiRowStatement;
  private readonly insertReading: Statement;
  private readonly selectReading: Statement<unknown[], (number | null)[]>;
  private readonly fillReading: Statement;
  private readonly upsertHourly: MultiRowStatement;
  private readonly upsertDaily: MultiRowStatement;
  private readonly writeLatest: MultiRowStatement;
  private readonly commit: (groups: readonly (readonly Reading[])[], fast: boolean) => Applied;
  /** Rows waiting for a multi-row insert: READING_WIDTH arguments each. */
  private readonly pendingArgs: unknown[] = new Array<unknown>(READING_WIDTH * CHUNK);
  private pendingRows = 0;
  private readonly values: (number | null)[] = new Array<number | null>(SLOTS).fill(null);
  /** What this transaction added, as rows, while someone observes (reading-observers.ts). */
  private observed: StoredReadingRow[] | undefined;

  constructor(private readonly db: Database) {
    const cols = METRIC_COLUMNS.join(', ');
    this.insertReadings = new MultiRowStatement(
      db,
      READING_WIDTH,
      (rows) =>
        `INSERT OR IGNORE INTO readings (node_id, ts, ${cols}) VALUES ${placeholders(READING_WIDTH, rows)}`,
    );
    this.insertReading = db.prepare(
      `INSERT OR IGNORE INTO readings (node_id, ts, ${cols}) VALUES ${placeholders(READING_WIDTH, 1)}`,
    );
    this.selectReading = db
      .prepare(`SELECT ${cols} FROM readings WHERE node_id = ? AND ts = ?`)
      .raw(true) as Statement<unknown[], (number | null)[]>;
    this.fillReading = db.prepare(
      `UPDATE readings SET ${METRIC_COLUMNS.map((c) => `${c} = coalesce(${c}, ?)`).join(', ')} WHERE node_id = ? AND ts = ?`,
    );
    this.upsertHourly = rollupUpsert(db, 'readings_hourly', ROLLUP_COLUMNS);
    this.upsertDaily = rollupUpsert(db, 'readings_daily', ROLLUP_COLUMNS);
    const latestColumns = ['node_id', 'ts', ...METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`])];
    this.writeLatest = new MultiRowStatement(
      db,
      latestColumns.length,
      (rows) =>
        `INSERT OR REPLACE INTO readings_latest (${latestColumns.join(', ')}) VALUES ${placeholders(latestColumns.length, rows)}`,
    );
    this.loadLatest();
    this.commit = db.transaction((groups: readonly (readonly Reading[])[], fast: boolean) =>
      this.apply(groups, fast),
    );
  }

  /**
   * Stores a batch in one transaction and returns what was new: each reading that was not stored
   * before, and for a reading whose (node, timestamp) was, a reading carrying only the fields it
   * filled. Readings that added nothing are left out; the rest keep their order. Throws (and
   * changes nothing) when the transaction fails.
   */
  write(readings: readonly Reading[]): Reading[] {
    if (readings.length === 0) return [];
    return this.writeGroups([readings])[0]!;
  }

  /** Like `write`, for several batches in one transaction; returns the new readings of each. */
  writeGroups(groups: readonly (readonly Reading[])[]): Reading[][] {
    let applied: Applied;
    try {
      applied = this.commit(groups, true);
    } catch (error) {
      this.pendingRows = 0;
      // Another writer added rows behind our back (the newest-ts shortcut no longer holds).
      if (!(error instanceof FastPathConflict)) throw error;
      applied = this.commit(groups, false);
    }
    for (const [nodeId, contribution] of applied.nodes) {
      if (contribution.latestChanged) this.latest.set(nodeId, contribution.latest);
    }
    return applied.stored;
  }

  /**
   * Moves everything stored under `oldId` to `newId` (a node renumbered by firmware 2.8,
   * src/nodes/renumber.ts) in one transaction: raw readings (at a time both ids have, the new
   * node's values stay and the old one's fill its empty fields), hourly and daily rollups (added
   * bucket by bucket, so a mean over both stays right) and the latest row (field by field, the
   * newer value wins). The sync outbox gets no entry: what was synced stays upstream under the id
   * it was synced with, and nothing is sent twice. Returns the raw rows moved.
   */
  renumber(oldId: string, newId: string): number {
    if (oldId === newId) return 0;
    const moved = this.db.transaction(() =>
      moveNodeSeries(
        this.db,
        {
          raw: 'readings',
          hourly: ROLLUP_TABLE['1h'],
          daily: ROLLUP_TABLE['1d'],
          latest: 'readings_latest',
          metrics: METRIC_COLUMNS,
          rollups: ROLLUP_COLUMNS,
        },
        oldId,
        newId,
      ),
    )();
    this.latest.delete(oldId);
    this.latest.delete(newId);
    this.loadLatest(newId);
    return moved;
  }

  /** Reads the latest rows (of one node, or all) into memory. */
  private loadLatest(nodeId?: string): void {
    const select = this.db
      .prepare(
        `SELECT node_id, ts, ${METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`]).join(', ')} FROM readings_latest${nodeId === undefined ? '' : ' WHERE node_id = ?'}`,
      )
      .raw(true);
    const rows = (nodeId === undefined ? select.iterate() : select.iterate(nodeId)) as IterableIterator<
      unknown[]
    >;
    for (const row of rows) {
      const latest = emptyLatest();
      latest.ts = row[1] as number;
      for (let slot = 0; slot < SLOTS; slot++) {
        const value = row[2 + slot * 2] as number | null;
        const time = row[3 + slot * 2] as number | null;
        if (value !== null && time !== null) {
          latest.values[slot] = value;
          latest.times[slot] = time;
        }
      }
      this.latest.set(row[0] as string, latest);
    }
  }

  private apply(groups: readonly (readonly Reading[])[], fast: boolean): Applied {
    const nodes = new Map<string, NodeContribution>();
    this.pendingRows = 0;
    const observers = readingsObservers(this.db);
    this.observed = observers ? [] : undefined;
    const stored = groups.map((readings) => this.applyGroup(readings, nodes, fast));
    this.flushPending();
    writeRollupBuckets(nodes, 'hours', this.upsertHourly);
    writeRollupBuckets(nodes, 'days', this.upsertDaily);
    this.writeLatestRows(nodes);
    const rows = this.observed;
    this.observed = undefined;
    // Inside the transaction: an observer's record commits or rolls back with the readings.
    if (observers && rows && rows.length > 0) for (const observe of observers) observe(rows);
    return { stored, nodes };
  }

  private applyGroup(
    readings: readonly Reading[],
    nodes: Map<string, NodeContribution>,
    fast: boolean,
  ): Reading[] {
    const stored: Reading[] = [];
    const values = this.values;
    for (const reading of readings) {
      const nodeId = reading.nodeId;
      if (typeof nodeId !== 'string' || nodeId.length === 0) continue;
      const raw = reading.timestamp;
      if (typeof raw !== 'number' || !(Math.abs(raw) <= MAX_DATE_MS)) continue;
      const ts = Math.floor(raw);
      const mask = readMetrics(reading, values);
      if ((mask & ~DROPPED) === 0) continue;

      let contribution = nodes.get(nodeId);
      if (!contribution) {
        const current = this.latest.get(nodeId);
        contribution = {
          hours: new RollupBuckets(),
          days: new RollupBuckets(),
          latest: current ? copyLatest(current) : emptyLatest(),
          latestChanged: false,
        };
        nodes.set(nodeId, contribution);
      }

      let added: Reading;
      if (fast && ts > contribution.latest.ts) {
        // Newer than anything stored or pending for this node: certainly a new row.
        this.queueInsert(nodeId, ts, values);
        added = (mask & DROPPED) !== 0 || ts !== raw ? toReading(nodeId, ts, values) : reading;
      } else {
        this.flushPending();
        if (this.insertReading.run(nodeId, ts, ...values).changes === 1) {
          added = (mask & DROPPED) !== 0 || ts !== raw ? toReading(nodeId, ts, values) : reading;
        } else {
          // The row exists: fill only the fields it lacks; the rest of this reading is a duplicate.
          const existing = this.selectReading.get(nodeId, ts);
          if (!existing) continue;
          if (keepUnfilled(existing, values) === 0) continue;
          this.fillReading.run(...values, nodeId, ts);
          added = toReading(nodeId, ts, values);
        }
      }
      stored.push(added);
      if (this.observed) {
        // Written out, not spread (SLOTS is 8, checked below): this runs for every reading while
        // sync observes.
        this.observed.push([
          nodeId,
          ts,
          values[0] as number | null,
          values[1] as number | null,
          values[2] as number | null,
          values[3] as number | null,
          values[4] as number | null,
          values[5] as number | null,
          values[6] as number | null,
          values[7] as number | null,
        ]);
      }

      addToRollups(contribution, ts, values);
      if (mergeLatest(contribution.latest, ts, values)) contribution.latestChanged = true;
    }
    return stored;
  }

  private queueInsert(nodeId: string, ts: number, values: readonly (number | null)[]): void {
    const args = this.pendingArgs;
    const base = this.pendingRows * READING_WIDTH;
    args[base] = nodeId;
    args[base + 1] = ts;
    for (let slot = 0; slot < SLOTS; slot++) args[base + 2 + slot] = values[slot];
    if (++this.pendingRows === CHUNK) this.flushPending();
  }

  private flushPending(): void {
    const n = this.pendingRows;
    this.pendingRows = 0;
    if (n > 0 && this.insertReadings.run(this.pendingArgs, n) !== n) throw new FastPathConflict();
  }

  private writeLatestRows(nodes: Map<string, NodeContribution>): void {
    const width = this.writeLatest.width;
    const args: unknown[] = [];
    let n = 0;
    for (const [nodeId, contribution] of nodes) {
      if (!contribution.latestChanged) continue;
      const { ts, values, times } = contribution.latest;
      const base = n++ * width;
      args[base] = nodeId;
      args[base + 1] = ts;
      for (let slot = 0; slot < SLOTS; slot++) {
        const known = times[slot] !== Number.NEGATIVE_INFINITY;
        args[base + 2 + slot * 2] = known ? values[slot] : null;
        args[base + 3 + slot * 2] = known ? times[slot] : null;
      }
    }
    this.writeLatest.run(args, n);
  }
}

/**
 * Leaves in `values` only the fields a stored row lacks (the rest of a replayed reading is a
 * duplicate and counts nowhere); returns how many it fills.
 */
export function keepUnfilled(existing: readonly (number | null)[], values: (number | null)[]): number {
  let filled = 0;
  for (let slot = 0; slot < values.length; slot++) {
    if (existing[slot] !== null) values[slot] = null;
    else if (values[slot] !== null) filled++;
  }
  return filled;
}

/** The additive upsert of a rollup table's buckets (node_id, bucket_start, then `columns`: sums and counts). */
export function rollupUpsert(db: Database, table: string, columns: readonly string[]): MultiRowStatement {
  return new MultiRowStatement(
    db,
    2 + columns.length,
    (rows) =>
      `INSERT INTO ${table} (node_id, bucket_start, ${columns.join(', ')}) VALUES ${placeholders(2 + columns.length, rows)}
           ON CONFLICT (node_id, bucket_start) DO UPDATE SET ${columns.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
  );
}

/** Upserts every node's hourly or daily buckets of a batch, once each (`upsert`: rollupUpsert). */
export function writeRollupBuckets(
  nodes: ReadonlyMap<string, NodeRollups>,
  which: 'hours' | 'days',
  upsert: MultiRowStatement,
): void {
  const width = upsert.width;
  const size = width - 2;
  const args: unknown[] = [];
  let n = 0;
  for (const [nodeId, contribution] of nodes) {
    const { starts, accs } = contribution[which];
    for (let b = 0; b < starts.length; b++) {
      const acc = accs[b]!;
      const base = n++ * width;
      args[base] = nodeId;
      args[base + 1] = starts[b];
      for (let i = 0; i < size; i++) args[base + 2 + i] = acc[i];
    }
  }
  upsert.run(args, n);
}

function emptyLatest(): LatestRow {
  return {
    ts: Number.NEGATIVE_INFINITY,
    values: new Array<number>(SLOTS).fill(Number.NaN),
    times: new Array<number>(SLOTS).fill(Number.NEGATIVE_INFINITY),
  };
}

function copyLatest(row: LatestRow): LatestRow {
  return { ts: row.ts, values: row.values.slice(), times: row.times.slice() };
}

/** Merges one reading's added values; a field moves only to a value at least as new as its own. */
function mergeLatest(latest: LatestRow, ts: number, values: readonly (number | null)[]): boolean {
  let changed = false;
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = values[slot];
    if (v === null || v === undefined || ts < latest.times[slot]!) continue;
    latest.values[slot] = v;
    latest.times[slot] = ts;
    changed = true;
  }
  if (changed && ts > latest.ts) latest.ts = ts;
  return changed;
}

function toReading(nodeId: string, timestamp: number, values: readonly (number | null)[]): Reading {
  const reading: Reading = { nodeId, timestamp };
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = values[slot];
    if (v !== null && v !== undefined) reading[READING_METRICS[slot]!] = v;
  }
  return reading;
}
