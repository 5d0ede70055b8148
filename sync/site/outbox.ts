/**
 * The site's outbox (docs/sync.md "Outbox", "Disk budget"): what the push actor reads, sends and
 * acknowledges. The entries themselves are written in the transactions of the records (SQLite
 * triggers, and the reading writer's observer for `readings`: outbox-schema.ts); this class
 * only reads them, deletes what the upstream has stored, and keeps the outbox inside its disk
 * budget. A batch is read without parsing any body: the stored JSON is spliced into the batch.
 *
 * The sequence is gap-free from `acked_seq + 1` to the last entry: rows at or below `acked_seq`
 * are deleted in the transaction that stores it, and a reading dropped for the budget keeps its
 * row (kind `dropped`, body NULL), so a batch can name it in `dropped` and the upstream tells a
 * drop from a gap. Hence the depth is `lastSeq - ackedSeq`, without counting rows.
 *
 * The outbox's size is kept as a running count of body bytes (`octet_length`, which SQLite
 * answers without decoding the text): counted once, then only the entries appended since, and
 * adjusted by what this object deletes or drops. It is recounted in full (one scan: 35 ms per
 * 100,000 entries on the dev VM, so a few tenths of a second per million, more on a Pi) only
 * when another connection or object acknowledged or dropped behind this one's back, which
 * `acked_seq` and `dropped_total` reveal.
 */
import type { Database, Statement } from '../../src/store/database.js';
import { openBuckets } from '../../src/store/open-buckets.js';
import { bucketStart, ROLLUP_COLUMNS, ROLLUP_TABLE, type RollupInterval } from '../../src/store/rollups.js';
import { MAX_READINGS_ROWS, type ReadingRow } from '../protocol.js';
import { migrateSyncTables, READ_THROUGH_KEY, READINGS_KIND } from './outbox-schema.js';

/** One record of a batch, without its body (which only `recordsJson` carries). */
export interface OutboxRecordRef {
  seq: number;
  kind: string;
  at: number;
  /** A `readings` record that merged the entries seq..through. */
  through?: number;
}

export interface OutboxBatch {
  firstSeq: number;
  lastSeq: number;
  /** The records' sequence numbers, kinds and times, in order (their bodies are in recordsJson). */
  records: OutboxRecordRef[];
  dropped: [number, number][];
  /** bytes of the records' JSON (`recordsJson`) */
  jsonBytes: number;
  /**
   * The records as one JSON array of protocol.ts records (`{seq, kind, at, body}`), built from
   * the stored bodies without parsing or re-encoding them: what the push actor sends.
   */
  recordsJson: string;
}

export interface OutboxStats {
  /** Entries after ackedSeq (dropped ones included): lastSeq - ackedSeq. */
  depth: number;
  ackedSeq: number;
  /** The last sequence number handed out (0 before the first entry). */
  lastSeq: number;
  /** When the oldest entry not yet acknowledged was written (ms), null when there is none. */
  oldestAt: number | null;
  /** Readings dropped for the disk budget, ever. */
  droppedTotal: number;
  /** Bytes of JSON bodies waiting in the outbox. */
  approxBytes: number;
}

/** The `sync_state` keys the outbox keeps (the push actor keeps its own in the same table). */
export const OUTBOX_STATE = {
  ackedSeq: 'acked_seq',
  droppedTotal: 'dropped_total',
} as const;

/** How a `readings` body (`JSON.stringify({ rows })`) starts and ends, around its rows. */
const ROWS_HEAD = '{"rows":[';
const ROWS_TAIL = ']}';

/**
 * Rows in a `readings` body, counted without parsing it: a row is an array of a node id (no
 * brackets: READING_NODE_ID) and numbers or nulls, so rows are separated by exactly `],[`.
 */
function rowCount(body: string): number {
  let n = 1;
  for (let i = body.indexOf('],[', ROWS_HEAD.length); i >= 0; i = body.indexOf('],[', i + 3)) n++;
  return n;
}

/** Bytes of `{"seq":…,"kind":"…","at":…,"body":` (ASCII). */
function headBytes(seq: number, kind: string, at: number): number {
  return 31 + String(seq).length + kind.length + String(at).length;
}
const THROUGH_KEY = ',"through":';

/** The kind of an entry whose reading was dropped for the disk budget. */
export const DROPPED_KIND = 'dropped';

