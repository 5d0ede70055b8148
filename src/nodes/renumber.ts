/**
 * Nodes that change their number. Firmware 2.8 derives the node number from the public key
 * (`node_num = CRC-32(public_key)`, the zlib CRC over the 32 raw bytes; the firmware's own first
 * contact check enforces the same binding), so a node upgraded from 2.7 keeps its key and
 * reappears under a new number. The rules for linking the old number to the new one (README
 * "Nodes that change their number"):
 *
 * - the key is 32 bytes and not all zeros;
 * - the node's stored key is this key: a number keeps the first key heard for it, so a node
 *   whose key changes is not renumbered, and nobody takes over a number by sending another key;
 * - the new number is CRC-32 of the key: only the number the firmware derives can be a new
 *   number, so there is exactly one possible direction (old → derived) and two numbers heard
 *   alternately with one key never flip-flop;
 * - the old number has not been heard for NODE_RENUMBER_QUIET: a node still speaking under its
 *   old number has not moved (a key is public, so anyone on MQTT can send it: this is what keeps
 *   a live node's history from being taken). A link that must wait is tried again whenever the
 *   new number is heard;
 * - an old id is linked once: if the old number speaks again after the link, it is a node of its
 *   own and is not linked a second time.
 */
import { crc32 } from 'node:zlib';

export const PUBLIC_KEY_BYTES = 32;

/** A key the hub links by: 32 bytes, not all zeros. */
export function isLinkableKey(key: Uint8Array | undefined): key is Uint8Array {
  return key !== undefined && key.length === PUBLIC_KEY_BYTES && key.some((b) => b !== 0);
}

/** The node number firmware 2.8 gives a node with this public key. */
export function nodeNumFromPublicKey(key: Uint8Array): number {
  return crc32(key) >>> 0;
}

export function sameKey(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  return a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b));
}

export interface KeyHolder {
  nodeNum: number;
  nodeId: string;
  lastHeard?: number;
}

export type RenumberVerdict =
  /** Not a renumbering (no usable key, not the derived number, no other node with the key). */
  | { kind: 'none' }
  /** The old number was heard too recently: try again when the new one is heard later. */
  | { kind: 'wait'; old: KeyHolder }
  | { kind: 'link'; old: KeyHolder };

/**
 * Whether `newNum`, heard with `storedKey` (the key kept for it), is a renumbered node among the
 * other nodes with that key (`holders`, those whose old id was never linked before).
 */
export function judgeRenumbering(input: {
  newNum: number;
  storedKey: Uint8Array | undefined;
  holders: readonly KeyHolder[];
  now: number;
  quietMs: number;
}): RenumberVerdict {
  const { newNum, storedKey, holders, now, quietMs } = input;
  if (!isLinkableKey(storedKey) || nodeNumFromPublicKey(storedKey) !== newNum >>> 0) return { kind: 'none' };
  // The most recently heard holder is the one a person knows; others (rare) follow on later sightings.
  const old = [...holders].sort((a, b) => (b.lastHeard ?? 0) - (a.lastHeard ?? 0))[0];
  if (!old) return { kind: 'none' };
  if (old.lastHeard !== undefined && now - old.lastHeard < quietMs) return { kind: 'wait', old };
  return { kind: 'link', old };
}
