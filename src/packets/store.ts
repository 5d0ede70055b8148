/**
 * The packet log's table (its own component migrations, src/store/component-migrations.ts) and
 * the statements over it: a batch of rows written and trimmed in one transaction, a day trim, and
 * the filtered, newest-first page the route reads.
 *
 * Rows are numbered by an AUTOINCREMENT id in arrival order and only ever deleted from the oldest
 * end, so the ids are contiguous: the row cap is one `DELETE … WHERE id <= ?` (a rowid range), and
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
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        via TEXT NOT NULL,
        gateway TEXT,
        payload_bytes INTEGER NOT NULL,
        duplicate INTEGER NOT NULL,
        want_ack INTEGER NOT NULL,
        want_response INTEGER NOT NULL,
        request_id INTEGER NOT NULL,
        reply_id INTEGER NOT NULL,
        via_mqtt INTEGER NOT NULL
      );
    `,
  },
];

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
  'via',
  'gateway',
  'payload_bytes',
  'duplicate',
  'want_ack',
  'want_response',
  'request_id',
  'reply_id',
  'via_mqtt',
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
  via: HeardVia;
  gateway: string | null;
  payload_bytes: number;
  duplicate: 0 | 1;
  want_ack: 0 | 1;
  want_response: 0 | 1;
  request_id: number;
  reply_id: number;
  via_mqtt: 0 | 1;
}

/** One sighting (`mesh.heard`) waiting to be written. */
export interface PacketSighting {
  /** The hub's clock when the sighting reached it (ms): what the log's `time` is. */
  at: number;
  packet: HeardPacket;
  via: HeardVia;
  duplicate: boolean;
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

/** The row a sighting becomes, numbered `id`. */
export function sightingRow({ at, packet, via, duplicate }: PacketSighting, id: number): PacketRow {
  const m = packet.meta;
  return {
    id,
    ts: at,
    from_num: packet.from >>> 0,
    to_num: packet.to >>> 0,
    packet_id: packet.id >>> 0,
    portnum: packet.portnum,
    channel: m.channel,
    hop_start: m.hopStart ?? null,
    hop_limit: m.hopLimit,
    snr: m.snr ?? null,
    rssi: m.rssi ?? null,
    via,
    gateway: m.gateway ?? null,
    payload_bytes: m.payloadBytes,
    duplicate: duplicate ? 1 : 0,
    want_ack: m.wantAck ? 1 : 0,
    want_response: m.wantResponse ? 1 : 0,
    request_id: m.requestId >>> 0,
    reply_id: m.replyId >>> 0,
    via_mqtt: m.viaMqtt ? 1 : 0,
  };
}

/** What one write did: the rows as stored (with their ids) and how many old rows it trimmed. */
export interface PacketWrite {
  rows: PacketRow[];
  trimmed: number;
}

export class PacketLogStore {
  private readonly insert: MultiRowStatement;
  private readonly lastId: Statement<[], { id: number | null }>;
  private readonly lastSequence: Statement<[], { seq: number }>;
  private readonly trimTo: Statement<[number]>;
  private readonly firstYoung: Statement<[number], { id: number }>;
  /** One prepared statement per combination of filters (at most 2^10). */
  private readonly pages = new Map<string, Statement>();
  private readonly writeBatch: (sightings: readonly PacketSighting[], maxRows: number) => PacketWrite;

  constructor(private readonly db: Database) {
    migrateComponent(db, 'packets', MIGRATIONS);
    this.insert = new MultiRowStatement(
      db,
      COLUMNS.length,
      (rows) => `INSERT INTO packet_log (${COLUMNS.join(',')}) VALUES ${placeholders(COLUMNS.length, rows)}`,
    );
    this.lastId = db.prepare('SELECT max(id) AS id FROM packet_log');
    this.lastSequence = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'packet_log'");
    this.trimTo = db.prepare('DELETE FROM packet_log WHERE id <= ?');
    this.firstYoung = db.prepare('SELECT id FROM packet_log WHERE ts >= ? ORDER BY id LIMIT 1');
    this.writeBatch = db.transaction((sightings: readonly PacketSighting[], maxRows: number) => {
      // AUTOINCREMENT: the new rows are numbered on from the highest id ever used, in order.
      const next = (this.lastSequence.get()?.seq ?? 0) + 1;
      const rows = sightings.map((s, i) => sightingRow(s, next + i));
      const values: unknown[] = [];
      for (const row of rows) for (const column of COLUMNS) values.push(row[column]);
      this.insert.run(values, rows.length);
      return { rows, trimmed: this.trimToRows(maxRows) };
    });
  }

  /** Writes the sightings and trims to `maxRows` in one transaction. */
  write(sightings: readonly PacketSighting[], maxRows: number): PacketWrite {
    if (sightings.length === 0) return { rows: [], trimmed: 0 };
    return this.writeBatch(sightings, maxRows);
  }

  private trimToRows(maxRows: number): number {
    const last = this.lastId.get()?.id;
    if (last == null || last <= maxRows) return 0;
    return this.trimTo.run(last - maxRows).changes;
  }

  /** Deletes the rows heard before `cutoff` (ms); answers how many. */
  trimOlderThan(cutoff: number): number {
    const young = this.firstYoung.get(cutoff)?.id;
    if (young !== undefined) return this.trimTo.run(young - 1).changes;
    const last = this.lastId.get()?.id;
    return last == null ? 0 : this.trimTo.run(last).changes;
  }

  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM packet_log').get() as { n: number }).n;
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
    if (filter.via !== undefined) add('via = ?', filter.via);
    if (filter.gateway !== undefined) add('gateway = ?', filter.gateway);
    if (filter.duplicate !== undefined) add('duplicate = ?', filter.duplicate ? 1 : 0);
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
