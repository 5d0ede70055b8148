/**
 * The topology's tables (their own migrations, src/store/component-migrations.ts): traceroutes
 * the hub sent or heard, and the latest of each link per (from, to, source). Both are bounded by
 * age (TOPOLOGY_RETENTION_DAYS); links are also one row per pair and source, whatever the traffic.
 */
import type { MeshLink } from '../domain/mesh.js';
import { migrateComponent } from '../store/component-migrations.js';
import type { Database, Statement } from '../store/database.js';
import type { RouteHop } from './mesh-decode.js';
import type { TracerouteStatus } from './schemas.js';

const MIGRATIONS = [
  {
    version: 1,
    name: 'traceroutes and links',
    up: `
      CREATE TABLE topology_traceroutes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        node_id TEXT NOT NULL,
        origin_id TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('hub', 'heard')),
        status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'no_answer', 'refused')),
        packet_id INTEGER NOT NULL,
        reply_key TEXT UNIQUE,
        requested_at INTEGER NOT NULL,
        answered_at INTEGER,
        deadline INTEGER,
        route TEXT NOT NULL DEFAULT '[]',
        route_back TEXT NOT NULL DEFAULT '[]',
        error TEXT
      );
      CREATE INDEX topology_traceroutes_node ON topology_traceroutes (node_id, seq);
      CREATE INDEX topology_traceroutes_requested ON topology_traceroutes (requested_at);
      CREATE INDEX topology_traceroutes_packet ON topology_traceroutes (packet_id) WHERE source = 'hub';
      CREATE TABLE topology_links (
        from_id TEXT NOT NULL,
        to_id TEXT NOT NULL,
        source TEXT NOT NULL,
        snr REAL,
        last_heard INTEGER NOT NULL,
        PRIMARY KEY (from_id, to_id, source)
      ) WITHOUT ROWID;
      CREATE INDEX topology_links_heard ON topology_links (last_heard);
    `,
  },
];

/** The most links one answer lists: a mesh larger than this is read with `node_id` or `since`. */
export const MAX_LISTED_LINKS = 10_000;

export interface Traceroute {
  id: string;
  /** Insertion order: lists are newest first by it (ids made in the same millisecond do not sort). */
  seq?: number;
  nodeId: string;
  originId: string;
  source: 'hub' | 'heard';
  status: TracerouteStatus;
  packetId: number;
  requestedAt: number;
  answeredAt?: number;
  deadline?: number;
  route: RouteHop[];
  routeBack: RouteHop[];
  error?: string;
}

interface TracerouteRow {
  seq: number;
  id: string;
  node_id: string;
  origin_id: string;
  source: 'hub' | 'heard';
  status: TracerouteStatus;
  packet_id: number;
  requested_at: number;
  answered_at: number | null;
  deadline: number | null;
  route: string;
  route_back: string;
  error: string | null;
}

interface LinkRow {
  from_id: string;
  to_id: string;
  source: MeshLink['source'];
  snr: number | null;
  last_heard: number;
}

function fromRow(row: TracerouteRow): Traceroute {
  const { answered_at: answeredAt, deadline, error } = row;
  const trace: Traceroute = {
    id: row.id,
    seq: row.seq,
    nodeId: row.node_id,
    originId: row.origin_id,
    source: row.source,
    status: row.status,
    packetId: row.packet_id,
    requestedAt: row.requested_at,
    route: JSON.parse(row.route) as RouteHop[],
    routeBack: JSON.parse(row.route_back) as RouteHop[],
  };
  if (answeredAt !== null) trace.answeredAt = answeredAt;
  if (deadline !== null) trace.deadline = deadline;
  if (error !== null) trace.error = error;
  return trace;
}

/** Which link: the store keeps one per (from, to, source). */
export type LinkKey = Pick<MeshLink, 'from' | 'to' | 'source'>;

function linkFromRow(row: LinkRow): MeshLink {
  return {
    from: row.from_id,
    to: row.to_id,
    ...(row.snr === null ? {} : { snr: row.snr }),
    lastHeard: row.last_heard,
    source: row.source,
  };
}

/** A condition and its values; undefined values leave the condition out. */
type Condition = readonly [sql: string, values: unknown[] | undefined];

export class TopologyRepository {
  private readonly insertTrace: Statement;
  private readonly upsertLinkRow: Statement;
  private readonly byId: Statement<[string], TracerouteRow>;

  constructor(private readonly db: Database) {
    migrateComponent(db, 'topology', MIGRATIONS);
    this.insertTrace = db.prepare(`
      INSERT OR IGNORE INTO topology_traceroutes
        (id, node_id, origin_id, source, status, packet_id, reply_key, requested_at, answered_at, deadline, route, route_back, error)
      VALUES (@id, @nodeId, @originId, @source, @status, @packetId, @replyKey, @requestedAt, @answeredAt, @deadline, @route, @routeBack, @error)`);
    this.upsertLinkRow = db.prepare(`
      INSERT INTO topology_links (from_id, to_id, source, snr, last_heard) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (from_id, to_id, source) DO UPDATE SET snr = excluded.snr, last_heard = excluded.last_heard
      WHERE excluded.last_heard >= topology_links.last_heard`);
    this.byId = db.prepare('SELECT * FROM topology_traceroutes WHERE id = ?');
  }

  /** Stores a traceroute; false when a heard one with the same `replyKey` is already stored. */
  insert(trace: Traceroute, replyKey?: string): boolean {
    const result = this.insertTrace.run({
      id: trace.id,
      nodeId: trace.nodeId,
      originId: trace.originId,
      source: trace.source,
      status: trace.status,
      packetId: trace.packetId,
      replyKey: replyKey ?? null,
      requestedAt: trace.requestedAt,
      answeredAt: trace.answeredAt ?? null,
      deadline: trace.deadline ?? null,
      route: JSON.stringify(trace.route),
      routeBack: JSON.stringify(trace.routeBack),
      error: trace.error ?? null,
    });
    return result.changes === 1;
  }

