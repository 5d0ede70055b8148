/**
 * What the broker does with a publish on an ingestion topic (docs/architecture.md "Data flows" 1):
 *
 * - `msh/…/2/e|c|json/…`: a Meshtastic packet (uplink.ts). The first sighting of (from, id) —
 *   through any gateway, or the hub's own radio — feeds the same pipeline as the radio:
 *   `mesh.packet`, `node.updated`, `mesh.text`, `mesh.routing`, readings; later sightings are counted as duplicates and wait
 *   for the first one's commit, so no gateway is acknowledged before the data is stored.
 * - What a gateway cannot vouch for is refused before the dedupe sees it, so the radio's own copy
 *   still counts (README "MQTT: mesh packets and retained messages"): unencrypted packets from a
 *   gateway not in MESH_TRUSTED_GATEWAYS, anything in the name of the hub's own node, every
 *   ACK/NAK (delivery is taken from the hub's radio alone), and texts to the hub's node from an
 *   untrusted gateway (the default channel key is public: anyone can encrypt one).
 * - `meshhub/ingest/readings`: plain JSON readings (reading-input.ts), the good ones stored,
 *   the bad ones counted by reason.
 *
 * `handle` returns a promise that resolves once everything the message carried is committed (the
 * broker holds the QoS 1 PUBACK until then), or nothing when there is nothing to wait for. Bad input never rejects (the message is acknowledged, counted and
 * logged — a sensor resending garbage forever helps nobody); only a failed commit does, and the
 * broker then drops the connection without PUBACK so the client sends again.
 */

import type { MeshPacketFanOut } from '../domain/mesh.js';
import {
  MAX_READINGS_PER_BATCH,
  payloadItems,
  type ReadingRejectReason,
  validateReadings,
} from '../ingest/reading-input.js';
import type { ReadingSink } from '../ingest/reading-sink.js';
import type { Logger } from '../log.js';
import type { MeshUplinkDecoder, UplinkPacket } from '../mesh/mqtt/uplink.js';
import { INGEST_READINGS_TOPIC, MESH_ROOT } from './topics.js';

export type IngestFormat = 'envelope' | 'legacy_json' | 'readings_json' | 'other';

/** `accepted`, `duplicate`, `ignored`, or why the message was refused. */
export type IngestOutcome =
  | 'accepted'
  | 'duplicate'
  | 'ignored'
  | 'malformed_envelope'
  | 'undecryptable'
  | 'malformed_payload'
  | 'malformed_json'
  | 'invalid_readings'
  | 'too_many_readings'
  /** A mesh packet the hub does not believe from MQTT (MeshRefusal says why). */
  | 'refused';

/** Why a mesh packet from MQTT was refused (`meshhub_mqtt_mesh_refused_total{reason}`). */
export type MeshRefusal =
  /** Unencrypted envelope or legacy JSON from a gateway not in MESH_TRUSTED_GATEWAYS. */
  | 'unencrypted_untrusted'
  /** `from` is the hub's own node: only its radio speaks for it. */
  | 'from_hub_node'
  /** An ACK/NAK: delivery is taken from the hub's own radio only. */
  | 'routing'
  /** A text to the hub's node from a gateway not in MESH_TRUSTED_GATEWAYS. */
  | 'text_to_hub_untrusted';

export interface MqttIngestOptions {
  sink: ReadingSink;
  decoder: MeshUplinkDecoder;
  /** Announces first sightings on the bus, shared with the radio path. */
  fanOut: MeshPacketFanOut;
  log: Logger;
  now?: () => number;
  onMessage?: (format: IngestFormat, outcome: IngestOutcome) => void;
  onRejectedReadings?: (reason: ReadingRejectReason, count: number) => void;
  onRefused?: (reason: MeshRefusal) => void;
}

const LOG_EVERY_MS = 10_000;

export class MqttIngest {
  private readonly now: () => number;
  /** Commits in flight per (from, id), for duplicates to wait on. */
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly lastLogged = new Map<string, { at: number; suppressed: number }>();
  /** The hub's own node number once the radio said it (`radio.status`); packets in its name are refused. */
  hubNodeNum: number | undefined;

  constructor(private readonly options: MqttIngestOptions) {
    this.now = options.now ?? Date.now;
  }

  /** `publisher`: the MQTT username (a gateway in MESH_TRUSTED_GATEWAYS may be bound to one). */
  handle(topic: string, payload: Buffer, publisher?: string): Promise<void> | undefined {
    if (topic === INGEST_READINGS_TOPIC) return this.readingsJson(payload);
    if (topic === MESH_ROOT || topic.startsWith(`${MESH_ROOT}/`)) return this.mesh(topic, payload, publisher);
    this.options.onMessage?.('other', 'ignored');
    return undefined;
  }