/** The outbox does not continue where it should: rows were removed by something else. */
export class OutboxSequenceError extends Error {
  override readonly name = 'OutboxSequenceError';
  constructor(
    readonly expected: number,
    readonly found: number,
  ) {
    super(`outbox sequence ${expected} is missing (the next entry is ${found})`);
  }
}

/**
 * `readings` entries looked at per budget transaction (each up to MAX_READINGS_ROWS rows):
 * bounds how long one holds the write lock.
 */
const DROP_CHUNK = 10;
/** Entries read from SQLite at a time when a batch is read. */
const READ_PAGE = 1024;
/** About the bytes of one rollup body (17 figures and their keys), to plan a drop. */
const ROLLUP_BODY_ESTIMATE = 700;
const INTERVALS: readonly RollupInterval[] = ['1h', '1d'];

type EntryRow = [seq: number, kind: string, at: number, body: string | null, bytes: number | null];

interface Candidate {
  seq: number;
  bytes: number;
  body: string;
}

interface ByteCount {
  /** acked_seq and dropped_total when counted: either moving elsewhere means recount. */
  acked: number;
  droppedTotal: number;
  /** Entries up to here are counted. */
  through: number;
  bytes: number;
}

interface Bucket {
  interval: RollupInterval;
  nodeId: string;
  start: number;
}

export class Outbox {
  private readonly now: () => number;
  private readonly getStateStmt: Statement<unknown[], string>;
  private readonly putStateStmt: Statement;
  private readonly deleteStateStmt: Statement;
  private readonly lastSeqStmt: Statement<unknown[], number>;
  private readonly entriesAfter: Statement<unknown[], EntryRow>;
  private readonly oldestAtStmt: Statement<unknown[], number>;
  private readonly bytesAfter: Statement<unknown[], { bytes: number; through: number | null }>;
  private readonly bytesBetween: Statement<unknown[], number>;
  private readonly deleteThrough: Statement;
  private readonly oldestReadings: Statement<unknown[], Candidate>;
  private readonly dropReadings: Statement;
  private readonly appendEntry: Statement;
  private readonly rollupRow: Record<RollupInterval, Statement<unknown[], Record<string, number>>>;
  private readonly atomically: <R>(fn: () => R) => R;
  private count: ByteCount | undefined;
  /** Every reading at or below this seq is dropped already: the next drop starts after it. */
  private droppedThrough = 0;

  /** Migrates the 'sync' tables when needed (so `sync status` works on a hub that never synced). */
  constructor(
    private readonly db: Database,
    options: { now?: () => number } = {},
  ) {
    this.now = options.now ?? Date.now;
    migrateSyncTables(db);
    this.getStateStmt = db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck() as Statement<
      unknown[],
      string
    >;
    this.putStateStmt = db.prepare('INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?)');
    this.deleteStateStmt = db.prepare('DELETE FROM sync_state WHERE key = ?');
    this.lastSeqStmt = db
      .prepare("SELECT seq FROM sqlite_sequence WHERE name = 'sync_outbox'")
      .pluck() as Statement<unknown[], number>;
    // Pages of entries: `all()` on a bounded page is about twice as fast as `iterate()` per row.
    this.entriesAfter = db
      .prepare(
        `SELECT seq, kind, at, body, octet_length(body) FROM sync_outbox WHERE seq > ? ORDER BY seq LIMIT ${READ_PAGE}`,
      )
      .raw(true) as Statement<unknown[], EntryRow>;
    this.oldestAtStmt = db
      .prepare('SELECT at FROM sync_outbox WHERE seq > ? ORDER BY seq LIMIT 1')
      .pluck() as Statement<unknown[], number>;
    this.bytesAfter = db.prepare(
      'SELECT coalesce(sum(octet_length(body)), 0) AS bytes, max(seq) AS through FROM sync_outbox WHERE seq > ?',
    ) as Statement<unknown[], { bytes: number; through: number | null }>;
    this.bytesBetween = db
      .prepare('SELECT coalesce(sum(octet_length(body)), 0) FROM sync_outbox WHERE seq > ? AND seq <= ?')
      .pluck() as Statement<unknown[], number>;
    this.deleteThrough = db.prepare('DELETE FROM sync_outbox WHERE seq > ? AND seq <= ?');
    this.oldestReadings = db.prepare(
      `SELECT seq, octet_length(body) AS bytes, body
       FROM sync_outbox WHERE seq > ? AND kind = '${READINGS_KIND}' ORDER BY seq LIMIT ?`,
    ) as Statement<unknown[], Candidate>;
    this.dropReadings = db.prepare(
      `UPDATE sync_outbox SET kind = '${DROPPED_KIND}', body = NULL WHERE seq > ? AND seq <= ? AND kind = '${READINGS_KIND}'`,
    );
    this.appendEntry = db.prepare('INSERT INTO sync_outbox (kind, at, body) VALUES (?, ?, ?)');
    const rollupSelect = (interval: RollupInterval) =>
      db.prepare(
        `SELECT ${ROLLUP_COLUMNS.join(', ')} FROM ${ROLLUP_TABLE[interval]} WHERE node_id = ? AND bucket_start = ?`,
      ) as Statement<unknown[], Record<string, number>>;
    this.rollupRow = { '1h': rollupSelect('1h'), '1d': rollupSelect('1d') };
    const run = db.transaction((fn: () => unknown) => fn());
    this.atomically = <R>(fn: () => R) => run.immediate(fn) as R;
  }

