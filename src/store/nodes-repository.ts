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
  private readonly getStatement: Statement<unknown[], NodeRow>;

  constructor(db: Database) {
    // excluded.x is NULL when the update does not carry x: coalesce keeps what is known.
    this.upsertStatement = db
      .prepare(
        `INSERT INTO nodes (${COLUMNS}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
           updated_at = excluded.updated_at
         RETURNING ${COLUMNS}`,
      )
      .raw(true) as Statement<unknown[], NodeRow>;
    this.listStatement = db
      .prepare(`SELECT ${COLUMNS} FROM nodes ORDER BY node_id LIMIT ${MAX_LISTED_NODES}`)
      .raw(true) as Statement<unknown[], NodeRow>;
    this.getStatement = db.prepare(`SELECT ${COLUMNS} FROM nodes WHERE node_id = ?`).raw(true) as Statement<
      unknown[],
      NodeRow
    >;
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
    );
    if (!row) throw new Error(`upserting node ${update.nodeId} returned no row`);
    return fromRow(row);
  }

  /** Every node, ordered by node_id. */
  list(): MeshNode[] {
    return this.listStatement.all().map(fromRow);
  }

  get(nodeId: string): MeshNode | undefined {
    const row = this.getStatement.get(nodeId);
    return row ? fromRow(row) : undefined;
  }
}
