/**
 * The hub's Prometheus metrics (prom-client), one registry per hub so tests stay isolated.
 * Names follow Prometheus conventions: `_total` counters, `_seconds` histograms.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { MailboxStats } from './kernel/actor.js';

/** The request latency histogram the access middleware fills (http/access-metrics.ts). */
export type HttpDurationHistogram = Histogram<'method' | 'route' | 'status'>;

/**
 * `<prefix>http_request_duration_seconds` in `registry`: the hub's (`meshhub_`) and the
 * upstream's (`meshhub_upstream_`) request latency, with the same labels and buckets.
 */
export function httpDurationHistogram(registry: Registry, prefix: string): HttpDurationHistogram {
  return new Histogram({
    name: `${prefix}http_request_duration_seconds`,
    help: 'HTTP request latency by route pattern, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
}

export class HubMetrics {
  readonly registry = new Registry();

  readonly httpDuration = httpDurationHistogram(this.registry, 'meshhub_');

  readonly readingsIngested = new Counter({
    name: 'meshhub_readings_ingested_total',
    help: 'Readings committed to the store (duplicates excluded), by source',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly meshPackets = new Counter({
    name: 'meshhub_mesh_packets_total',
    help: 'Decoded mesh packets by port number name and path (radio or mqtt)',
    labelNames: ['port', 'via'] as const,
    registers: [this.registry],
  });

  readonly meshFrameErrors = new Counter({
    name: 'meshhub_mesh_frame_errors_total',
    help: 'Corrupt frames, undecodable protobufs and payloads from the radio',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly radioReconnects = new Counter({
    name: 'meshhub_radio_reconnects_total',
    help: 'Times the radio link was (re)established after the first connection',
    registers: [this.registry],
  });

  readonly radioConnected = new Gauge({
    name: 'meshhub_radio_connected',
    help: '1 while the radio link has completed its handshake, else 0',
    registers: [this.registry],
  });

  readonly mqttClients = new Gauge({
    name: 'meshhub_mqtt_clients',
    help: 'MQTT clients connected to the embedded broker (TCP and WebSocket)',
    registers: [this.registry],
  });

  readonly mqttIngestMessages = new Counter({
    name: 'meshhub_mqtt_ingest_messages_total',
    help: 'Publishes on ingestion topics by format (envelope, legacy_json, readings_json) and outcome (accepted, duplicate, ignored, or why refused: undecryptable, malformed_envelope, ...)',
    labelNames: ['format', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly mqttAuthFailures = new Counter({
    name: 'meshhub_mqtt_auth_failures_total',
    help: 'MQTT logins refused, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly mqttDenied = new Counter({
    name: 'meshhub_mqtt_denied_total',
    help: 'MQTT publishes (connection closed) and subscriptions (SUBACK 0x80) refused by the ACL',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });

  readonly mqttOversizePackets = new Counter({
    name: 'meshhub_mqtt_oversize_packets_total',
    help: 'MQTT connections closed for announcing a packet over MQTT_MAX_PACKET_BYTES',
    registers: [this.registry],
  });

  readonly ingestRejectedReadings = new Counter({
    name: 'meshhub_ingest_rejected_readings_total',
    help: 'JSON readings refused by validation, by source (mqtt, http) and reason',
    labelNames: ['source', 'reason'] as const,
    registers: [this.registry],
  });

  readonly messages = new Counter({
    name: 'meshhub_messages_total',
    help: 'Texts that reached each status, by direction (outbound: queued, sent, delivered, failed; inbound: received, read)',
    labelNames: ['direction', 'status'] as const,
    registers: [this.registry],
  });

  readonly messageRetries = new Counter({
    name: 'meshhub_message_retries_total',
    help: 'Outbound attempts scheduled again after a transient routing error or a missing acknowledgement',
    registers: [this.registry],
  });

  readonly messageFailures = new Counter({
    name: 'meshhub_message_failures_total',
    help: 'Outbound texts that failed, by reason (a Routing_Error name, or ACK_TIMEOUT)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly messageDeliverySeconds = new Histogram({
    name: 'meshhub_message_delivery_seconds',
    help: "Seconds from a text's POST to the destination's acknowledgement",
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });

  readonly messagesQueued = new Gauge({
    name: 'meshhub_messages_queued',
    help: 'Outbound texts waiting in the send queue (not yet handed to the radio, or waiting for a retry)',
    registers: [this.registry],
  });

  private readonly mailboxDepth = new Gauge({
    name: 'meshhub_mailbox_depth',
    help: 'Messages waiting in each actor mailbox',
    labelNames: ['actor', 'mailbox'] as const,
    registers: [this.registry],
  });

  private readonly mailboxDropped = new Gauge({
    name: 'meshhub_mailbox_dropped',
    help: 'Messages dropped (drop-oldest) or rejected (reject) by each mailbox since start',
    labelNames: ['actor', 'mailbox', 'policy_outcome'] as const,
    registers: [this.registry],
  });

  private mailboxSource: () => MailboxStats[] = () => [];
  /** Called before each scrape: hot paths tally in plain counters and move them here. */
  private readonly beforeRender = new Set<() => void>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'meshhub_' });
  }

  /** Mailbox gauges are read at scrape time from the supervisor's actors. */
  watchMailboxes(source: () => MailboxStats[]): void {
    this.mailboxSource = source;
  }

  /** Registers a function run before each scrape; returns its removal. */
  onRender(fn: () => void): () => void {
    this.beforeRender.add(fn);
    return () => this.beforeRender.delete(fn);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    for (const fn of this.beforeRender) fn();
    this.mailboxDepth.reset();
    this.mailboxDropped.reset();
    for (const m of this.mailboxSource()) {
      this.mailboxDepth.set({ actor: m.actor, mailbox: m.mailbox }, m.depth);
      this.mailboxDropped.set({ actor: m.actor, mailbox: m.mailbox, policy_outcome: 'dropped' }, m.dropped);
      this.mailboxDropped.set({ actor: m.actor, mailbox: m.mailbox, policy_outcome: 'rejected' }, m.rejected);
    }
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