  ackedSeq(): number {
    return Number(this.getStateStmt.get(OUTBOX_STATE.ackedSeq) ?? 0);
  }

  /** The last sequence number handed out; 0 before the first entry. */
  lastSeq(): number {
    return this.lastSeqStmt.get() ?? 0;
  }

  /**
   * The entries after `after` (default: ackedSeq), in order, at most maxRecords and about
   * maxBytes of JSON (always at least one record); dropped entries become [first,last] runs (at
   * most maxRecords runs). undefined when empty. No body is parsed: `recordsJson` splices the
   * stored JSON, each body exactly as protocol.ts RECORD_BODIES expects. Consecutive `readings`
   * entries become one record (`through`) of at most MAX_READINGS_ROWS rows: a site whose
   * readings trickle in writes an entry per reading. `after` lets the push actor prepare the
   * batch that follows one still in flight; `upTo` ends the batch there (the push actor's cycle
   * pushes what was there when it began). Throws OutboxSequenceError when an entry is missing.
   */
  readBatch(limits: {
    maxRecords: number;
    maxBytes: number;
    after?: number;
    /** Entries after this one are left for a later batch. */
    upTo?: number;
  }): OutboxBatch | undefined {
    const maxRecords = Math.max(1, Math.trunc(limits.maxRecords));
    const start = limits.after ?? this.ackedSeq();
    const records: OutboxRecordRef[] = [];
    const parts: string[] = [];
    const dropped: [number, number][] = [];
    let bytes = 2; // the array's brackets
    let last = start;
    // The `readings` record being merged: its ref, its rows' JSON, their count.
    let open: { ref: OutboxRecordRef; inner: string[]; rows: number; part: number } | undefined;
    const close = () => {
      if (!open) return;
      const { ref, inner } = open;
      parts[open.part] =
        `{"seq":${ref.seq},"kind":"${READINGS_KIND}","at":${ref.at}` +
        `${ref.through === undefined ? '' : `${THROUGH_KEY}${ref.through}`},"body":{"rows":[${inner.join(',')}]}}`;
      open = undefined;
    };
    const upTo = limits.upTo ?? Number.POSITIVE_INFINITY;
    for (const [seq, kind, at, body, bodyBytes] of this.entries(start)) {
      if (seq > upTo) break;
      if (seq !== last + 1) throw new OutboxSequenceError(last + 1, seq);
      const size = bodyBytes ?? (body === null ? 0 : Buffer.byteLength(body));
      if (body === null) {
        close();
        const run = dropped[dropped.length - 1];
        if (run && run[1] === seq - 1) run[1] = seq;
        else if (dropped.length >= maxRecords) break;
        else dropped.push([seq, seq]);
      } else if (kind === READINGS_KIND && body.startsWith(ROWS_HEAD) && body.endsWith(ROWS_TAIL)) {
        const rows = rowCount(body);
        const inner = body.slice(ROWS_HEAD.length, -ROWS_TAIL.length);
        const innerBytes = size - ROWS_HEAD.length - ROWS_TAIL.length;
        if (open && open.rows + rows <= MAX_READINGS_ROWS) {
          // The comma between the rows, and `,"through":n` (ASCII) added or grown by a digit.
          const through = open.ref.through;
          const extra =
            1 +
            innerBytes +
            String(seq).length -
            (through === undefined ? -THROUGH_KEY.length : String(through).length) +
            String(at).length -
            String(open.ref.at).length;
          if (bytes + extra > limits.maxBytes) break;
          open.inner.push(inner);
          open.rows += rows;
          open.ref.through = seq;
          open.ref.at = at;
          bytes += extra;
        } else {
          if (records.length >= maxRecords) break;
          const recordBytes = headBytes(seq, READINGS_KIND, at) + size + 1 + (parts.length > 0 ? 1 : 0);
          if (records.length > 0 && bytes + recordBytes > limits.maxBytes) break;
          close();
          const ref: OutboxRecordRef = { seq, kind, at };
          records.push(ref);
          open = { ref, inner: [inner], rows, part: parts.length };
          parts.push('');
          bytes += recordBytes;
        }
      } else {
        if (records.length >= maxRecords) break;
        const head = `{"seq":${seq},"kind":"${kind}","at":${at},"body":`;
        // The head is ASCII: its length is its bytes; the body's bytes come from SQLite.
        const recordBytes = head.length + size + 1 + (parts.length > 0 ? 1 : 0);
        if (records.length > 0 && bytes + recordBytes > limits.maxBytes) break;
        close();
        records.push({ seq, kind, at });
        parts.push(`${head}${body}}`);
        bytes += recordBytes;
      }
      last = seq;
    }
    close();
    if (last === start) return undefined;
    // From now on the triggers leave these entries as read (a node's newer state goes into a
    // new entry), so this batch, sent again, is this batch.
    if (last > this.readThrough()) this.putStateStmt.run(READ_THROUGH_KEY, String(last));
    return {
      firstSeq: start + 1,
      lastSeq: last,
      records,
      dropped,
      jsonBytes: bytes,
      recordsJson: `[${parts.join(',')}]`,
    };
  }

