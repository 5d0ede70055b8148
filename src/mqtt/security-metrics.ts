/**
 * The broker's guards in /metrics (README "MQTT: mesh packets and retained messages"):
 *
 * - `meshhub_mqtt_mesh_refused_total{reason}`: mesh packets from MQTT the hub did not believe
 *   (`unencrypted_untrusted`, `from_hub_node`, `routing`, `text_to_hub_untrusted`);
 * - `meshhub_mqtt_retained_messages{origin}`, `meshhub_mqtt_retained_bytes{origin}`: retained
 *   messages held, by the hub and by clients (payload and topic bytes), read at scrape time;
 * - `meshhub_mqtt_retained_refused_total{reason}`: client publishes whose retained flag was
 *   cleared (`ingest_topic`, `limit`).
 *
 * Made once per registry: the broker actor may be restarted.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { MeshRefusal } from './ingest-router.js';
import type { RetainedLedger, RetainedRefusal } from './retained.js';

export interface MqttGuardMetrics {
  meshRefused: Counter<'reason'>;
  retainedRefused: Counter<'reason'>;
  refusedMesh(reason: MeshRefusal): void;
  refusedRetained(reason: RetainedRefusal): void;
  /** Where the retained gauges read from (the running broker's ledger). */
  watchRetained(ledger: RetainedLedger | undefined): void;
}

const made = new WeakMap<Registry, MqttGuardMetrics>();

export function mqttGuardMetrics(registry: Registry): MqttGuardMetrics {
  const existing = made.get(registry);
  if (existing) return existing;
  let ledger: RetainedLedger | undefined;
  const registers = [registry];
  const read = (gauge: Gauge<'origin'>, field: 'messages' | 'bytes') => {
    if (!ledger) return;
    for (const origin of ['hub', 'clients'] as const) gauge.set({ origin }, ledger.held(origin)[field]);
  };
  const metrics: MqttGuardMetrics = {
    meshRefused: new Counter({
      name: 'meshhub_mqtt_mesh_refused_total',
      help: 'Mesh packets from MQTT not taken, by reason (unencrypted_untrusted, from_hub_node, routing, text_to_hub_untrusted)',
      labelNames: ['reason'] as const,
      registers,
    }),
    retainedRefused: new Counter({
      name: 'meshhub_mqtt_retained_refused_total',
      help: 'Client publishes whose retained flag was cleared (ingest_topic: msh/# or meshhub/ingest/#; limit: MQTT_RETAINED_MAX_*)',
      labelNames: ['reason'] as const,
      registers,
    }),
    refusedMesh(reason) {
      this.meshRefused.inc({ reason });
    },
    refusedRetained(reason) {
      this.retainedRefused.inc({ reason });
    },
    watchRetained(next) {
      ledger = next;
    },
  };
  new Gauge({
    name: 'meshhub_mqtt_retained_messages',
    help: 'Retained messages held by the broker, by origin (hub, clients)',
    labelNames: ['origin'],
    registers,
    collect() {
      read(this, 'messages');
    },
  });
  new Gauge({
    name: 'meshhub_mqtt_retained_bytes',
    help: 'Bytes (payload and topic) of the retained messages held by the broker, by origin (hub, clients)',
    labelNames: ['origin'],
    registers,
    collect() {
      read(this, 'bytes');
    },
  });
  made.set(registry, metrics);
  return metrics;
}
