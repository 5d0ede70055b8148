/**
 * The site's outbox (docs/sync.md "Outbox", "Disk budget"): what the push actor reads, sends and
 * acknowledges. The entries themselves are written by SQLite triggers (outbox-schema.ts) in the
 * transactions of the records; this class only reads them, deletes what the upstream has
 * stored, and keeps the outbox inside its disk budget.
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
import { bucketStart, ROLLUP_COLUMNS, ROLLUP_TABLE, type RollupInterval } from '../../src/store/rollups.js';
import type { SyncRecord } from '../protocol.js';
import { migrateSyncTables } from './outbox-schema.js';

export interface OutboxBatch {
  firstSeq: number;
  lastSeq: number;
  records: SyncRecord[];
  dropped: [number, number][];
  /** bytes of the records' JSON (`recordsJson`) */
  jsonBytes: number;
  /**
   * The records as one JSON array, built from the stored bodies without re-encoding them: the
   * push actor may splice it into the batch body instead of `JSON.stringify(records)`. It
   * parses to exactly `records`.
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

/** Readings looked at per budget transaction: bounds how long one holds the write lock. */
const DROP_CHUNK = 2_000;
/** About the bytes of one rollup body (17 figures and their keys), to plan a drop. */
const ROLLUP_BODY_ESTIMATE = 700;
const INTERVALS: readonly RollupInterval[] = ['1h', '1d'];

type EntryRow = [seq: number, kind: string, at: number, body: string | null];

interface Candidate {
  seq: number;
  bytes: number;
  node_id: string;
  ts: number;
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
  constructor(db: Database, options: { now?: () => number } = {}) {
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
    this.entriesAfter = db
      .prepare('SELECT seq, kind, at, body FROM sync_outbox WHERE seq > ? ORDER BY seq')
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
      `SELECT seq, octet_length(body) AS bytes, json_extract(body, '$.node_id') AS node_id,
         json_extract(body, '$.ts') AS ts
       FROM sync_outbox WHERE seq > ? AND kind = 'reading' ORDER BY seq LIMIT ?`,
    ) as Statement<unknown[], Candidate>;
    this.dropReadings = db.prepare(
      `UPDATE sync_outbox SET kind = '${DROPPED_KIND}', body = NULL WHERE seq > ? AND seq <= ? AND kind = 'reading'`,
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
   * The entries after ackedSeq, in order, at most maxRecords and about maxBytes of JSON (always
   * at least one record); dropped entries become [first,last] runs (at most maxRecords runs).
   * undefined when empty. Records' bodies are parsed JSON objects exactly as protocol.ts
   * RECORD_BODIES expects. Throws OutboxSequenceError when an entry is missing.
   */
  readBatch(limits: { maxRecords: number; maxBytes: number }): OutboxBatch | undefined {
    const maxRecords = Math.max(1, Math.trunc(limits.maxRecords));
    const acked = this.ackedSeq();
    const records: SyncRecord[] = [];
    const parts: string[] = [];
    const dropped: [number, number][] = [];
    let bytes = 2; // the array's brackets
    let last = acked;
    for (const [seq, kind, at, body] of this.entriesAfter.iterate(acked)) {
      if (seq !== last + 1) throw new OutboxSequenceError(last + 1, seq);
      if (body === null) {
        const run = dropped[dropped.length - 1];
        if (run && run[1] === seq - 1) run[1] = seq;
        else if (dropped.length >= maxRecords) break;
        else dropped.push([seq, seq]);
      } else {
        if (records.length >= maxRecords) break;
        const json = `{"seq":${seq},"kind":"${kind}","at":${at},"body":${body}}`;
        const size = Buffer.byteLength(json) + (parts.length > 0 ? 1 : 0);
        if (records.length > 0 && bytes + size > limits.maxBytes) break;
        records.push({ seq, kind, at, body: JSON.parse(body) } as SyncRecord);
        parts.push(json);
        bytes += size;
      }
      last = seq;
    }
    if (last === acked) return undefined;
    return {
      firstSeq: acked + 1,
      lastSeq: last,
      records,
      dropped,
      jsonBytes: bytes,
      recordsJson: `[${parts.join(',')}]`,
    };
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
   * Past maxBytes of outbox JSON, turns the oldest `reading` entries into dropped ones (kind
   * 'dropped', body NULL) until under budget, appends a `rollup` record (interval '1h' and '1d',
   * the hub's current readings_hourly/readings_daily row) for each bucket they touched, and
   * counts them in droppedTotal (persisted). Never drops any other kind. Returns how many
   * readings were dropped.
   *
   * Rollup entries carry `at` from this object's clock (`options.now`), not SQLite's.
   * Works in transactions of at most DROP_CHUNK readings, each with its rollup records, so
   * ingest waits for one chunk at most. It stops short of the budget when no reading is left, or
   * when dropping would not shrink the outbox (each reading alone in its hour: its two rollup
   * records outweigh it).
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

  /** One budget transaction: drops up to DROP_CHUNK of the oldest readings. Returns how many. */
  private dropChunk(maxBytes: number, rolled: Map<string, number>): number {
    const pending = this.pendingBytes();
    if (pending <= maxBytes) return 0;
    const acked = this.ackedSeq();
    const start = Math.max(acked, this.droppedThrough);
    const candidates = this.oldestReadings.all(start, DROP_CHUNK);
    const buckets = new Map<string, Bucket>();
    let freed = 0;
    let through = start;
    let count = 0;
    for (const c of candidates) {
      for (const interval of INTERVALS) {
        const bucket = bucketStart(c.ts, interval);
        const key = `${interval} ${c.node_id} ${bucket}`;
        // A rollup entry appended after this reading carries it already.
        if ((rolled.get(key) ?? 0) > c.seq || buckets.has(key)) continue;
        buckets.set(key, { interval, nodeId: c.node_id, start: bucket });
      }
      freed += c.bytes;
      through = c.seq;
      count++;
      if (pending - freed + buckets.size * ROLLUP_BODY_ESTIMATE <= maxBytes) break;
    }
    if (count === 0 || freed <= buckets.size * ROLLUP_BODY_ESTIMATE) return 0;

    const changed = this.dropReadings.run(start, through).changes;
    if (changed !== count) throw new Error(`outbox budget: ${changed} readings dropped, ${count} planned`);
    const at = this.now();
    for (const [key, bucket] of buckets) {
      const row = this.rollupRow[bucket.interval].get(bucket.nodeId, bucket.start);
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
    const droppedTotal = this.droppedTotal() + count;
    this.putStateStmt.run(OUTBOX_STATE.droppedTotal, String(droppedTotal));
    // The count was brought up to date above, inside this transaction: adjust it rather than
    // recount. The rollup entries are past `through` and counted with the next appended ones.
    const byteCount = this.count;
    if (byteCount) {
      byteCount.bytes -= freed;
      byteCount.droppedTotal = droppedTotal;
    }
    this.droppedThrough = through;
    return count;
  }
}