  /** The entries after `after`, in order, read a page at a time. */
  private *entries(after: number): Generator<EntryRow> {
    for (let from = after; ; ) {
      const page = this.entriesAfter.all(from);
      for (const row of page) yield row;
      if (page.length < READ_PAGE) return;
      from = page[page.length - 1]![0];
    }
  }

  /**
   * Everything up to seq is stored upstream: deletes those rows and stores acked_seq, in one
   * transaction. A seq at or below the current ackedSeq changes nothing; a seq beyond lastSeq
   * is clamped to lastSeq.
   */
  acknowledge(seq: number): void {
    if (!Number.isSafeInteger(seq)) throw new RangeError(`acknowledged seq ${seq} is not an integer`);
    this.atomically(() => {
      const acked = this.ackedSeq();
      const target = Math.min(seq, this.lastSeq());
      if (target <= acked) return;
      const count = this.validCount(acked);
      if (count) {
        count.bytes -= this.bytesBetween.get(acked, Math.min(target, count.through)) ?? 0;
        count.through = Math.max(count.through, target);
        count.acked = target;
      }
      this.deleteThrough.run(acked, target);
      this.putStateStmt.run(OUTBOX_STATE.ackedSeq, String(target));
    });
  }

  stats(): OutboxStats {
    const ackedSeq = this.ackedSeq();
    const lastSeq = Math.max(this.lastSeq(), ackedSeq);
    return {
      depth: lastSeq - ackedSeq,
      ackedSeq,
      lastSeq,
      oldestAt: this.oldestAtStmt.get(ackedSeq) ?? null,
      droppedTotal: this.droppedTotal(),
      approxBytes: this.pendingBytes(),
    };
  }

  /**
   * Past maxBytes of outbox JSON, turns the oldest `readings` entries, whole, into dropped ones
   * (kind 'dropped', body NULL) until under budget, appends a `rollup` record (interval '1h'
   * and '1d', the hub's current readings_hourly/readings_daily row) for each (node, bucket)
   * their rows touched, and counts their rows in droppedTotal (persisted). Never drops any other
   * kind. Returns how many readings (rows) were dropped.
   *
   * Rollup entries carry `at` from this object's clock (`options.now`), not SQLite's.
   * Works in transactions of at most DROP_CHUNK entries, each with its rollup records, so ingest
   * waits for one chunk at most. It stops short of the budget when no readings entry is left,
   * or when dropping would not shrink the outbox (a few readings alone in their hours: their
   * rollup records outweigh them).
   */
  enforceBudget(maxBytes: number): number {
    // Rollup entries appended by this call, by bucket: they hold every reading older than them.
    const rolled = new Map<string, number>();
    let total = 0;
    for (;;) {
      const dropped = this.atomically(() => this.dropChunk(maxBytes, rolled));
      if (dropped === 0) return total;
      total += dropped;
    }
  }

