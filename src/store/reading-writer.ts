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
 * - each node's open hourly and daily buckets (those of its newest reading) and its latest row are
 *   kept in memory (open-buckets.ts): a live reading's commit writes its raw row only. A bucket's
 *   row is written whole when a newer bucket opens, when it goes stale (`closeStale`) and at a
 *   clean stop (`close`); the latest row when the day closes, at a sweep and at a stop; a reading into an older, closed bucket is added to
 *   its row at once (an additive upsert) and writes the latest row. `readings_open` names the
 *   buckets held in memory: after a crash `recover` rebuilds them from the raw rows at start;
 * - the latest row is merged field by field in JS — a field moves only to a value at least as new
 *   as the one it has. The in-memory state changes only after the commit (copy-on-write).
 *
 * Input is not trusted: non-finite numbers are dropped, timestamps are floored to whole ms, and a
 * reading without a node id, a timestamp a Date can hold or any finite metric is skipped.
 */
import { READING_METRICS, type Reading } from '../domain/reading.js';
import type { Database, Statement } from './database.js';
import { MAX_ROWS_PER_STATEMENT, MultiRowStatement, placeholders } from './multi-row-statement.js';
import {
  EMPTY_BUCKET_ACC,
  type LatestRow,
  type OpenBucket,
  OpenBuckets,
  type OpenNode,
  registerOpenBuckets,
} from './open-buckets.js';
import { decodedMetricsSql, encodedRowsSql, NODE_KEY_OF } from './reading-codec.js';
import { readingsObservers, type StoredReadingRow } from './reading-observers.js';
import {
  accumulate,
  addToRollups,
  BUCKET_MS,
  bucketStart,
  METRIC_COLUMNS,
  type NodeRollups,
  ROLLUP_COLUMNS,
  ROLLUP_TABLE,
  RollupBuckets,
  type RollupInterval,
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

/** How long after its end a bucket still waits for late readings before `closeStale` writes it. */
export const STALE_BUCKET_GRACE_MS = 5 * 60_000;

/** A bucket written whole (it closed): interval, node, start, accumulator. */
interface ClosedBucket {
  interval: RollupInterval;
  start: number;
  acc: readonly number[];
}

/**
 * One node's share of a transaction: a copy of its in-memory state (committed to the map only
 * after the transaction), the buckets it closed, and what it added to older, closed buckets
 * (rollups.ts: added to their rows at once).
 */
interface NodeContribution extends NodeRollups {
  node: OpenNode;
  latestChanged: boolean;
  closes: ClosedBucket[];
  /** The buckets opened (`readings_open` rows to write): the hour, the day. */
  opened: { '1h': boolean; '1d': boolean };
  /** Something reached a closed bucket: the latest row is written now, not when a bucket closes. */
  touchedClosed: boolean;
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
  /** Each node's latest row and open buckets, which readers see too (open-buckets.ts). */
  private readonly open = new OpenBuckets();
  private readonly insertReadings: MultiRowStatement;
  private readonly insertReading: Statement;
  private readonly selectReading: Statement<unknown[], (number | null)[]>;
  private readonly fillReading: Statement;
  private readonly upsertHourly: MultiRowStatement;
  private readonly upsertDaily: MultiRowStatement;
  private readonly writeLatest: MultiRowStatement;
  private readonly replaceBucket: Record<RollupInterval, MultiRowStatement>;
  private readonly selectBucket: Record<RollupInterval, Statement<unknown[], number[]>>;
  private readonly markOpen: MultiRowStatement;
  /** Each node id's key in reading_rows (reading_nodes: keys are never reused or deleted). */
  private readonly keys = new Map<string, number>();
  /** Keys made by the transaction under way: kept only once it commits. */
  private readonly newKeys = new Map<string, number>();
  private readonly addKey: Statement;
  private readonly selectKey: Statement<[string], number>;
  private readonly unmarkOpen: Statement;
  private readonly commit: (groups: readonly (readonly Reading[])[], fast: boolean) => Applied;
  /** Rows waiting for a multi-row insert: READING_WIDTH arguments each. */
  private readonly pendingArgs: unknown[] = new Array<unknown>(READING_WIDTH * CHUNK);
  private pendingRows = 0;
  private readonly values: (number | null)[] = new Array<number | null>(SLOTS).fill(null);
  /** What this transaction added, as rows, while someone observes (reading-observers.ts). */
  private observed: StoredReadingRow[] | undefined;

  constructor(private readonly db: Database) {
    const cols = METRIC_COLUMNS.join(', ');
    // Raw rows are stored compact (reading-codec.ts): SQLite encodes and decodes the metrics.
    this.insertReadings = new MultiRowStatement(
      db,
      READING_WIDTH,
      (rows) => `INSERT OR IGNORE INTO reading_rows (node_key, ts, ${cols}) ${encodedRowsSql(rows)}`,
    );
    this.insertReading = db.prepare(
      `INSERT OR IGNORE INTO reading_rows (node_key, ts, ${cols}) ${encodedRowsSql(1)}`,
    );
    this.selectReading = db
      .prepare(`SELECT ${decodedMetricsSql()} FROM reading_rows WHERE node_key = ? AND ts = ?`)
      .raw(true) as Statement<unknown[], (number | null)[]>;
    this.fillReading = db.prepare(
      `UPDATE reading_rows SET ${METRIC_COLUMNS.map((c) => `${c} = coalesce(reading_rows.${c}, v.${c})`).join(', ')}
       FROM (${encodedRowsSql(1)}) AS v WHERE reading_rows.node_key = v.node_key AND reading_rows.ts = v.ts`,
    );
    this.addKey = db.prepare('INSERT OR IGNORE INTO reading_nodes (node_id) VALUES (?)');
    this.selectKey = db.prepare(`SELECT ${NODE_KEY_OF}`).pluck(true) as Statement<[string], number>;
    for (const [nodeId, key] of db.prepare('SELECT node_id, node_key FROM reading_nodes').raw(true).all() as [
      string,
      number,
    ][])
      this.keys.set(nodeId, key);
    this.upsertHourly = rollupUpsert(db, 'readings_hourly', ROLLUP_COLUMNS);
    this.upsertDaily = rollupUpsert(db, 'readings_daily', ROLLUP_COLUMNS);
    const latestColumns = ['node_id', 'ts', ...METRIC_COLUMNS.flatMap((c) => [c, `${c}_ts`])];
    this.writeLatest = new MultiRowStatement(
      db,
      latestColumns.length,
      (rows) =>
        `INSERT OR REPLACE INTO readings_latest (${latestColumns.join(', ')}) VALUES ${placeholders(latestColumns.length, rows)}`,
    );
    const bucketColumns = ['node_id', 'bucket_start', ...ROLLUP_COLUMNS];
    const replace = (interval: RollupInterval) =>
      new MultiRowStatement(
        db,
        bucketColumns.length,
        (rows) =>
          `INSERT OR REPLACE INTO ${ROLLUP_TABLE[interval]} (${bucketColumns.join(', ')}) VALUES ${placeholders(bucketColumns.length, rows)}`,
      );
    this.replaceBucket = { '1h': replace('1h'), '1d': replace('1d') };
    const select = (interval: RollupInterval) =>
      db
        .prepare(
          `SELECT ${ROLLUP_COLUMNS.join(', ')} FROM ${ROLLUP_TABLE[interval]} WHERE node_id = ? AND bucket_start = ?`,
        )
        .raw(true) as Statement<unknown[], number[]>;
    this.selectBucket = { '1h': select('1h'), '1d': select('1d') };
    this.markOpen = new MultiRowStatement(
      db,
      3,
      (rows) =>
        `INSERT OR REPLACE INTO readings_open (node_id, interval, bucket_start) VALUES ${placeholders(3, rows)}`,
    );
    this.unmarkOpen = db.prepare('DELETE FROM readings_open WHERE node_id = ? AND interval = ?');
    this.recover();
    this.loadLatest();
    registerOpenBuckets(db, this.open);
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
    const applied = this.keepingNewKeys(() => {
      try {
        return this.commit(groups, true);
      } catch (error) {
        this.pendingRows = 0;
        this.newKeys.clear();
        // Another writer added rows behind our back (the newest-ts shortcut no longer holds).
        if (!(error instanceof FastPathConflict)) throw error;
        return this.commit(groups, false);
      }
    });
    for (const [nodeId, contribution] of applied.nodes) this.open.nodes.set(nodeId, contribution.node);
    return applied.stored;
  }

  /**
   * Writes every bucket held in memory and every latest row that changed, and forgets the buckets:
   * the clean stop (after it, the tables hold everything and nothing needs rebuilding at start).
   */
  close(): void {
    this.closeWhere(() => true);
  }

  /**
   * Writes and forgets the buckets that ended more than STALE_BUCKET_GRACE_MS before `now`: a node
   * that went quiet leaves nothing in memory for long, and nothing for a crash to rebuild from raw
   * rows that retention may since have deleted.
   */
  closeStale(now: number): void {
    this.closeWhere(
      (_nodeId, interval, bucket) => bucket.start + BUCKET_MS[interval] + STALE_BUCKET_GRACE_MS <= now,
    );
  }

  /** Writes and forgets the buckets `which` picks (with their nodes' latest rows), in one transaction. */
  private closeWhere(which: (nodeId: string, interval: RollupInterval, bucket: OpenBucket) => boolean): void {
    const changed = new Map<string, OpenNode>();
    const closes: { nodeId: string; bucket: ClosedBucket }[] = [];
    for (const [nodeId, node] of this.open.nodes) {
      const hour = node.hour && which(nodeId, '1h', node.hour);
      const day = node.day && which(nodeId, '1d', node.day);
      if (!hour && !day) continue;
      if (hour) closes.push({ nodeId, bucket: { interval: '1h', ...node.hour! } });
      if (day) closes.push({ nodeId, bucket: { interval: '1d', ...node.day! } });
      changed.set(nodeId, {
        latest: node.latest,
        latestDirty: false,
        hour: hour ? undefined : node.hour,
        day: day ? undefined : node.day,
      });
    }
    if (changed.size === 0) return;
    this.db.transaction(() => {
      this.writeClosedBuckets(closes);
      for (const { nodeId, bucket } of closes) this.unmarkOpen.run(nodeId, bucket.interval);
      this.writeLatestRows([...changed].map(([nodeId, node]) => [nodeId, node.latest]));
    })();
    for (const [nodeId, node] of changed) this.open.nodes.set(nodeId, node);
  }

  /**
   * Rebuilds what a writer that stopped without `close` (a crash, a power cut) held in memory: each
   * bucket `readings_open` names is summed again from its raw rows and written whole, and each of
   * those nodes' latest row is merged again from its stored row and the raw rows of its open
   * buckets (everything older reached the latest row's table when it was written).
   */
  private recover(): void {
    const marks = this.db
      .prepare('SELECT node_id, interval, bucket_start FROM readings_open ORDER BY node_id')
      .raw(true)
      .all() as [string, RollupInterval, number][];
    if (marks.length === 0) return;
    const rawIn = this.db
      .prepare(
        `SELECT ts, ${decodedMetricsSql()} FROM reading_rows WHERE node_key = ${NODE_KEY_OF} AND ts >= ? AND ts < ? ORDER BY ts`,
      )
      .raw(true) as Statement<unknown[], [number, ...(number | null)[]]>;
    this.db.transaction(() => {
      const since = new Map<string, number>();
      for (const [nodeId, interval, start] of marks) {
        const acc = EMPTY_BUCKET_ACC.slice();
        let rows = 0;
        for (const row of rawIn.iterate(nodeId, start, start + BUCKET_MS[interval])) {
          accumulate(acc, row.slice(1) as (number | null)[]);
          rows++;
        }
        // No raw row left to sum (retention took them while the hub was down): the stored row,
        // as last written, is the best there is, and stays.
        if (rows > 0) this.writeWholeBuckets(interval, [{ nodeId, bucket: { interval, start, acc } }]);
        since.set(nodeId, Math.min(since.get(nodeId) ?? start, start));
      }
      this.loadLatest();
      const latest: [string, LatestRow][] = [];
      for (const [nodeId, from] of since) {
        const row = this.open.nodes.get(nodeId)?.latest ?? emptyLatest();
        for (const raw of rawIn.iterate(nodeId, from, Number.MAX_SAFE_INTEGER)) {
          mergeLatest(row, raw[0], raw.slice(1) as (number | null)[]);
        }
        latest.push([nodeId, row]);
      }
      this.writeLatestRows(latest);
      this.db.prepare('DELETE FROM readings_open').run();
    })();
    this.open.nodes.clear();
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
    // Both series whole in their tables first: the move works on rows.
    this.closeWhere((nodeId) => nodeId === oldId || nodeId === newId);
    const moved = this.keepingNewKeys(
      this.db.transaction(() =>
        moveNodeSeries(
          this.db,
          {
            raw: { table: 'reading_rows', key: 'node_key', keyOf: (nodeId) => this.keyIn(nodeId) },
            hourly: ROLLUP_TABLE['1h'],
            daily: ROLLUP_TABLE['1d'],
            latest: 'readings_latest',
            metrics: METRIC_COLUMNS,
            rollups: ROLLUP_COLUMNS,
          },
          oldId,
          newId,
        ),
      ),
    );
    this.open.nodes.delete(oldId);
    this.open.nodes.delete(newId);
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
      this.open.nodes.set(row[0] as string, { latest, latestDirty: false, hour: undefined, day: undefined });
    }
  }

  private apply(groups: readonly (readonly Reading[])[], fast: boolean): Applied {
    const nodes = new Map<string, NodeContribution>();
    this.pendingRows = 0;
    const observers = readingsObservers(this.db);
    this.observed = observers ? [] : undefined;
    const stored = groups.map((readings) => this.applyGroup(readings, nodes, fast));
    this.flushPending();
    this.writeBucketChanges(nodes);
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
        contribution = this.contribution(nodeId);
        nodes.set(nodeId, contribution);
      }

      let added: Reading;
      if (fast && ts > contribution.node.latest.ts) {
        // Newer than anything stored or pending for this node: certainly a new row.
        this.queueInsert(this.keyIn(nodeId), ts, values);
        added = (mask & DROPPED) !== 0 || ts !== raw ? toReading(nodeId, ts, values) : reading;
      } else {
        this.flushPending();
        const key = this.keyIn(nodeId);
        if (this.insertReading.run(key, ts, ...values).changes === 1) {
          added = (mask & DROPPED) !== 0 || ts !== raw ? toReading(nodeId, ts, values) : reading;
        } else {
          // The row exists: fill only the fields it lacks; the rest of this reading is a duplicate.
          const existing = this.selectReading.get(key, ts);
          if (!existing) continue;
          if (keepUnfilled(existing, values) === 0) continue;
          this.fillReading.run(key, ts, ...values);
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
      if (mergeLatest(contribution.node.latest, ts, values)) contribution.latestChanged = true;
    }
    return stored;
  }

  /** A node's share of a transaction, starting from copies of its in-memory state. */
  private contribution(nodeId: string): NodeContribution {
    const current = this.open.nodes.get(nodeId);
    const copy = (b: OpenBucket | undefined) => b && { start: b.start, acc: b.acc.slice() };
    return {
      node: {
        latest: current ? copyLatest(current.latest) : emptyLatest(),
        latestDirty: current?.latestDirty ?? false,
        hour: copy(current?.hour),
        day: copy(current?.day),
      },
      hours: new RollupBuckets(),
      days: new RollupBuckets(),
      latestChanged: false,
      closes: [],
      opened: { '1h': false, '1d': false },
      touchedClosed: false,
    };
  }

  /**
   * Settles a node's hourly or daily sums of this transaction (summed per bucket in the
   * transaction, as rollups.ts does for the upstream's batches too, so each bucket's figures are
   * the very doubles an additive upsert of the same batches gives). The newest bucket of the node
   * is its open one, kept in memory: its sums are added there. A bucket newer than the one open
   * before opens with its stored row's sums (a clean stop or a stale close wrote it) and, unless
   * it is the newest, closes at once; the one open before closes when a newer one opens. Sums of
   * older, closed buckets stay in `c.hours` / `c.days`, to be added to their rows.
   */
  private settleBuckets(nodeId: string, c: NodeContribution, interval: RollupInterval): void {
    const hourly = interval === '1h';
    const sums = hourly ? c.hours : c.days;
    if (sums.starts.length === 0) return;
    const before = hourly ? c.node.hour : c.node.day;
    let newest = before?.start ?? Number.NEGATIVE_INFINITY;
    for (const start of sums.starts) if (start > newest) newest = start;
    const closed = new RollupBuckets();
    let open = before;
    for (let b = 0; b < sums.starts.length; b++) {
      const start = sums.starts[b]!;
      const sum = sums.accs[b]!;
      if (before !== undefined && start === before.start) {
        addSums(before.acc, sum);
      } else if (before === undefined || start > before.start) {
        const stored = this.selectBucket[interval].get(nodeId, start);
        const acc = stored ? stored.slice() : EMPTY_BUCKET_ACC.slice();
        addSums(acc, sum);
        if (start === newest) {
          open = { start, acc };
          c.opened[interval] = true;
        } else c.closes.push({ interval, start, acc });
      } else {
        addSums(closed.get(start), sum);
        c.touchedClosed = true;
      }
    }
    // A newer bucket opened (it is `open` now): the one open before closes.
    if (before !== undefined && newest > before.start) {
      c.closes.push({ interval, start: before.start, acc: before.acc });
    }
    if (hourly) {
      c.node.hour = open;
      c.hours = closed;
    } else {
      c.node.day = open;
      c.days = closed;
    }
  }

  /**
   * The transaction's bucket writes: closed buckets whole, then what reached older buckets added
   * to their rows, the `readings_open` rows of the buckets opened, and the latest rows that must
   * not wait (a bucket closed, or a closed bucket changed).
   */
  private writeBucketChanges(nodes: Map<string, NodeContribution>): void {
    const latest: [string, LatestRow][] = [];
    const marks: unknown[] = [];
    const closes: { nodeId: string; bucket: ClosedBucket }[] = [];
    for (const [nodeId, c] of nodes) {
      this.settleBuckets(nodeId, c, '1h');
      this.settleBuckets(nodeId, c, '1d');
      for (const bucket of c.closes) closes.push({ nodeId, bucket });
      if (c.latestChanged) c.node.latestDirty = true;
      if (c.opened['1h']) marks.push(nodeId, '1h', c.node.hour!.start);
      if (c.opened['1d']) marks.push(nodeId, '1d', c.node.day!.start);
      // The latest row waits for its day to close: after a crash it is merged again from the raw
      // rows of the open day (recover). A change through a closed bucket cannot wait.
      if (c.node.latestDirty && (c.touchedClosed || c.closes.some((b) => b.interval === '1d'))) {
        latest.push([nodeId, c.node.latest]);
        c.node.latestDirty = false;
      }
    }
    if (closes.length > 0) this.writeClosedBuckets(closes);
    writeRollupBuckets(nodes, 'hours', this.upsertHourly);
    writeRollupBuckets(nodes, 'days', this.upsertDaily);
    if (marks.length > 0) this.markOpen.run(marks, marks.length / 3);
    if (latest.length > 0) this.writeLatestRows(latest);
  }

  /** Writes closed buckets of both intervals whole, each table's in one multi-row statement. */
  private writeClosedBuckets(closes: readonly { nodeId: string; bucket: ClosedBucket }[]): void {
    for (const interval of ['1h', '1d'] as const) {
      this.writeWholeBuckets(
        interval,
        closes.filter((c) => c.bucket.interval === interval),
      );
    }
  }

  /** Writes buckets whole (INSERT OR REPLACE): their accumulators hold the stored share too. */
  private writeWholeBuckets(
    interval: RollupInterval,
    rows: readonly { nodeId: string; bucket: ClosedBucket }[],
  ): void {
    const statement = this.replaceBucket[interval];
    const width = statement.width;
    const args: unknown[] = [];
    rows.forEach(({ nodeId, bucket }, n) => {
      const base = n * width;
      args[base] = nodeId;
      args[base + 1] = bucket.start;
      for (let i = 0; i < width - 2; i++) args[base + 2 + i] = bucket.acc[i];
    });
    statement.run(args, rows.length);
  }

  /** Runs `work` (a transaction that may make node keys), keeping the keys it made only if it commits. */
  private keepingNewKeys<T>(work: () => T): T {
    try {
      const result = work();
      for (const [nodeId, key] of this.newKeys) this.keys.set(nodeId, key);
      return result;
    } finally {
      this.newKeys.clear();
    }
  }

  /** `nodeId`'s key in reading_rows, made in the transaction under way when it has none yet. */
  private keyIn(nodeId: string): number {
    let key = this.keys.get(nodeId) ?? this.newKeys.get(nodeId);
    if (key === undefined) {
      this.addKey.run(nodeId);
      key = this.selectKey.get(nodeId)!;
      this.newKeys.set(nodeId, key);
    }
    return key;
  }

  private queueInsert(nodeKey: number, ts: number, values: readonly (number | null)[]): void {
    const args = this.pendingArgs;
    const base = this.pendingRows * READING_WIDTH;
    args[base] = nodeKey;
    args[base + 1] = ts;
    for (let slot = 0; slot < SLOTS; slot++) args[base + 2 + slot] = values[slot];
    if (++this.pendingRows === CHUNK) this.flushPending();
  }

  private flushPending(): void {
    const n = this.pendingRows;
    this.pendingRows = 0;
    if (n > 0 && this.insertReadings.run(this.pendingArgs, n) !== n) throw new FastPathConflict();
  }

  private writeLatestRows(rows: readonly [string, LatestRow][]): void {
    const width = this.writeLatest.width;
    const args: unknown[] = [];
    let n = 0;
    for (const [nodeId, { ts, values, times }] of rows) {
      if (ts === Number.NEGATIVE_INFINITY) continue;
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

/** Adds a bucket's sums (rollups.ts layout) to another's, in place. */
function addSums(acc: number[], sums: readonly number[]): void {
  for (let i = 0; i < sums.length; i++) acc[i]! += sums[i]!;
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
