/**
 * The radio link as the rest of the hub sees it: its state (retained on the bus as
 * `radio.status`), what a module hands the radio to send, and a tap on the link.
 */
import type { Mesh } from '@meshtastic/protobufs';

export type RadioLinkState = 'disconnected' | 'connecting' | 'configuring' | 'connected';

export interface RadioStatus {
  state: RadioLinkState;
  /** 'serial' | 'tcp'; 'none' when RADIO=none. */
  transport: 'serial' | 'tcp' | 'none';
  /** `/dev/ttyUSB0` or `127.0.0.1:4403`. */
  address?: string;
  /** True when the link is to the built-in simulator. */
  simulated: boolean;
  /** The hub's own node, once the device said (MyNodeInfo.my_node_num). */
  myNodeNum?: number;
  lastError?: string;
}

/** A MeshPacket for the radio to send (ToRadio.packet with Data `portnum`/`payload`). */
export interface RadioSendRequest {
  /** Destination node number; 0xFFFFFFFF is broadcast. */
  to: number;
  /** MeshPacket.id: a random non-zero uint32 chosen by the sender, echoed in ROUTING_APP request_id. */
  id: number;
  portnum: number;
  payload: Uint8Array;
  wantAck: boolean;
  /** Data.want_response: the destination should answer (a traceroute request). */
  wantResponse?: boolean;
  channel?: number;
}

/**
 * A second view of the radio link (the mesh API's mirror, src/mesh-api/radio-mirror.ts): the
 * radio actor hands it every FromRadio and every packet the hub sent, and lends it a raw send.
 */
export interface RadioTap {
  fromRadio(message: Mesh.FromRadio, receivedAt: number): void;
  sent(packet: Mesh.MeshPacket): void;
  /** The radio's raw send while the link runs; undefined once it stops. */
  attachSender(sender: ((packet: Mesh.MeshPacket) => Promise<void>) | undefined): void;
}
