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

/** A row of a metric table: the help text, and the label names when the metric has any. */
export type MetricHelp = string | readonly [help: string, labelNames: readonly string[]];

/** The label names a table row declares (`string` for a metric without labels, prom-client's default). */
type RowLabels<R> = R extends readonly [string, readonly (infer L extends string)[]] ? L : string;

/** What `declareCounters`/`declareGauges` pass to the factory: a hub module's `counter`/`gauge`, or a registry's. */
type MetricConfig = { name: string; help: string; labelNames: string[] };

/** Declares, in table order, one metric per `{ name: help }` row with `make`, keyed by name. */
function declareMetrics<M>(make: (config: MetricConfig) => M, table: Record<string, MetricHelp>) {
  const declared: Record<string, M> = {};
  for (const [name, row] of Object.entries(table)) {
    const [help, labelNames = []] = typeof row === 'string' ? [row] : row;
    declared[name] = make({ name, help, labelNames: [...labelNames] });
  }
  return declared;
}

/** The counters of a `{ name: help }` (or `{ name: [help, labelNames] }`) table, made by `make`, keyed by name. */
export function declareCounters<const T extends Record<string, MetricHelp>>(
  make: (config: MetricConfig) => Counter<string>,
  table: T,
): { [N in keyof T]: Counter<RowLabels<T[N]>> } {
  return declareMetrics(make, table) as { [N in keyof T]: Counter<RowLabels<T[N]>> };
}

/** The gauges of a `{ name: help }` (or `{ name: [help, labelNames] }`) table, made by `make`, keyed by name. */
export function declareGauges<const T extends Record<string, MetricHelp>>(
  make: (config: MetricConfig) => Gauge<string>,
  table: T,
): { [N in keyof T]: Gauge<RowLabels<T[N]>> } {
  return declareMetrics(make, table) as { [N in keyof T]: Gauge<RowLabels<T[N]>> };
}

export class HubMetrics {
  readonly registry = new Registry();

  readonly httpDuration = httpDurationHistogram(this.registry, 'meshhub_');

  /** The hub's counters, keyed by name without the `meshhub_` prefix. */
  private readonly counters = declareCounters((config) => this.counter(config), {
    readings_ingested_total: ['Readings committed to the store (duplicates excluded), by source', ['source']],
    mesh_packets_total: [
      'Decoded mesh packets by port number name and path (radio or mqtt)',
      ['port', 'via'],
    ],
    mesh_frame_errors_total: [
      'Corrupt frames, undecodable protobufs and payloads from the radio',
      ['reason'],
    ],
    radio_reconnects_total: 'Times the radio link was (re)established after the first connection',
    mqtt_ingest_messages_total: [
      'Publishes on ingestion topics by format (envelope, legacy_json, readings_json) and outcome (accepted, duplicate, ignored, or why refused: undecryptable, malformed_envelope, ...)',
      ['format', 'outcome'],
    ],
    mqtt_auth_failures_total: ['MQTT logins refused, by reason', ['reason']],
    mqtt_denied_total: [
      'MQTT publishes (connection closed) and subscriptions (SUBACK 0x80) refused by the ACL',
      ['action'],
    ],
    mqtt_oversize_packets_total: 'MQTT connections closed for announcing a packet over MQTT_MAX_PACKET_BYTES',
    ingest_rejected_readings_total: [
      'JSON readings refused by validation, by source (mqtt, http) and reason',
      ['source', 'reason'],
    ],
    messages_total: [
      'Texts that reached each status, by direction (outbound: queued, sent, delivered, failed; inbound: received, read)',
      ['direction', 'status'],
    ],
    message_retries_total:
      'Outbound attempts scheduled again after a transient routing error or a missing acknowledgement',
    message_failures_total: [
      'Outbound texts that failed, by reason (a Routing_Error name, or ACK_TIMEOUT)',
      ['reason'],
    ],
  });

  /** The hub's gauges, keyed by name without the `meshhub_` prefix. */
  private readonly gauges = declareGauges((config) => this.gauge(config), {
    radio_connected: '1 while the radio link has completed its handshake, else 0',
    mqtt_clients: 'MQTT clients connected to the embedded broker (TCP and WebSocket)',
    messages_queued:
      'Outbound texts waiting in the send queue (not yet handed to the radio, or waiting for a retry)',
    mailbox_depth: ['Messages waiting in each actor mailbox', ['actor', 'mailbox']],
    mailbox_dropped: [
      'Messages dropped (drop-oldest) or rejected (reject) by each mailbox since start',
      ['actor', 'mailbox', 'policy_outcome'],
    ],
  });

  readonly readingsIngested = this.counters.readings_ingested_total;
  readonly meshPackets = this.counters.mesh_packets_total;
  readonly meshFrameErrors = this.counters.mesh_frame_errors_total;
  readonly radioReconnects = this.counters.radio_reconnects_total;
  readonly radioConnected = this.gauges.radio_connected;
  readonly mqttClients = this.gauges.mqtt_clients;
  readonly mqttIngestMessages = this.counters.mqtt_ingest_messages_total;
  readonly mqttAuthFailures = this.counters.mqtt_auth_failures_total;
  readonly mqttDenied = this.counters.mqtt_denied_total;
  readonly mqttOversizePackets = this.counters.mqtt_oversize_packets_total;
  readonly ingestRejectedReadings = this.counters.ingest_rejected_readings_total;
  readonly messages = this.counters.messages_total;
  readonly messageRetries = this.counters.message_retries_total;
  readonly messageFailures = this.counters.message_failures_total;

  readonly messageDeliverySeconds = new Histogram({
    name: 'meshhub_message_delivery_seconds',
    help: "Seconds from a text's POST to the destination's acknowledgement",
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });

  readonly messagesQueued = this.gauges.messages_queued;
  private readonly mailboxDepth = this.gauges.mailbox_depth;
  private readonly mailboxDropped = this.gauges.mailbox_dropped;

  private mailboxSource: () => MailboxStats[] = () => [];
  /** Called before each scrape: hot paths tally in plain counters and move them here. */
  private readonly beforeRender = new Set<() => void>();

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'meshhub_' });
  }

  /** A counter `meshhub_<name>` in this registry. */
  private counter(config: MetricConfig) {
    return new Counter({ ...config, name: `meshhub_${config.name}`, registers: [this.registry] });
  }

  /** A gauge `meshhub_<name>` in this registry. */
  private gauge(config: MetricConfig) {
    return new Gauge({ ...config, name: `meshhub_${config.name}`, registers: [this.registry] });
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
