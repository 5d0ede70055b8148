/**
 * The packet log's table (its own component migrations, src/store/component-migrations.ts) and
 * the statements over it: a batch of rows written and trimmed in one transaction, a day trim, and
 * the filtered, newest-first page the route reads.
 *
 * Rows are numbered here in arrival order and only ever deleted from the oldest end, so the ids
 * are contiguous: the row cap is one `DELETE … WHERE id <= ?` (a rowid range), and
 * the oldest row younger than the day bound is the first one a scan from the oldest end meets.
 * Payload contents are never stored: only their size.
 */
import type { HeardPacket, HeardVia } from '../domain/mesh.js';
import { migrateComponent } from '../store/component-migrations.js';
import type { Database, Statement } from '../store/database.js';
import { MultiRowStatement, placeholders } from '../store/multi-row-statement.js';

const MIGRATIONS = [
  {
    version: 1,
    name: 'packet log',
    up: `
      CREATE TABLE packet_log (
        id INTEGER PRIMARY KEY,
        ts INTEGER NOT NULL,
        from_num INTEGER NOT NULL,
        to_num INTEGER NOT NULL,
        packet_id INTEGER NOT NULL,
        portnum INTEGER NOT NULL,
        channel INTEGER NOT NULL,
        hop_start INTEGER,
        hop_limit INTEGER NOT NULL,
        snr REAL,
        rssi INTEGER,
        gateway TEXT,
        payload_bytes INTEGER NOT NULL,
        flags INTEGER NOT NULL,
        request_id INTEGER NOT NULL,
        reply_id INTEGER NOT NULL
      );
    `,
  },
];

/** The bits of `flags`: one column instead of five keeps the row (and its write) small. */
export const PACKET_FLAGS = {
  duplicate: 1,
  /** Heard through an MQTT gateway (else the hub's own radio). */
  mqtt: 2,
  wantAck: 4,
  wantResponse: 8,
  viaMqtt: 16,
} as const;

const COLUMNS = [
  'id',
  'ts',
  'from_num',
  'to_num',
  'packet_id',
  'portnum',
  'channel',
  'hop_start',
  'hop_limit',
  'snr',
  'rssi',
  'gateway',
  'payload_bytes',
  'flags',
  'request_id',
  'reply_id',
] as const;

/** One stored row, as SQLite answers it. */
export interface PacketRow {
  id: number;
  ts: number;
  from_num: number;
  to_num: number;
  packet_id: number;
  portnum: number;
  channel: number;
  hop_start: number | null;
  hop_limit: number;
  snr: number | null;
  rssi: number | null;
  gateway: string | null;
  payload_bytes: number;
  flags: number;
  request_id: number;
  reply_id: number;
}

/**
 * One sighting (`mesh.heard`) waiting to be written: its column values after `id`, in COLUMNS
 * order, taken at once. Only numbers and a gateway string: a waiting batch holds no packet, its
 * payload or its readings, so a busy feed leaves the garbage collector nothing old to move.
 */
export type PacketSighting = (number | string | null)[];

/** The sighting's row values; `at` is the hub's clock when it reached the hub (ms): the log's `time`. */
export function sightingOf(
  packet: HeardPacket,
  via: HeardVia,
  duplicate: boolean,
  at: number,
): PacketSighting {
  const m = packet.meta;
  const flags =
    (duplicate ? PACKET_FLAGS.duplicate : 0) |
    (via === 'mqtt' ? PACKET_FLAGS.mqtt : 0) |
    (m.wantAck ? PACKET_FLAGS.wantAck : 0) |
    (m.wantResponse ? PACKET_FLAGS.wantResponse : 0) |
    (m.viaMqtt ? PACKET_FLAGS.viaMqtt : 0);
  return [
    at,
    packet.from >>> 0,
    packet.to >>> 0,
    packet.id >>> 0,
    packet.portnum,
    m.channel,
    m.hopStart ?? null,
    m.hopLimit,
    m.snr ?? null,
    m.rssi ?? null,
    m.gateway ?? null,
    m.payloadBytes,
    flags,
    m.requestId >>> 0,
    m.replyId >>> 0,
  ];
}

/** The row a sighting became, numbered `id` (for the live tail: no read back). */
export function sightingRow(s: PacketSighting, id: number): PacketRow {
  const row: Record<string, unknown> = { id };
  for (let i = 1; i < COLUMNS.length; i++) row[COLUMNS[i]!] = s[i - 1];
  return row as unknown as PacketRow;
}

