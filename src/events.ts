/**
 * HubEvents: the one event map every actor talks through (CONVENTIONS.md, from zigbee2mqtt's
 * EventBusMap). HubRequests: the requests answered with `bus.ask`.
 */
import type { Bus } from './kernel/bus.js';
import type { NodeUpdate } from './mesh/node.js';
import type { Reading } from './weather/reading.js';

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

/** Where readings came from; counted in metrics. */
export type ReadingSource = 'radio' | 'mqtt' | 'http' | 'sim';

export interface ReadingBatch {
  readings: Reading[];
  source: ReadingSource;
  /**
   * Called once the batch is committed (or failed to commit). Lets MQTT send PUBACK and
   * HTTP answer only after the data is durable.
   */
  onCommitted?: (error?: Error) => void;
}

export interface HubEvents {
  'radio.status': RadioStatus;
  /** A decoded MeshPacket, for whoever cares about port numbers (metrics, messaging). */
  'mesh.packet': {
    portnum: number;
    from: number;
    to: number;
    id: number;
    receivedAt: number;
    via: 'radio' | 'mqtt';
  };
  'mesh.frameError': { reason: string };
  'reading.received': ReadingBatch;
  /** After commit: the readings that were new (duplicates left out). */
  'reading.stored': { readings: Reading[]; source: ReadingSource };
  'node.updated': NodeUpdate;
  'hub.stopping': Record<string, never>;
}

// biome-ignore lint/complexity/noBannedTypes: no requests yet; the messaging gateway adds its own.
export type HubRequests = {};

export type HubBus = Bus<HubEvents, HubRequests>;
