/**
 * Commits readings, each node's latest row and the hourly/daily rollups in ONE transaction
 * (DESIGN.md "Data flows" 1). This is the ingest hot path, so:
 *
 * - each reading is one `INSERT OR IGNORE`; only a reading whose (node_id, ts) already exists
 *   costs a SELECT and an UPDATE, which fills the fields that were NULL and nothing else;
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
 * reading without a node id, a finite timestamp or any finite metric is skipped.
 */
import { READING_METRICS, type Reading } from '../weather/reading.js';
import type { Database, Statement } from './database.js';
import { ACC_SIZE, accumulate, bucketStart, METRIC_COLUMNS, ROLLUP_COLUMNS } from './rollups.js';

const SLOTS = METRIC_COLUMNS.length;
/** Rows per multi-row statement: fewer calls into SQLite for the same work. */
const CHUNK = 64;

/** One node's latest row: value and value time per metric slot (NaN / -Infinity when unknown). */
interface LatestRow {
  ts: number;
  values: Float64Array;
  times: Float64Array;
}

interface NodeContribution {
  hours: Map<number, Float64Array>;
  days: Map<number, Float64Array>;
  /** Copy-on-write: the merged latest row, committed to the map only after the transaction. */
  latest: LatestRow;
  latestChanged: boolean;
}

function finiteOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function placeholders(columns: number, rows: number): string {
  const row = `(${new Array(columns).fill('?').join(',')})`;
  return new Array(rows).fill(row).join(',');
}

export class ReadingWriter {
  private readonly latest = new Map<string, LatestRow>();
  private readonly insertReading: Statement;
  private readonly selectReading: Statement<unknown[], (number | null)[]>;
  private readonly fillReading: Statement;
  private readonly upsertHourly: Statement;
  private readonly upsertHourlyChunk: Statement;
  private readonly upsertDaily: Statement;
  private readonly upsertDailyChunk: Statement;
  private readonly writeLatest: Statement;
  private readonly writeLatestChunk: Statement;
  private readonly commit: (groups: readonly (readonly Reading[])[]) => {
    stored: Reading[][];
    nodes: Map<string, NodeContribution>;
  };

