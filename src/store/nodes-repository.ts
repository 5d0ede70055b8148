/**
 * The node table. Updates come from many packet kinds, each telling part of the story (NodeInfo:
 * names and hardware; Position; DeviceMetrics; any packet: last heard and SNR), so an update
 * merges only the fields it carries: a known name or position is never overwritten by an
 * absent one, and `last_heard` only moves forward (a late relayed packet does not age a node).
 */
import { type MeshNode, type NodeUpdate, nodeIdFromNum } from '../domain/node.js';
import type { Database, Statement } from './database.js';

type NodeRow = [
  node_num: number,
  node_id: string,
  short_name: string | null,
  long_name: string | null,
  hw_model: string | null,
  latitude: number | null,
  longitude: number | null,
  altitude: number | null,
  last_heard: number | null,
  battery_level: number | null,
  snr: number | null,
];

const COLUMNS =
  'node_num, node_id, short_name, long_name, hw_model, latitude, longitude, altitude, last_heard, battery_level, snr';

/** Whole-table reads are bounded: a mesh beyond this many nodes is paged by the caller. */
export const MAX_LISTED_NODES = 10_000;

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function fromRow(row: NodeRow): MeshNode {
  const [
    nodeNum,
    nodeId,
    shortName,
    longName,
    hwModel,
    latitude,
    longitude,
    altitude,
    lastHeard,
    batteryLevel,
    snr,
  ] = row;
  const node: MeshNode = { nodeNum, nodeId };
  if (shortName !== null) node.shortName = shortName;
  if (longName !== null) node.longName = longName;
  if (hwModel !== null) node.hwModel = hwModel;
  if (latitude !== null) node.latitude = latitude;
  if (longitude !== null) node.longitude = longitude;
  if (altitude !== null) node.altitude = altitude;
  if (lastHeard !== null) node.lastHeard = lastHeard;
  if (batteryLevel !== null) node.batteryLevel = batteryLevel;
  if (snr !== null) node.snr = snr;
  return node;
}

export class NodeRepository {
  private readonly upsertStatement: Statement<unknown[], NodeRow>;
  private readonly listStatement: Statement<unknown[], NodeRow>;
  private readonly pageStatement: Statement<unknown[], NodeRow>;
  private readonly pageAliasesStatement: Statement<unknown[], [string, string]>;
  private readonly getStatement: Statement<unknown[], NodeRow>;

  private readonly keyStatement: Statement<unknown[], [Uint8Array | null]>;
  private readonly sameKeyStatement: Statement<unknown[], [number, string, number | null]>;
  private readonly aliasesStatement: Statement<unknown[], [string, string]>;
  private readonly aliasesOfStatement: Statement<unknown[], [string]>;
  private readonly aliasStatement: Statement<unknown[], [string]>;
  private readonly isAliasStatement: Statement<unknown[], [number]>;
  private readonly linkTransaction: (oldNum: number, newNum: number, at: number) => boolean;

