/**
 * The hub's events out (README "MQTT topics"), all retained so a subscriber gets the current
 * state the moment it subscribes:
 *
 * - `meshhub/status`: `online` while the hub runs, `offline` published on the way down;
 * - `meshhub/readings/<node_id>`: the node's latest merged reading, after each commit;
 * - `meshhub/nodes/<node_id>`: the node record (as `GET /api/v1/nodes`) after each update;
 * - `meshhub/nodes/<node_id>/availability`: `online` while the node was heard within
 *   `offlineAfterMs`, else `offline` (checked periodically and on every update);
 * - Home Assistant discovery configs (ha-discovery.ts), when enabled, for each metric a node has.
 *
 * Updates are coalesced: every node changed within `coalesceMs` is published once, from the
 * store (never from the event payload, which may be partial), so a burst of thousands of
 * readings costs one message per node. At start everything known is published again: the
 * broker keeps retained messages in memory only.
 */

import type { MeshNode } from '../domain/node.js';
import type { ReadingMetric } from '../domain/reading.js';
import type { Logger } from '../log.js';
import { nodeJson } from '../nodes/routes.js';
import { type DiscoveryDevice, discoveryMessage } from './ha-discovery.js';
import type { LatestReading, LatestReadings } from './latest-readings.js';
import { availabilityTopic, HUB_STATUS_TOPIC, nodeTopic, readingTopic } from './topics.js';

/** From this many changed nodes on, a flush reads every latest row in one scan. */
const LIST_FROM = 64;

export type PublishRetained = (topic: string, payload: string) => Promise<void>;

export interface NodeSource {
  get(nodeId: string): MeshNode | undefined;
  list(): MeshNode[];
}

export interface HubEventPublisherOptions {
  publish: PublishRetained;
  latest: LatestReadings;
  nodes: NodeSource;
  haDiscovery: boolean;
  offlineAfterMs: number;
  hubVersion: string;
  log: Logger;
  coalesceMs?: number;
  now?: () => number;
}

interface DiscoveredNode {
  metrics: Set<ReadingMetric>;
  /** name + model the configs were published with; a change republishes them. */
  deviceKey: string;
}

export class HubEventPublisher {
  private readonly dirtyReadings = new Set<string>();
  private readonly dirtyNodes = new Set<string>();
  private readonly lastHeard = new Map<string, number>();
  private readonly availability = new Map<string, 'online' | 'offline'>();
  private readonly discovered = new Map<string, DiscoveredNode>();
  private timer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private work: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly options: HubEventPublisherOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Publishes `online` and everything known; then keeps node availability up to date. */
  start(): void {
    this.stopped = false;
    this.enqueue(async () => {
      await this.options.publish(HUB_STATUS_TOPIC, 'online');
      await this.republishAll();
    });
    const every = Math.max(1_000, Math.min(60_000, Math.floor(this.options.offlineAfterMs / 4)));
    this.checkTimer = setInterval(() => this.enqueue(() => this.checkAvailability()), every);
    this.checkTimer.unref();
  }

  readingsStored(nodeIds: Iterable<string>): void {
    for (const id of nodeIds) this.dirtyReadings.add(id);
    this.schedule();
  }

  nodeUpdated(nodeId: string): void {
    this.dirtyNodes.add(nodeId);
    this.schedule();
  }

  /** Home Assistant said `online` (its birth message): it may have lost discovery state, resend it. */
  homeAssistantOnline(): void {
    if (!this.options.haDiscovery) return;
    this.enqueue(async () => {
      const nodeIds = [...this.discovered.keys()];
      this.discovered.clear();
      for (const nodeId of nodeIds) await this.publishReading(nodeId);
    });
  }

