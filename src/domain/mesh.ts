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

/**
 * Radio-level facts of one heard packet (MeshPacket fields), for the packet log and the
 * mesh-insight features. Fields the firmware leaves at 0 when it does not know them are absent.
 */
export interface PacketMeta {
  /** MeshPacket.channel: the channel index on the radio, the channel hash on MQTT. */
  channel: number;
  /** Hops the packet still had left when heard (MeshPacket.hop_limit). */
  hopLimit: number;
  /** Hops it started with (MeshPacket.hop_start; firmware 2.3+), absent when 0. */
  hopStart?: number;
  /** SNR (dB) and RSSI (dBm) as the receiving radio measured them; absent when 0. */
  snr?: number;
  rssi?: number;
  /** Data.payload length in bytes. */
  payloadBytes: number;
  wantAck: boolean;
  /** Data.want_response: the sender asks for an answer (traceroute requests set it). */
  wantResponse: boolean;
  /** Data.request_id / Data.reply_id; 0 when none. */
  requestId: number;
  replyId: number;
  /** MeshPacket.via_mqtt: the packet crossed an MQTT bridge on its way. */
  viaMqtt: boolean;
  /** The MQTT gateway (`!xxxxxxxx`) whose uplink brought it, on the MQTT path. */
  gateway?: string;
}

/**
 * The meta of a packet known only by what `known` gives: channel 0, no hops, no payload, no
 * flags, no request or reply (the MQTT JSON uplink; tests that make up a heard packet).
 */
export function packetMeta(known: Partial<PacketMeta> = {}): PacketMeta {
  return {
    channel: 0,
    hopLimit: 0,
    payloadBytes: 0,
    wantAck: false,
    wantResponse: false,
    requestId: 0,
    replyId: 0,
    viaMqtt: false,
    ...known,
  };
}

export interface HeardPacket {
  from: number;
  to: number;
  /** MeshPacket.id: with `from`, the dedupe key. */
  id: number;
  portnum: number;
  receivedAt: number;
  meta: PacketMeta;
  /** Data.payload, undecoded: a feature decodes the ports it knows (traceroute, neighbour info). */
  payload: Uint8Array;
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

/** A radio link between two nodes, as last heard: from a NEIGHBORINFO_APP report or a traceroute hop. */
export interface MeshLink {
  /** The node that reported (or, on a traceroute, the hop that heard) the other: `!xxxxxxxx`. */
  from: string;
  to: string;
  /** SNR in dB of `to` as heard by `from`, when known. */
  snr?: number;
  /** When the link was last heard (ms). */
  lastHeard: number;
  source: 'neighborinfo' | 'traceroute';
}

/** One DEVICE_METRICS report (Telemetry.device_metrics) of a node; absent fields were not sent. */
export interface DeviceHealthSample {
  nodeId: string;
  /** The packet's receive time (ms). */
  at: number;
  /** 0–100; 101 means powered (no battery or charging). */
  batteryLevel?: number;
  voltage?: number;
  /** Percent of airtime the node hears in use, and it used to transmit, over the last hour. */
  channelUtilization?: number;
  airUtilTx?: number;
  uptimeSeconds?: number;
  /**
   * Set on a LocalStats report (Telemetry.local_stats, the hub's own radio): its counters since
   * boot, and the noise floor (dBm) where the firmware sends one.
   */
  localStats?: {
    packetsTx: number;
    packetsRx: number;
    packetsRxBad: number;
    noiseFloor?: number;
  };
}