  constructor(db: Database) {
    // excluded.x is NULL when the update does not carry x: coalesce keeps what is known.
    this.upsertStatement = db
      .prepare(
        `INSERT INTO nodes (${COLUMNS}, updated_at, public_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (node_num) DO UPDATE SET
           short_name = coalesce(excluded.short_name, short_name),
           long_name = coalesce(excluded.long_name, long_name),
           hw_model = coalesce(excluded.hw_model, hw_model),
           latitude = coalesce(excluded.latitude, latitude),
           longitude = coalesce(excluded.longitude, longitude),
           altitude = coalesce(excluded.altitude, altitude),
           last_heard = CASE
             WHEN last_heard IS NULL OR excluded.last_heard > last_heard THEN coalesce(excluded.last_heard, last_heard)
             ELSE last_heard END,
           battery_level = coalesce(excluded.battery_level, battery_level),
           snr = coalesce(excluded.snr, snr),
           public_key = coalesce(public_key, excluded.public_key),
           updated_at = excluded.updated_at
         RETURNING ${COLUMNS}`,
      )
      .raw(true) as Statement<unknown[], NodeRow>;
    this.listStatement = db
      .prepare(`SELECT ${COLUMNS} FROM nodes ORDER BY node_id LIMIT ${MAX_LISTED_NODES}`)
      .raw(true) as Statement<unknown[], NodeRow>;
    // node_id is UNIQUE (indexed): a page reads its rows from the index, whatever the table's size.
    this.pageStatement = db
      .prepare(`SELECT ${COLUMNS} FROM nodes WHERE node_id > ? ORDER BY node_id LIMIT ?`)
      .raw(true) as Statement<unknown[], NodeRow>;
    this.pageAliasesStatement = db
      .prepare(
        'SELECT node_id, old_node_id FROM node_aliases WHERE node_id BETWEEN ? AND ? ORDER BY node_id, linked_at, old_node_id',
      )
      .raw(true) as Statement<unknown[], [string, string]>;
    this.getStatement = db.prepare(`SELECT ${COLUMNS} FROM nodes WHERE node_id = ?`).raw(true) as Statement<
      unknown[],
      NodeRow
    >;
    const raw = <R>(sql: string) => db.prepare(sql).raw(true) as Statement<unknown[], R>;
    this.keyStatement = raw('SELECT public_key FROM nodes WHERE node_num = ?');
    this.sameKeyStatement = raw(
      'SELECT node_num, node_id, last_heard FROM nodes WHERE public_key = ? AND node_num != ? LIMIT 16',
    );
    this.aliasesStatement = raw(
      `SELECT node_id, old_node_id FROM node_aliases ORDER BY linked_at, old_node_id LIMIT ${MAX_LISTED_NODES}`,
    );
    this.aliasesOfStatement = raw(
      'SELECT old_node_id FROM node_aliases WHERE node_id = ? ORDER BY linked_at, old_node_id LIMIT 100',
    );
    this.aliasStatement = raw('SELECT node_id FROM node_aliases WHERE old_node_id = ?');
    this.isAliasStatement = raw('SELECT 1 FROM node_aliases WHERE old_node_id = ?');
    const merge = db.prepare(
      `UPDATE nodes AS n SET
         short_name = coalesce(n.short_name, o.short_name),
         long_name = coalesce(n.long_name, o.long_name),
         hw_model = coalesce(n.hw_model, o.hw_model),
         latitude = coalesce(n.latitude, o.latitude),
         longitude = coalesce(n.longitude, o.longitude),
         altitude = coalesce(n.altitude, o.altitude),
         last_heard = max(coalesce(n.last_heard, o.last_heard), coalesce(o.last_heard, n.last_heard)),
         battery_level = coalesce(n.battery_level, o.battery_level),
         snr = coalesce(n.snr, o.snr),
         updated_at = ?
       FROM nodes AS o WHERE n.node_num = ? AND o.node_num = ?`,
    );
    const drop = db.prepare('DELETE FROM nodes WHERE node_num = ?');
    const alias = db.prepare(
      'INSERT OR REPLACE INTO node_aliases (old_node_id, node_id, linked_at) VALUES (?, ?, ?)',
    );
    const follow = db.prepare('UPDATE node_aliases SET node_id = ? WHERE node_id = ?');
    this.linkTransaction = db.transaction((oldNum: number, newNum: number, at: number) => {
      if (merge.run(at, newNum, oldNum).changes === 0) return false;
      drop.run(oldNum);
      const oldId = nodeIdFromNum(oldNum);
      const newId = nodeIdFromNum(newNum);
      // An id the old node had before is now an id of the new one too.
      follow.run(newId, oldId);
      alias.run(oldId, newId, at);
      return true;
    });
  }