  /** Waits for everything scheduled so far to be published. */
  async settle(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.enqueue(() => this.flush());
    }
    await this.work;
  }

  /** Publishes what is pending, then `offline`. */
  async stop(): Promise<void> {
    clearInterval(this.checkTimer);
    this.checkTimer = undefined;
    await this.settle();
    this.stopped = true;
    await this.options.publish(HUB_STATUS_TOPIC, 'offline').catch(() => {});
  }

  /** Flips nodes not heard within `offlineAfterMs` to `offline` (and back). */
  async checkAvailability(): Promise<void> {
    for (const nodeId of this.lastHeard.keys()) await this.publishAvailability(nodeId);
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.enqueue(() => this.flush());
    }, this.options.coalesceMs ?? 250);
    this.timer.unref();
  }

  /** Runs publishing jobs one after another; a failing job is logged and does not stop the next. */
  private enqueue(job: () => Promise<void>): void {
    this.work = this.work.then(job).catch((err: unknown) => {
      this.options.log.warn({ err }, 'publishing hub events failed');
    });
  }

  private async flush(): Promise<void> {
    const readings = [...this.dirtyReadings];
    const nodes = [...this.dirtyNodes];
    this.dirtyReadings.clear();
    this.dirtyNodes.clear();
    for (const nodeId of nodes) await this.publishNode(nodeId);
    if (readings.length < LIST_FROM) {
      for (const nodeId of readings) await this.publishReading(nodeId);
      return;
    }
    // Many nodes at once (a busy mesh, an MQTT burst): one scan of readings_latest, not a
    // query per node.
    const byNode = new Map<string, LatestReading>();
    for (const latest of this.options.latest.list()) byNode.set(latest.nodeId, latest);
    for (const nodeId of readings) await this.publishReading(nodeId, byNode.get(nodeId) ?? null);
  }

  private async republishAll(): Promise<void> {
    for (const node of this.options.nodes.list()) await this.publishNode(node.nodeId);
    for (const latest of this.options.latest.list()) await this.publishReading(latest.nodeId);
  }

  private async publishNode(nodeId: string): Promise<void> {
    const node = this.options.nodes.get(nodeId);
    if (!node) return;
    await this.options.publish(nodeTopic(nodeId), JSON.stringify(nodeJson(node)));
    if (node.lastHeard !== undefined) this.heard(nodeId, node.lastHeard);
    const discovered = this.discovered.get(nodeId);
    if (discovered && discovered.deviceKey !== deviceKey(this.device(nodeId, node))) {
      // The node's name or model changed: its Home Assistant device must say so.
      this.discovered.delete(nodeId);
      await this.publishReading(nodeId);
      return;
    }
    await this.publishAvailability(nodeId);
  }

  /** `known`: the node's latest row when already read (null: it has none). */
  private async publishReading(nodeId: string, known?: LatestReading | null): Promise<void> {
    const latest = known === undefined ? this.options.latest.get(nodeId) : known;
    if (!latest) return;
    await this.options.publish(readingTopic(nodeId), latest.json);
    this.heard(nodeId, latest.timestamp);
    if (this.options.haDiscovery) await this.publishDiscovery(nodeId, latest.metrics);
    await this.publishAvailability(nodeId);
  }

  private async publishDiscovery(nodeId: string, metrics: readonly ReadingMetric[]): Promise<void> {
    // Every metric announced already: nothing to look up (a renamed node is republished by
    // publishNode, which compares the device).
    const seen = this.discovered.get(nodeId);
    if (seen && metrics.every((m) => seen.metrics.has(m))) return;
    const device = this.device(nodeId, this.options.nodes.get(nodeId));
    const key = deviceKey(device);
    let known = this.discovered.get(nodeId);
    if (!known || known.deviceKey !== key) {
      known = { metrics: new Set(), deviceKey: key };
      this.discovered.set(nodeId, known);
    }
    for (const metric of metrics) {
      if (known.metrics.has(metric)) continue;
      const message = discoveryMessage(device, metric, this.options.hubVersion);
      await this.options.publish(message.topic, message.payload);
      known.metrics.add(metric);
    }
  }

  private async publishAvailability(nodeId: string): Promise<void> {
    const heard = this.lastHeard.get(nodeId);
    if (heard === undefined) return;
    const state = this.now() - heard <= this.options.offlineAfterMs ? 'online' : 'offline';
    if (this.availability.get(nodeId) === state) return;
    await this.options.publish(availabilityTopic(nodeId), state);
    this.availability.set(nodeId, state);
  }

  private heard(nodeId: string, at: number): void {
    const known = this.lastHeard.get(nodeId);
    if (known === undefined || at > known) this.lastHeard.set(nodeId, at);
  }

  private device(nodeId: string, node: MeshNode | undefined): DiscoveryDevice {
    return {
      nodeId,
      ...(node?.longName || node?.shortName ? { name: node.longName ?? node.shortName } : {}),
      ...(node?.hwModel ? { model: node.hwModel } : {}),
    };
  }
}

function deviceKey(device: DiscoveryDevice): string {
  return `${device.name ?? ''}\u0000${device.model ?? ''}`;
}
