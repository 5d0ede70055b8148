/**
 * What the hub makes of a heard mesh packet (decoded once, whichever way it came: the hub's own
 * radio or an MQTT gateway), and the one place such packets are announced on the bus.
 */
import type { NodeUpdate } from './node.js';
import type { Reading } from './reading.js';

/** How a packet reached the hub. */
export type HeardVia = 'radio' | 'mqtt';

/** A TEXT_MESSAGE_APP packet: `text` is Data.payload as UTF-8. */
export interface MeshText {
  from: number;
  to: number;
  /** MeshPacket.id: with `from`, identifies the packet across duplicates. */
  id: number;
  channel: number;
  text: string;
  /** Data.reply_id: the packet this one answers, 0 when none. */
  replyId: number;
  /** The hub's clock when it arrived (ms). */
  receivedAt: number;
  via: HeardVia;
}

/** A ROUTING_APP packet answering `requestId` (Data.request_id): an ACK when `errorReason` is 0 (NONE). */
export interface MeshRoutingReport {
  from: number;
  to: number;
  requestId: number;
  /** Routing.error_reason (Routing_Error); 0 = NONE. */
  errorReason: number;
  /** The Routing_Error name: `NONE`, `MAX_RETRANSMIT`, `NO_RESPONSE`, ... */
  errorName: string;
  receivedAt: number;
  via: HeardVia;
}

export interface HeardPacket {
  from: number;
  to: number;
  /** MeshPacket.id: with `from`, the dedupe key. */
  id: number;
  portnum: number;
  receivedAt: number;
  readings: Reading[];
  nodes: NodeUpdate[];
  /** A text message (to the hub, someone else or the channel: messaging decides). */
  text?: MeshText;
  /** An ACK/NAK (messaging applies the ones for its packets). */
  routing?: MeshRoutingReport;
}

/** Announces a heard packet on the bus once (dedupe on from and packet id): src/mesh/packet-fanout.ts. */
export interface MeshPacketFanOut {
  /** Announces a first sighting and returns true; returns false for a repeat. */
  deliver(packet: HeardPacket, via: HeardVia, now?: number): boolean;
}