  /** The newest entry read for a batch: the node triggers change none up to it. */
  private readThrough(): number {
    return Number(this.getStateStmt.get(READ_THROUGH_KEY) ?? 0);
  }

  getState(key: string): string | undefined {
    return this.getStateStmt.get(key);
  }

  /** Stores a value; null removes the key. */
  setState(key: string, value: string | null): void {
    if (value === null) this.deleteStateStmt.run(key);
    else this.putStateStmt.run(key, value);
  }

  private droppedTotal(): number {
    return Number(this.getStateStmt.get(OUTBOX_STATE.droppedTotal) ?? 0);
  }

  /** The running count, when nothing moved behind it since it was taken. */
  private validCount(acked = this.ackedSeq()): ByteCount | undefined {
    const count = this.count;
    if (count && count.acked === acked && count.droppedTotal === this.droppedTotal()) return count;
    this.count = undefined;
    return undefined;
  }

  /** Bytes of bodies waiting: the running count plus what was appended since. */
  private pendingBytes(): number {
    const acked = this.ackedSeq();
    const count = this.validCount(acked);
    if (!count) {
      const all = this.bytesAfter.get(acked)!;
      this.count = {
        acked,
        droppedTotal: this.droppedTotal(),
        through: all.through ?? acked,
        bytes: all.bytes,
      };
      return all.bytes;
    }
    const added = this.bytesAfter.get(count.through)!;
    if (added.through !== null) {
      count.bytes += added.bytes;
      count.through = added.through;
    }
    return count.bytes;
  }

  /** One budget transaction: drops up to DROP_CHUNK of the oldest readings entries. Returns how many rows. */
  private dropChunk(maxBytes: number, rolled: Map<string, number>): number {
    const pending = this.pendingBytes();
    if (pending <= maxBytes) return 0;
    const acked = this.ackedSeq();
    const start = Math.max(acked, this.droppedThrough);
    const candidates = this.oldestReadings.all(start, DROP_CHUNK);
    const buckets = new Map<string, Bucket>();
    let freed = 0;
    let through = start;
    let entries = 0;
    let rows = 0;
    for (const c of candidates) {
      const body = JSON.parse(c.body) as { rows: ReadingRow[] };
      for (const [nodeId, ts] of body.rows) {
        for (const interval of INTERVALS) {
          const bucket = bucketStart(ts, interval);
          const key = `${interval} ${nodeId} ${bucket}`;
          // A rollup entry appended after this entry carries its rows already.
          if ((rolled.get(key) ?? 0) > c.seq || buckets.has(key)) continue;
          buckets.set(key, { interval, nodeId, start: bucket });
        }
      }
      freed += c.bytes;
      through = c.seq;
      entries++;
      rows += body.rows.length;
      if (pending - freed + buckets.size * ROLLUP_BODY_ESTIMATE <= maxBytes) break;
    }
    if (entries === 0 || freed <= buckets.size * ROLLUP_BODY_ESTIMATE) return 0;

    const changed = this.dropReadings.run(start, through).changes;
    if (changed !== entries) throw new Error(`outbox budget: ${changed} entries dropped, ${entries} planned`);
    const at = this.now();
    for (const [key, bucket] of buckets) {
      // The writer's open bucket, when it holds this one, has the stored row's share too.
      const open = openBuckets(this.db)?.bucket(bucket.interval, bucket.nodeId);
      const row =
        open?.start === bucket.start
          ? Object.fromEntries(ROLLUP_COLUMNS.map((column, i) => [column, open.acc[i]!]))
          : this.rollupRow[bucket.interval].get(bucket.nodeId, bucket.start);
      if (!row) continue; // no rollup for the bucket (never stored): nothing to keep
      const body: Record<string, unknown> = {
        interval: bucket.interval,
        node_id: bucket.nodeId,
        bucket_start: bucket.start,
      };
      for (const column of ROLLUP_COLUMNS) body[column] = row[column];
      const info = this.appendEntry.run('rollup', at, JSON.stringify(body));
      rolled.set(key, Number(info.lastInsertRowid));
    }
    const droppedTotal = this.droppedTotal() + rows;
    this.putStateStmt.run(OUTBOX_STATE.droppedTotal, String(droppedTotal));
    // The count was brought up to date above, inside this transaction: adjust it rather than
    // recount. The rollup entries are past `through` and counted with the next appended ones.
    const byteCount = this.count;
    if (byteCount) {
      byteCount.bytes -= freed;
      byteCount.droppedTotal = droppedTotal;
    }
    this.droppedThrough = through;
    return rows;
  }
}
