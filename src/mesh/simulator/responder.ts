/**
 * The simulator's extension point for packets a client sends (ToRadio.packet): ACKs, replies
 * from simulated people, admin answers. Like Aedes' `authorizePublish`, a plain injected object
 * with a safe default; the session already does what every firmware does (assigns `from` and a
 * packet id when missing, answers with a QueueStatus) before calling it.
 */
import type { Mesh } from '@meshtastic/protobufs';
import type { Logger } from '../../log.js';
import type { SimNetwork } from './nodes.js';

/** One connected client, as a responder sees it. */
export interface SimClient {
  readonly network: SimNetwork;
  readonly log: Logger;
  now(): number;
  /**
   * Delivers a packet to this client as if the simulator's radio heard it now: `rx_time`,
   * `rx_snr`/`rx_rssi` and a packet id are filled in when missing. Ignored once the client is gone.
   */
  deliver(packet: Mesh.MeshPacket): void;
  /** Runs `fn` later unless the client has gone away by then (its timers die with it). */
  after(delayMs: number, fn: () => void): void;
}

export interface PacketResponder {
  /** A MeshPacket the client handed to the radio. May throw: the error is logged, the session lives on. */
  onPacket(packet: Mesh.MeshPacket, client: SimClient): void | Promise<void>;
  /** The client's live traffic begins (after the handshake and backfill): schedule reports here. */
  onStart?(client: SimClient): void;
}

/** The default: the radio transmits into a mesh that never answers. */
export const silentResponder: PacketResponder = {
  onPacket() {},
};