  /**
   * Merges the fields the update carries into the node's row (creating it); returns the merged
   * node. The node id is always derived from the node number, so the two can never disagree.
   */
  upsert(update: NodeUpdate, now = Date.now()): MeshNode {
    const nodeNum = update.nodeNum >>> 0;
    const row = this.upsertStatement.get(
      nodeNum,
      nodeIdFromNum(nodeNum),
      text(update.shortName),
      text(update.longName),
      text(update.hwModel),
      num(update.latitude),
      num(update.longitude),
      num(update.altitude),
      num(update.lastHeard),
      num(update.batteryLevel),
      num(update.snr),
      now,
      update.publicKey && update.publicKey.length > 0 ? Buffer.from(update.publicKey) : null,
    );
    if (!row) throw new Error(`upserting node ${update.nodeId} returned no row`);
    return fromRow(row);
  }

  /** Every node, ordered by node_id, with the ids it had before it was renumbered. */
  list(): MeshNode[] {
    const previous = new Map<string, string[]>();
    for (const [nodeId, oldId] of this.aliasesStatement.all()) {
      const ids = previous.get(nodeId);
      if (ids) ids.push(oldId);
      else previous.set(nodeId, [oldId]);
    }
    return this.listStatement.all().map((row) => {
      const node = fromRow(row);
      const ids = previous.get(node.nodeId);
      if (ids) node.previousIds = ids;
      return node;
    });
  }

  /**
   * Up to `limit` nodes with a node_id after `after` (from the first when undefined), ordered by
   * node_id, with the ids they had before they were renumbered; `more` when nodes remain after
   * the page. Reads the page's rows and their aliases through indexes: its cost follows the page,
   * not the size of the node table.
   */
  page(limit: number, after?: string): { nodes: MeshNode[]; more: boolean } {
    const rows = this.pageStatement.all(after ?? '', limit + 1);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    const nodes = rows.map(fromRow);
    if (nodes.length > 0) {
      const byId = new Map(nodes.map((n) => [n.nodeId, n]));
      for (const [nodeId, oldId] of this.pageAliasesStatement.all(nodes[0]!.nodeId, nodes.at(-1)!.nodeId)) {
        const node = byId.get(nodeId);
        if (!node) continue;
        if (node.previousIds) node.previousIds.push(oldId);
        else node.previousIds = [oldId];
      }
    }
    return { nodes, more };
  }

  get(nodeId: string): MeshNode | undefined {
    const row = this.getStatement.get(nodeId);
    if (!row) return undefined;
    const node = fromRow(row);
    const ids = this.aliasesOfStatement.all(node.nodeId).map(([id]) => id);
    if (ids.length > 0) node.previousIds = ids;
    return node;
  }

  /**
   * The id a node goes by now: `nodeId` itself when a node has it (or nothing is known of it),
   * else the id of the node it was renumbered to.
   */
  resolve(nodeId: string): string {
    if (this.getStatement.get(nodeId)) return nodeId;
    return this.aliasStatement.get(nodeId)?.[0] ?? nodeId;
  }

  /** The node's stored public key (the first one heard), if any. */
  publicKey(nodeNum: number): Uint8Array | undefined {
    const key = this.keyStatement.get(nodeNum >>> 0)?.[0];
    return key ? new Uint8Array(key) : undefined;
  }

  /** Other nodes that were heard with `key` (a handful at most). */
  withPublicKey(
    key: Uint8Array,
    exceptNum: number,
  ): Array<{ nodeNum: number; nodeId: string; lastHeard?: number }> {
    return this.sameKeyStatement
      .all(Buffer.from(key), exceptNum >>> 0)
      .map(([nodeNum, nodeId, lastHeard]) =>
        lastHeard === null ? { nodeNum, nodeId } : { nodeNum, nodeId, lastHeard },
      );
  }

  /** Whether `nodeId` is the old id of a renumbered node. */
  isOldId(nodeId: string): boolean {
    return this.isAliasStatement.get(nodeId) !== undefined;
  }

  /**
   * Links a renumbered node in one transaction: what the old row knows fills what the new row
   * does not, the old row goes, and the old id (and every id it had) points at the new one.
   * False when either row is missing (nothing changed).
   */
  link(oldNum: number, newNum: number, at = Date.now()): boolean {
    return this.linkTransaction(oldNum >>> 0, newNum >>> 0, at);
  }
}
