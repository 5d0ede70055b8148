/**
 * HubEvents: the one event map every actor talks through (docs/architecture.md "The bus", after zigbee2mqtt's
 * EventBusMap). HubRequests: the requests answered with `bus.ask`.
 */
import type { Bus } from '../kernel/bus.js';
import type { DeviceHealthSample, HeardPacket, MeshLink, MeshRoutingReport, MeshText } from './mesh.js';
import type { NodeUpdate } from './node.js';
import type { RadioSendRequest, RadioStatus } from './radio.js';
import type { Reading } from './reading.js';

/** Where readings came from; counted in metrics. */
export type ReadingSource = 'radio' | 'mqtt' | 'http' | 'sim';

/**
 * The core's events. A feature or plugin adds its own beside itself by declaration merging
 * (src/messaging/events.ts, src/billing/events.ts, plugins/audit/events.ts):
 *
 * ```ts
 * declare module '../domain/events.js' {
 *   interface HubEvents { 'message.updated': MessageChange }
 * }
 * ```
 */
export interface HubEvents {
  /**
   * Retained. The radio link's state, owned by the radio actor; `myNodeNum` is the hub's own
   * node (from the device, or remembered from the last connection while the link is down).
   */
  'radio.status': RadioStatus;
  /** The radio answered again after being silent since `quietSince` (ms) without the link dropping. */
  'radio.quietEnded': { quietSince: number };
  /** Retained. Where the built-in simulator listens, once it does. */
  'simulator.listening': { host: string; port: number };
  /** A decoded MeshPacket, for whoever cares about port numbers (metrics, messaging). */
  'mesh.packet': {
    portnum: number;
    from: number;
    to: number;
    id: number;
    receivedAt: number;
    via: 'radio' | 'mqtt';
  };
  /**
   * Every sighting of a decoded packet, duplicates included (`duplicate`: (from, id) was heard
   * before), before `mesh.packet`: the packet log and the mesh-insight features listen here.
   */
  'mesh.heard': { packet: HeardPacket; via: 'radio' | 'mqtt'; duplicate: boolean };
  'mesh.frameError': { reason: string };
  /** After commit: the readings that were new (duplicates left out). */
  'reading.stored': { readings: Reading[]; source: ReadingSource };
  'node.updated': NodeUpdate;
  /** A TEXT_MESSAGE_APP packet (any destination: the gateway keeps those addressed to the hub). */
  'mesh.text': MeshText;
  /** A ROUTING_APP packet: an ACK or NAK for `requestId` (docs/architecture.md "Meshtastic facts"). */
  'mesh.routing': MeshRoutingReport;
  /** A link between two nodes was heard (neighbour info or a traceroute hop): src/topology. */
  'mesh.link': MeshLink;
  /** A node reported its device metrics (stored by src/device-health, watched by notifications). */
  'device.metrics': DeviceHealthSample;
  /**
   * A node reappeared under a new number with the public key of a known one (firmware 2.8 derives
   * the number from the key): each feature moves what it keeps under `oldNodeId` to `newNodeId`.
   */
  'node.renumbered': { oldNodeId: string; newNodeId: string; at: number };
  /** A notification rule fired (src/notifications), in the API's JSON: the live stream shows it. */
  'notification.fired': NotificationFired;
  'hub.stopping': Record<string, never>;
}

/** One stored firing of a notification rule, as `GET /api/v1/notifications/firings` lists it. */
export interface NotificationFired {
  id: number;
  rule_id: number | null;
  kind: string;
  node_id: string;
  subject: string;
  /** ISO 8601 UTC. */
  at: string;
  message: string;
  quiet: boolean;
}

/** Events whose last value the bus keeps (`bus.last`, `on(…, { replay: true })`). */
export const RETAINED_EVENTS = ['radio.status', 'simulator.listening'] as const satisfies ReadonlyArray<
  keyof HubEvents
>;

export interface HubRequests {
  /**
   * Commits readings; answers once they are durable. `urgent`: a sender waits for the answer
   * (a PUBACK, an HTTP response), so commit at the next turn instead of the writer's batching delay.
   */
  'readings.commit': {
    request: { readings: Reading[]; source: ReadingSource; urgent?: boolean };
    // biome-ignore lint/suspicious/noConfusingVoidType: the answer is "committed", nothing more
    response: void;
  };
  /** Hands a packet to the radio; rejects (TransportClosedError) while the link is down. */
  'radio.send': { request: RadioSendRequest; response: { id: number } };
}

export type HubBus = Bus<HubEvents, HubRequests>;