  get(id: string): Traceroute | undefined {
    const row = this.byId.get(id);
    return row ? fromRow(row) : undefined;
  }

  /** The hub's traceroute whose request went out as `packetId` (the newest, should an id recur). */
  hubByPacket(packetId: number): Traceroute | undefined {
    const row = this.db
      .prepare(
        "SELECT * FROM topology_traceroutes WHERE packet_id = ? AND source = 'hub' ORDER BY seq DESC LIMIT 1",
      )
      .get(packetId >>> 0) as TracerouteRow | undefined;
    return row ? fromRow(row) : undefined;
  }

  pending(): Traceroute[] {
    return (
      this.db.prepare("SELECT * FROM topology_traceroutes WHERE status = 'pending'").all() as TracerouteRow[]
    ).map(fromRow);
  }

  /** Ends a pending traceroute; false when it was no longer pending. */
  finish(
    id: string,
    outcome: {
      status: Exclude<TracerouteStatus, 'pending'>;
      at: number;
      route?: RouteHop[];
      routeBack?: RouteHop[];
      error?: string;
    },
  ): boolean {
    const result = this.db
      .prepare(
        `UPDATE topology_traceroutes SET status = ?, answered_at = ?, route = ?, route_back = ?, error = ?
         WHERE id = ? AND status = 'pending'`,
      )
      .run(
        outcome.status,
        outcome.status === 'answered' ? outcome.at : null,
        JSON.stringify(outcome.route ?? []),
        JSON.stringify(outcome.routeBack ?? []),
        outcome.error ?? null,
        id,
      );
    return result.changes === 1;
  }

  /** The newest request the hub sent (ms), for the firmware's one-per-30-s limit across restarts. */
  lastHubRequest(): number | undefined {
    const row = this.db
      .prepare("SELECT max(requested_at) AS at FROM topology_traceroutes WHERE source = 'hub'")
      .get() as { at: number | null };
    return row.at ?? undefined;
  }

  /** Newest first; `before`: the seq the previous page ended at. One more than `limit` tells a next page exists. */
  list(filter: { nodeId?: string; before?: number }, limit: number): Traceroute[] {
    return this.select<TracerouteRow>(
      'topology_traceroutes',
      [
        ['node_id = ?', filter.nodeId === undefined ? undefined : [filter.nodeId]],
        ['seq < ?', filter.before === undefined ? undefined : [filter.before]],
      ],
      'seq DESC',
      limit,
    ).map(fromRow);
  }

  /** Rows of `table` meeting the given conditions, in `order`, at most `limit`. */
  private select<R>(table: string, conditions: readonly Condition[], order: string, limit: number): R[] {
    const given = conditions.filter(([, values]) => values !== undefined);
    const where = given.length ? `WHERE ${given.map(([sql]) => sql).join(' AND ')}` : '';
    return this.db
      .prepare(`SELECT * FROM ${table} ${where} ORDER BY ${order} LIMIT ?`)
      .all(...given.flatMap(([, values]) => values!), limit) as R[];
  }

  /** Keeps the link's newest state; false when it was older than what is stored (nothing changed). */
  upsertLink(link: MeshLink): boolean {
    return (
      this.upsertLinkRow.run(link.from, link.to, link.source, link.snr ?? null, link.lastHeard).changes > 0
    );
  }

  /** The newest links first, at most MAX_LISTED_LINKS. */
  links(filter: { nodeId?: string; since?: number }): MeshLink[] {
    const node = filter.nodeId;
    return this.select<LinkRow>(
      'topology_links',
      [
        ['(from_id = ? OR to_id = ?)', node === undefined ? undefined : [node, node]],
        ['last_heard >= ?', filter.since === undefined ? undefined : [filter.since]],
      ],
      'last_heard DESC',
      MAX_LISTED_LINKS,
    ).map(linkFromRow);
  }

  /** Deletes traceroutes requested and links last heard before `cutoff` (ms); returns how many rows went. */
  /** Deletes ended traceroutes and links older than `cutoff`; returns how many traceroutes and which links. */
  prune(cutoff: number): { traceroutes: number; links: LinkKey[] } {
    return this.db.transaction(() => {
      const traceroutes = this.db
        .prepare("DELETE FROM topology_traceroutes WHERE requested_at < ? AND status != 'pending'")
        .run(cutoff).changes;
      const links = this.db
        .prepare('DELETE FROM topology_links WHERE last_heard < ? RETURNING from_id, to_id, source')
        .all(cutoff) as Pick<LinkRow, 'from_id' | 'to_id' | 'source'>[];
      return { traceroutes, links: links.map((r) => ({ from: r.from_id, to: r.to_id, source: r.source })) };
    })();
  }

  /** A node's new number (firmware 2.8): its traceroutes and links follow it. */
  renumber(oldNodeId: string, newNodeId: string): void {
    const moves = [
      'UPDATE topology_traceroutes SET node_id = ? WHERE node_id = ?',
      'UPDATE topology_traceroutes SET origin_id = ? WHERE origin_id = ?',
      'UPDATE OR REPLACE topology_links SET from_id = ? WHERE from_id = ?',
      'UPDATE OR REPLACE topology_links SET to_id = ? WHERE to_id = ?',
    ];
    this.db.transaction(() => {
      for (const sql of moves) this.db.prepare(sql).run(newNodeId, oldNodeId);
    })();
  }
}
