/**
 * A mesh node as the hub knows it (the node table behind `GET /api/v1/nodes`).
 * Node ids: `!` + 8 lower-case hex digits of the 32-bit node number (docs/architecture.md "Meshtastic facts").
 */

export const BROADCAST_NODE_NUM = 0xffffffff;

export function nodeIdFromNum(num: number): string {
  return `!${(num >>> 0).toString(16).padStart(8, '0')}`;
}

const NODE_ID = /^!([0-9a-f]{8})$/;

/** The node number of a `!xxxxxxxx` id, or undefined when the id is not of that form. */
export function nodeNumFromId(id: string): number | undefined {
  const m = NODE_ID.exec(id);
  return m ? Number.parseInt(m[1]!, 16) : undefined;
}

/**
 * What one packet or NodeInfo tells about a node. Only the fields present are applied;
 * the store merges them into the node's row.
 */
export interface NodeUpdate {
  nodeNum: number;
  nodeId: string;
  shortName?: string;
  longName?: string;
  hwModel?: string;
  latitude?: number;
  longitude?: number;
  altitude?: number;
  /** Milliseconds since the epoch. */
  lastHeard?: number;
  batteryLevel?: number;
  snr?: number;
  /** `User.public_key` as sent (32 bytes on firmware ≥ 2.5); the nodes feature links renumbered nodes by it. */
  publicKey?: Uint8Array;
}

export interface MeshNode extends NodeUpdate {
  lastHeard?: number;
  /** The ids this node had before it was renumbered (firmware 2.8), oldest first. */
  previousIds?: string[];
}