  private mesh(topic: string, payload: Buffer, publisher: string | undefined): Promise<void> | undefined {
    const now = this.now();
    const result = this.options.decoder.decode(topic, payload, now, publisher);
    const format: IngestFormat = topic.includes('/2/json/') ? 'legacy_json' : 'envelope';
    if (result.kind === 'ignored') {
      this.options.onMessage?.(format, 'ignored');
      return undefined;
    }
    if (result.kind === 'rejected') {
      if (result.reason === 'unencrypted_untrusted') {
        this.refuse(format, result.reason, { topic, publisher, detail: result.detail });
        return undefined;
      }
      this.options.onMessage?.(format, result.reason);
      this.warn(
        result.reason,
        { topic, reason: result.reason, detail: result.detail },
        'mesh uplink refused',
      );
      return undefined;
    }
    const refusal = this.refusal(result);
    if (refusal) {
      this.refuse(format, refusal, { topic, publisher, from: result.from, id: result.id });
      return undefined;
    }
    const key = `${result.from}:${result.id}`;
    if (!this.options.fanOut.deliver(result, 'mqtt', now)) {
      this.options.onMessage?.(format, 'duplicate');
      return this.inflight.get(key);
    }
    this.options.onMessage?.(format, 'accepted');
    if (result.readings.length === 0) return undefined;
    const committed = this.options.sink.submit(result.readings, 'mqtt');
    if (result.id !== 0) {
      this.inflight.set(key, committed);
      const forget = () => this.inflight.delete(key);
      committed.then(forget, forget);
    }
    return committed;
  }

  /** Why the hub does not take this packet from MQTT, if it does not: a few comparisons, no allocation. */
  private refusal(packet: UplinkPacket): MeshRefusal | undefined {
    const hub = this.hubNodeNum;
    if (hub !== undefined && packet.from === hub) return 'from_hub_node';
    if (packet.routing) return 'routing';
    if (packet.text && !packet.trusted && hub !== undefined && packet.text.to === hub)
      return 'text_to_hub_untrusted';
    return undefined;
  }

  private refuse(format: IngestFormat, reason: MeshRefusal, details: Record<string, unknown>): void {
    this.options.onMessage?.(format, 'refused');
    this.options.onRefused?.(reason);
    this.warn(`refused:${reason}`, { ...details, reason }, 'mesh packet from MQTT refused');
  }

  private readingsJson(payload: Buffer): Promise<void> | undefined {
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'));
    } catch {
      this.options.onMessage?.('readings_json', 'malformed_json');
      this.warn('malformed_json', { topic: INGEST_READINGS_TOPIC }, 'readings payload is not valid JSON');
      return undefined;
    }
    const { items, array } = payloadItems(parsed);
    if (items.length > MAX_READINGS_PER_BATCH) {
      this.options.onMessage?.('readings_json', 'too_many_readings');
      this.warn(
        'too_many',
        { items: items.length },
        `at most ${MAX_READINGS_PER_BATCH} readings per message`,
      );
      return undefined;
    }
    const result = validateReadings(items, { nowMs: this.now(), array, maxProblems: 5 });
    if (result.rejected > 0) {
      for (const [reason, count] of Object.entries(result.rejectedByReason)) {
        this.options.onRejectedReadings?.(reason as ReadingRejectReason, count);
      }
      this.warn(
        'invalid_readings',
        { rejected: result.rejected, accepted: result.accepted, problems: result.problems },
        'readings refused',
      );
    }
    if (result.accepted === 0) {
      this.options.onMessage?.('readings_json', 'invalid_readings');
      return undefined;
    }
    this.options.onMessage?.('readings_json', 'accepted');
    return this.options.sink.submit(result.readings, 'mqtt');
  }

  /** One log line per kind of problem every 10 s at most: a misconfigured sensor must not flood the log. */
  private warn(kind: string, details: Record<string, unknown>, message: string): void {
    const now = this.now();
    const last = this.lastLogged.get(kind);
    if (last && now - last.at < LOG_EVERY_MS) {
      last.suppressed++;
      return;
    }
    this.lastLogged.set(kind, { at: now, suppressed: 0 });
    this.options.log.warn(
      { ...details, ...(last?.suppressed ? { suppressedSinceLast: last.suppressed } : {}) },
      message,
    );
  }
}