  constructor(private readonly db: Database) {
    const cols = METRIC_COLUMNS.join(', ');
    this.insertReading = db.prepare(
      `INSERT OR IGNORE INTO readings (node_id, ts, ${cols}) VALUES (${placeholders(2 + SLOTS, 1).slice(1, -1)})`,
    );
    this.selectReading = db.prepare<unknown[], (number | null)[]>(
      `SELECT ${cols} FROM readings WHERE node_id = ? AND ts = ?`,
    ).raw(true) as unknown as Statement<unknown[], (number | null)[]>;
    this.fillReading = db.prepare(
      `UPDATE readings SET ${METRIC_COLUMNS.map((c) => `${c} = coalesce(${c}, ?)`).join(', ')} WHERE node_id = ? AND ts = ?`,
    );
    const upsert = (table: string, rows: number) =>
      db.prepare(
        `INSERT INTO ${table} (node_id, bucket_start, ${ROLLUP_COLUMNS.join(', ')}) VALUES ${placeholders(2 + ROLLUP_COLUMNS.length, rows)}
         ON CONFLICT (node_id, bucket_start) DO UPDATE SET ${ROLLUP_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
      );
    this.upsertHourly = upsert('readings_hourly', 1);
    this.upsertHourlyChunk = upsert('readings_hourly', CHUNK);
    this.upsertDaily = upsert('readings_daily', 1);
    this.upsertDailyChunk = upsert('readings_daily', CHUNK);
    const latestColumns = ['node_id', 'ts', ...METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`])];
    const latestSql = (rows: number) =>
      `INSERT OR REPLACE INTO readings_latest (${latestColumns.join(', ')}) VALUES ${placeholders(latestColumns.length, rows)}`;
    this.writeLatest = db.prepare(latestSql(1));
    this.writeLatestChunk = db.prepare(latestSql(CHUNK));
    this.loadLatest();
    this.commit = db.transaction((groups: readonly (readonly Reading[])[]) => this.apply(groups));
  }

  /**
   * Stores a batch in one transaction and returns what was new: each reading that was not stored
   * before, and for a reading whose (node, timestamp) was, a reading carrying only the fields it
   * filled. Readings that added nothing are left out. Throws (and changes nothing) when the
   * transaction fails.
   */
  write(readings: readonly Reading[]): Reading[] {
    if (readings.length === 0) return [];
    return this.writeGroups([readings])[0]!;
  }

  /** Like `write`, for several batches in one transaction; returns the new readings of each. */
  writeGroups(groups: readonly (readonly Reading[])[]): Reading[][] {
    const { stored, nodes } = this.commit(groups);
    for (const [nodeId, contribution] of nodes) {
      if (contribution.latestChanged) this.latest.set(nodeId, contribution.latest);
    }
    return stored;
  }

  private loadLatest(): void {
    const select = this.db
      .prepare(`SELECT node_id, ts, ${METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`]).join(', ')} FROM readings_latest`)
      .raw(true);
    for (const row of select.iterate() as IterableIterator<unknown[]>) {
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

  private apply(groups: readonly (readonly Reading[])[]): {
    stored: Reading[][];
    nodes: Map<string, NodeContribution>;
  } {
    const nodes = new Map<string, NodeContribution>();
    const stored = groups.map((readings) => this.applyGroup(readings, nodes));
    this.writeBuckets(nodes, 'hours', this.upsertHourly, this.upsertHourlyChunk);
    this.writeBuckets(nodes, 'days', this.upsertDaily, this.upsertDailyChunk);
    this.writeLatestRows(nodes);
    return { stored, nodes };
  }

  private applyGroup(readings: readonly Reading[], nodes: Map<string, NodeContribution>): Reading[] {
    const stored: Reading[] = [];
    const values: (number | null)[] = new Array<number | null>(SLOTS).fill(null);
    const insertArgs: unknown[] = new Array<unknown>(2 + SLOTS);

    for (const reading of readings) {
      const nodeId = reading.nodeId;
      if (typeof nodeId !== 'string' || nodeId.length === 0) continue;
      const raw = reading.timestamp;
      if (typeof raw !== 'number' || !Number.isFinite(raw)) continue;
      const ts = Math.floor(raw);

      let present = 0;
      let dropped = false;
      for (let slot = 0; slot < SLOTS; slot++) {
        const given = reading[READING_METRICS[slot]!];
        const v = finiteOrNull(given);
        values[slot] = v;
        if (v !== null) present++;
        else if (given !== undefined) dropped = true;
      }
      if (present === 0) continue;

      insertArgs[0] = nodeId;
      insertArgs[1] = ts;
      for (let slot = 0; slot < SLOTS; slot++) insertArgs[2 + slot] = values[slot];
      let added: Reading;
      if (this.insertReading.run(insertArgs).changes === 1) {
        added = !dropped && ts === raw ? reading : toReading(nodeId, ts, values);
      } else {
        // The row exists: fill only the fields it lacks; the rest of this reading is a duplicate.
        const existing = this.selectReading.get(nodeId, ts);
        if (!existing) continue;
        let filled = 0;
        for (let slot = 0; slot < SLOTS; slot++) {
          if (existing[slot] !== null) values[slot] = null;
          else if (values[slot] !== null) filled++;
        }
        if (filled === 0) continue;
        this.fillReading.run(...values, nodeId, ts);
        added = toReading(nodeId, ts, values);
      }
      stored.push(added);

      let contribution = nodes.get(nodeId);
      if (!contribution) {
        const current = this.latest.get(nodeId);
        contribution = {
          hours: new Map(),
          days: new Map(),
          latest: current ? copyLatest(current) : emptyLatest(),
          latestChanged: false,
        };
        nodes.set(nodeId, contribution);
      }
      accumulate(bucketAcc(contribution.hours, bucketStart(ts, '1h')), values);
      accumulate(bucketAcc(contribution.days, bucketStart(ts, '1d')), values);
      if (mergeLatest(contribution.latest, ts, values)) contribution.latestChanged = true;
    }
    return stored;
  }

  private writeBuckets(
    nodes: Map<string, NodeContribution>,
    which: 'hours' | 'days',
    one: Statement,
    chunk: Statement,
  ): void {
    const width = 2 + ACC_SIZE;
    const args: unknown[] = new Array<unknown>(width * CHUNK);
    let n = 0;
    for (const [nodeId, contribution] of nodes) {
      for (const [start, acc] of contribution[which]) {
        const base = n * width;
        args[base] = nodeId;
        args[base + 1] = start;
        for (let i = 0; i < ACC_SIZE; i++) args[base + 2 + i] = acc[i];
        if (++n === CHUNK) {
          chunk.run(args);
          n = 0;
        }
      }
    }
    for (let row = 0; row < n; row++) one.run(args.slice(row * width, (row + 1) * width));
  }

  private writeLatestRows(nodes: Map<string, NodeContribution>): void {
    const width = 2 + SLOTS * 2;
    const args: unknown[] = new Array<unknown>(width * CHUNK);
    let n = 0;
    for (const [nodeId, contribution] of nodes) {
      if (!contribution.latestChanged) continue;
      const { ts, values, times } = contribution.latest;
      const base = n * width;
      args[base] = nodeId;
      args[base + 1] = ts;
      for (let slot = 0; slot < SLOTS; slot++) {
        const known = times[slot] !== Number.NEGATIVE_INFINITY;
        args[base + 2 + slot * 2] = known ? values[slot] : null;
        args[base + 3 + slot * 2] = known ? times[slot] : null;
      }
      if (++n === CHUNK) {
        this.writeLatestChunk.run(args);
        n = 0;
      }
    }
    for (let row = 0; row < n; row++) this.writeLatest.run(args.slice(row * width, (row + 1) * width));
  }
}

function emptyLatest(): LatestRow {
  return {
    ts: Number.NEGATIVE_INFINITY,
    values: new Float64Array(SLOTS).fill(Number.NaN),
    times: new Float64Array(SLOTS).fill(Number.NEGATIVE_INFINITY),
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

function bucketAcc(buckets: Map<number, Float64Array>, start: number): Float64Array {
  let acc = buckets.get(start);
  if (!acc) {
    acc = new Float64Array(ACC_SIZE);
    buckets.set(start, acc);
  }
  return acc;
}

function toReading(nodeId: string, timestamp: number, values: readonly (number | null)[]): Reading {
  const reading: Reading = { nodeId, timestamp };
  for (let slot = 0; slot < SLOTS; slot++) {
    const v = values[slot];
    if (v !== null && v !== undefined) reading[READING_METRICS[slot]!] = v;
  }
  return reading;
}
