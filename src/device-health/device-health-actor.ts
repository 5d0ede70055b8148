/**
 * Device health from the mesh (docs/architecture.md "Actors"): every first sighting on
 * `mesh.heard` is read for a DEVICE_METRICS / LocalStats report (announced as `device.metrics`)
 * and, when the hub's own radio heard it straight from its sender, for that node's SNR/RSSI;
 * samples wait in memory and are committed in batches (one transaction per flush, never one per
 * packet): every `flushMs`, at `maxBatch` waiting samples, and on stop.
 */
import type { HubBus } from '../domain/events.js';
import type { DeviceHealthSample } from '../domain/mesh.js';
import { Actor } from '../kernel/actor.js';
import type { Logger } from '../log.js';
import { type HealthRow, linkValues, sampleValues } from './columns.js';
import { decodeDeviceHealth, directLinkSample } from './decode.js';
import type { HealthWriter } from './health-writer.js';

/** Nodes whose last link sample time is remembered (the mesh is smaller; past it, the oldest go). */
const MAX_LINK_NODES = 10_000;

export interface DeviceHealthCounters {
  sample(kind: 'device' | 'local_stats' | 'link'): void;
  written(rows: number, added: number): void;
  failed(): void;
}

export interface DeviceHealthActorDeps {
  bus: HubBus;
  writer: () => HealthWriter;
  log: Logger;
  counters: DeviceHealthCounters;
  /** Commit waiting samples this often. */
  flushMs: number;
  /** At most one SNR/RSSI sample per node in this time (0: every directly heard packet). */
  linkSampleMs: number;
  /** After each commit, the samples it held (the reads drop their cached buckets). */
  onStored?: (rows: readonly HealthRow[]) => void;
  /** A node's series moved to another id (cached history is stale). */
  onMoved?: (oldNodeId: string, newNodeId: string) => void;
  /** Commit at once when this many samples wait; also the bound of the queue (the oldest go past twice it). */
  maxBatch?: number;
}

export class DeviceHealthActor extends Actor {
  readonly name = 'device-health';
  override readonly dependsOn = ['store'];
  override readonly required = false;
  private queue: HealthRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly lastLink = new Map<string, number>();
  private myNodeNum: number | undefined;
  private readonly maxBatch: number;

  constructor(private readonly deps: DeviceHealthActorDeps) {
    super();
    this.maxBatch = deps.maxBatch ?? 500;
  }

  async start(): Promise<void> {
    const { bus } = this.deps;
    bus.on(
      this.name,
      'radio.status',
      (status) => {
        if (status.myNodeNum !== undefined) this.myNodeNum = status.myNodeNum;
      },
      { replay: true },
    );
    bus.on(this.name, 'mesh.heard', ({ packet, via, duplicate }) => {
      if (duplicate) return;
      const sample = decodeDeviceHealth(packet);
      if (sample) this.report(sample);
      const link = directLinkSample(packet, via, this.myNodeNum);
      if (link && this.linkDue(link.nodeId, link.at)) {
        this.deps.counters.sample('link');
        this.enqueue({ nodeId: link.nodeId, ts: link.at, values: linkValues(link.snr, link.rssi) });
      }
    });
    // A renumbered node's device health follows it (README "Nodes that change their number").
    bus.on(this.name, 'node.renumbered', ({ oldNodeId, newNodeId }) => {
      this.flush();
      try {
        this.deps.writer().renumber(oldNodeId, newNodeId);
        this.deps.onMoved?.(oldNodeId, newNodeId);
      } catch (error) {
        this.deps.log.warn(
          { err: error, oldNodeId, newNodeId },
          'device health did not follow a renumbered node',
        );
      }
    });
    this.timer = setInterval(() => this.flush(), this.deps.flushMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.flush();
  }

  override describe(): Record<string, unknown> {
    return { waiting: this.queue.length };
  }

  /** Announces a report and queues it for storage. */
  private report(sample: DeviceHealthSample): void {
    this.deps.counters.sample(sample.localStats ? 'local_stats' : 'device');
    this.deps.bus.emit('device.metrics', sample);
    this.enqueue({ nodeId: sample.nodeId, ts: sample.at, values: sampleValues(sample) });
  }

  private linkDue(nodeId: string, at: number): boolean {
    const last = this.lastLink.get(nodeId);
    if (last !== undefined && at >= last && at - last < this.deps.linkSampleMs) return false;
    this.lastLink.delete(nodeId);
    if (this.lastLink.size >= MAX_LINK_NODES) this.lastLink.delete(this.lastLink.keys().next().value!);
    this.lastLink.set(nodeId, at);
    return true;
  }

  private enqueue(row: HealthRow): void {
    this.queue.push(row);
    if (this.queue.length > 2 * this.maxBatch) this.queue.splice(0, this.queue.length - 2 * this.maxBatch);
    if (this.queue.length >= this.maxBatch) this.flush();
  }

  /** Commits what waits, in one transaction. */
  flush(): void {
    if (this.queue.length === 0) return;
    const rows = this.queue;
    this.queue = [];
    try {
      const added = this.deps.writer().write(rows);
      this.deps.counters.written(rows.length, added);
      this.deps.onStored?.(rows);
    } catch (error) {
      this.deps.counters.failed();
      this.deps.log.warn({ err: error, rows: rows.length }, 'device health samples not stored');
    }
  }
}
