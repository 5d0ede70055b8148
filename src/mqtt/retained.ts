/**
 * What the broker keeps as retained messages (README "MQTT: mesh packets and retained
 * messages"). Aedes keeps every retained message in memory for as long as the hub runs and
 * replays it to each new subscriber, so:
 *
 * - on the ingestion topics (`msh/#`, `meshhub/ingest/#`) a client's retained flag is stripped:
 *   the publish is ingested and forwarded live, never kept (a retained `msh/…` message would be
 *   replayed to every gateway that subscribes for downlink, again and again);
 * - elsewhere a client's retained messages are bounded in count and bytes
 *   (MQTT_RETAINED_MAX_MESSAGES, MQTT_RETAINED_MAX_BYTES); past a bound the flag is stripped too;
 * - an empty payload deletes a retained message, as MQTT says, and frees its share;
 * - the hub's own retained state (readings, nodes, availability, status, Home Assistant
 *   discovery) is counted apart and never refused: it is bounded by the nodes the hub knows.
 *
 * Every check is a Map probe and a few additions per retained publish; non-retained publishes
 * cost one boolean test.
 */

export type RetainedOrigin = 'hub' | 'clients';
/** Why a client's retained flag was stripped. */
export type RetainedRefusal = 'ingest_topic' | 'limit';

export interface RetainedLimits {
  maxMessages: number;
  maxBytes: number;
}

/** MQTT_RETAINED_MAX_MESSAGES and MQTT_RETAINED_MAX_BYTES by default: modest, for a Pi. */
export const DEFAULT_RETAINED_LIMITS: Readonly<RetainedLimits> = { maxMessages: 100, maxBytes: 1_048_576 };

interface Held {
  count: number;
  bytes: number;
  readonly sizes: Map<string, number>;
}

const held = (): Held => ({ count: 0, bytes: 0, sizes: new Map() });

export class RetainedLedger {
  private readonly hub = held();
  private readonly clients = held();

  constructor(private readonly limits: RetainedLimits) {}

  /**
   * A client's retained publish on a topic it may publish to: true when it may be kept (and
   * is now counted), false when the retained flag must be stripped. `ingestTopic`: `msh/#` or
   * `meshhub/ingest/#`.
   */
  admitClient(topic: string, payloadBytes: number, ingestTopic: boolean): RetainedRefusal | undefined {
    if (ingestTopic) return 'ingest_topic';
    const { clients } = this;
    const previous = clients.sizes.get(topic);
    if (payloadBytes === 0) {
      // A delete: always allowed (there may be nothing to delete).
      if (previous !== undefined) this.forget(clients, topic, previous);
      return undefined;
    }
    const size = payloadBytes + topic.length;
    const count = clients.count + (previous === undefined ? 1 : 0);
    const bytes = clients.bytes - (previous ?? 0) + size;
    if (count > this.limits.maxMessages || bytes > this.limits.maxBytes) return 'limit';
    clients.sizes.set(topic, size);
    clients.count = count;
    clients.bytes = bytes;
    return undefined;
  }

  /** The hub published `topic` retained (an empty payload deletes it). */
  recordHub(topic: string, payloadBytes: number): void {
    const { hub } = this;
    const previous = hub.sizes.get(topic);
    if (payloadBytes === 0) {
      if (previous !== undefined) this.forget(hub, topic, previous);
      return;
    }
    const size = payloadBytes + topic.length;
    hub.sizes.set(topic, size);
    hub.count += previous === undefined ? 1 : 0;
    hub.bytes += size - (previous ?? 0);
  }

  /** Retained messages held and their bytes (payload and topic), by who published them. */
  held(origin: RetainedOrigin): { messages: number; bytes: number } {
    const h = origin === 'hub' ? this.hub : this.clients;
    return { messages: h.count, bytes: h.bytes };
  }

  private forget(h: Held, topic: string, size: number): void {
    h.sizes.delete(topic);
    h.count--;
    h.bytes -= size;
  }
}
