/**
 * The radio link as the rest of the hub sees it: its state (retained on the bus as
 * `radio.status`) and what a module hands the radio to send.
 */

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
  channel?: number;
}