/** What a page is narrowed to; every field optional. */
export interface PacketFilter {
  from?: number;
  to?: number;
  /** Either end. */
  node?: number;
  portnum?: number;
  via?: HeardVia;
  gateway?: string;
  duplicate?: boolean;
  /** Inclusive / exclusive ms bounds on the time heard. */
  since?: number;
  until?: number;
  /** Only rows older than this id (the cursor). */
  before?: number;
}

export interface PacketBounds {
  maxRows: number;
  maxAgeMs: number;
}

/** What one write did: the id of its first row (the rest follow in order) and the old rows it trimmed. */
export interface PacketWrite {
  firstId: number;
  trimmed: number;
}

export class PacketLogStore {
  private readonly insert: MultiRowStatement;
  private readonly lastId: Statement<[], { id: number | null }>;
  private readonly trimTo: Statement<[number]>;
  private readonly firstYoung: Statement<[number], { id: number }>;
  /** One prepared statement per combination of filters (at most 2^10). */
  private readonly pages = new Map<string, Statement>();
  /** Ids are given here, in arrival order, so they stay contiguous (the cap is one rowid range). */
  private nextId: number;
  private readonly writeBatch: (sightings: readonly PacketSighting[], maxRows: number) => PacketWrite;

  constructor(private readonly db: Database) {
    migrateComponent(db, 'packets', MIGRATIONS);
    this.insert = new MultiRowStatement(
      db,
      COLUMNS.length,
      (rows) => `INSERT INTO packet_log (${COLUMNS.join(',')}) VALUES ${placeholders(COLUMNS.length, rows)}`,
    );
    this.lastId = db.prepare('SELECT max(id) AS id FROM packet_log');
    this.trimTo = db.prepare('DELETE FROM packet_log WHERE id <= ?');
    this.firstYoung = db.prepare('SELECT id FROM packet_log WHERE ts >= ? ORDER BY id LIMIT 1');
    this.nextId = (this.lastId.get()?.id ?? 0) + 1;
    this.writeBatch = db.transaction((sightings: readonly PacketSighting[], maxRows: number) => {
      const firstId = this.nextId;
      const values: unknown[] = [];
      for (let i = 0; i < sightings.length; i++) {
        values.push(firstId + i);
        for (const v of sightings[i]!) values.push(v);
      }
      this.insert.run(values, sightings.length);
      const last = firstId + sightings.length - 1;
      const trimmed = last > maxRows ? this.trimTo.run(last - maxRows).changes : 0;
      return { firstId, trimmed };
    });
  }

  /** Writes the sightings, numbered on from the last row, and trims to `maxRows`, in one transaction. */
  write(sightings: readonly PacketSighting[], maxRows: number): PacketWrite {
    if (sightings.length === 0) return { firstId: this.nextId, trimmed: 0 };
    const written = this.writeBatch(sightings, maxRows);
    // Only once committed: a rolled-back batch leaves its ids to the next one.
    this.nextId += sightings.length;
    return written;
  }

  /** Deletes the rows heard before `cutoff` (ms); answers how many. */
  trimOlderThan(cutoff: number): number {
    const young = this.firstYoung.get(cutoff)?.id;
    if (young !== undefined) return this.trimTo.run(young - 1).changes;
    const last = this.lastId.get()?.id;
    return last == null ? 0 : this.trimTo.run(last).changes;
  }

  /** Up to `limit` rows matching `filter`, newest first. */
  page(filter: PacketFilter, limit: number): PacketRow[] {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (clause: string, ...values: unknown[]) => {
      where.push(clause);
      args.push(...values);
    };
    if (filter.before !== undefined) add('id < ?', filter.before);
    if (filter.from !== undefined) add('from_num = ?', filter.from);
    if (filter.to !== undefined) add('to_num = ?', filter.to);
    if (filter.node !== undefined) add('(from_num = ? OR to_num = ?)', filter.node, filter.node);
    if (filter.portnum !== undefined) add('portnum = ?', filter.portnum);
    if (filter.via !== undefined)
      add(`(flags & ${PACKET_FLAGS.mqtt}) = ?`, filter.via === 'mqtt' ? PACKET_FLAGS.mqtt : 0);
    if (filter.gateway !== undefined) add('gateway = ?', filter.gateway);
    if (filter.duplicate !== undefined)
      add(`(flags & ${PACKET_FLAGS.duplicate}) = ?`, filter.duplicate ? PACKET_FLAGS.duplicate : 0);
    if (filter.since !== undefined) add('ts >= ?', filter.since);
    if (filter.until !== undefined) add('ts < ?', filter.until);
    const sql = `SELECT * FROM packet_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    let statement = this.pages.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.pages.set(sql, statement);
    }
    return statement.all(...args, limit) as PacketRow[];
  }
}
