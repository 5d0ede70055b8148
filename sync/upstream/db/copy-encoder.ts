/**
 * PostgreSQL's binary COPY format (the protocol's "Binary Format" of COPY): the rows a batch
 * sends with `COPY … FROM STDIN (FORMAT binary)` through copy-from.ts — the readings, and the
 * rollup sums on their way into the rollup tables. Doubles and int8s go as they are: no text to
 * write here or to parse there (BENCHMARKS.md "Issue 12", binary against text COPY).
 */
import { ACC_SIZE, METRIC_COLUMNS, ROLLUP_COLUMNS, type RollupBuckets } from '../../../src/store/rollups.js';

const SLOTS = METRIC_COLUMNS.length;
const TWO_32 = 2 ** 32;
/** PGCOPY signature, flags (0) and header extension length (0). */
const COPY_HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);

// ---- readings ----

/** `readings` columns in the order ReadingsCopy sends them. */
export const COPY_READINGS = `COPY readings (site_id, node_id, ts, ${METRIC_COLUMNS.join(', ')}, received_at) FROM STDIN (FORMAT binary)`;
// site_id, node_id, ts, the metrics, received_at.
const COPY_FIELDS = 4 + SLOTS;
/** A chunk is sent once it holds this many bytes: PostgreSQL loads one while the next is built. */
const COPY_CHUNK = 256 * 1024;
/** The most one row takes: 63-byte site id, 64-byte node id, 10 numbers of 8 bytes, lengths. */
const COPY_ROW_MAX = 2 + (4 + 63) + (4 + 64 * 4) + 12 * (COPY_FIELDS - 2);

/**
 * Rows in PostgreSQL's binary COPY format: doubles and int8s as they are (no text to parse on
 * either side: BENCHMARKS.md "Issue 12", binary against text COPY).
 */
export class ReadingsCopy {
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

// ---- rollup sums ----

/**
 * The batch's rollup sums on their way into readings_hourly / readings_daily: a temporary table
 * of the connection (made once per connection), emptied at every commit.
 */
export const ROLLUP_STAGE = 'sync_rollup_stage';
const ROLLUP_IS_COUNT = ROLLUP_COLUMNS.map((c) => c.endsWith('_count'));
const STAGE_FIELDS = 3 + ROLLUP_COLUMNS.length;
/** hourly, a 64-byte node id, bucket_start, the sums and counts, with their lengths. */
const STAGE_ROW_MAX = 2 + 5 + (4 + 64 * 4) + 12 + 12 * ROLLUP_COLUMNS.length;
/** ROLLUP_STAGE, in the column order encodeRollupStage writes. */
export const CREATE_ROLLUP_STAGE = `CREATE TEMPORARY TABLE IF NOT EXISTS ${ROLLUP_STAGE} (
  hourly BOOLEAN NOT NULL, node_id TEXT NOT NULL, bucket_start BIGINT NOT NULL,
  ${ROLLUP_COLUMNS.map((c, i) => `${c} ${ROLLUP_IS_COUNT[i] ? 'INTEGER' : 'DOUBLE PRECISION'} NOT NULL`).join(', ')}
) ON COMMIT DELETE ROWS`;

/** One node's hourly and daily sums of a batch (src/store/rollups.ts). */
export interface NodeBuckets {
  nodeId: string;
  hours: RollupBuckets;
  days: RollupBuckets;
}

/**
 * The hourly and daily sums as binary COPY data for ROLLUP_STAGE (binary: no text to write
 * here or to parse there, which for the ~9,000 buckets of 100,000 readings is a real cost).
 */
export function encodeRollupStage(nodes: ReadonlyMap<string, NodeBuckets>): Buffer {
  let buckets = 0;
  for (const node of nodes.values()) buckets += node.hours.starts.length + node.days.starts.length;
  const buf = Buffer.allocUnsafe(COPY_HEADER.length + buckets * STAGE_ROW_MAX + 2);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = COPY_HEADER.copy(buf, 0);
  for (const node of nodes.values()) {
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
