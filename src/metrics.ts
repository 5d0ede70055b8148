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

  readonly readingsIngested = this.counter(
    'readings_ingested_total',
    'Readings committed to the store (duplicates excluded), by source',
    ['source'],
  );

  readonly meshPackets = this.counter(
    'mesh_packets_total',
    'Decoded mesh packets by port number name and path (radio or mqtt)',
    ['port', 'via'],
  );

  readonly meshFrameErrors = this.counter(
    'mesh_frame_errors_total',
    'Corrupt frames, undecodable protobufs and payloads from the radio',
    ['reason'],
  );

  readonly radioReconnects = this.counter(
    'radio_reconnects_total',
    'Times the radio link was (re)established after the first connection',
  );

  readonly radioConnected = this.gauge(
    'radio_connected',
    '1 while the radio link has completed its handshake, else 0',
  );

  readonly mqttClients = this.gauge(
    'mqtt_clients',
    'MQTT clients connected to the embedded broker (TCP and WebSocket)',
  );

  readonly mqttIngestMessages = this.counter(
    'mqtt_ingest_messages_total',
    'Publishes on ingestion topics by format (envelope, legacy_json, readings_json) and outcome (accepted, duplicate, ignored, or why refused: undecryptable, malformed_envelope, ...)',
    ['format', 'outcome'],
  );

  readonly mqttAuthFailures = this.counter('mqtt_auth_failures_total', 'MQTT logins refused, by reason', [
    'reason',
  ]);

  readonly mqttDenied = this.counter(
    'mqtt_denied_total',
    'MQTT publishes (connection closed) and subscriptions (SUBACK 0x80) refused by the ACL',
    ['action'],
  );

  readonly mqttOversizePackets = this.counter(
    'mqtt_oversize_packets_total',
    'MQTT connections closed for announcing a packet over MQTT_MAX_PACKET_BYTES',
  );

  readonly ingestRejectedReadings = this.counter(
    'ingest_rejected_readings_total',
    'JSON readings refused by validation, by source (mqtt, http) and reason',
    ['source', 'reason'],
  );

  readonly messages = this.counter(
    'messages_total',
    'Texts that reached each status, by direction (outbound: queued, sent, delivered, failed; inbound: received, read)',
    ['direction', 'status'],
  );

  readonly messageRetries = this.counter(
    'message_retries_total',
    'Outbound attempts scheduled again after a transient routing error or a missing acknowledgement',
  );

  readonly messageFailures = this.counter(
    'message_failures_total',
    'Outbound texts that failed, by reason (a Routing_Error name, or ACK_TIMEOUT)',
    ['reason'],
  );

  readonly messageDeliverySeconds = new Histogram({
    name: 'meshhub_message_delivery_seconds',
    help: "Seconds from a text's POST to the destination's acknowledgement",
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });

  readonly messagesQueued = this.gauge(
    'messages_queued',
    'Outbound texts waiting in the send queue (not yet handed to the radio, or waiting for a retry)',
  );

  private readonly mailboxDepth = this.gauge('mailbox_depth', 'Messages waiting in each actor mailbox', [
    'actor',
    'mailbox',
  ]);

  private readonly mailboxDropped = this.gauge(
    'mailbox_dropped',
    'Messages dropped (drop-oldest) or rejected (reject) by each mailbox since start',
    ['actor', 'mailbox', 'policy_outcome'],
  );

  private mailboxSource: () => MailboxStats[] = () => [];
  /** Called before each scrape: hot paths tally in plain counters and move them here. */
  private readonly beforeRender = new Set<() => void>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'meshhub_' });
  }

  /** A counter `meshhub_<name>` in this registry. */
  private counter<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new Counter<L>({ name: `meshhub_${name}`, help, labelNames, registers: [this.registry] });
  }

  /** A gauge `meshhub_<name>` in this registry. */
  private gauge<L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new Gauge<L>({ name: `meshhub_${name}`, help, labelNames, registers: [this.registry] });
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
