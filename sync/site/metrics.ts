/**
 * The sync module's metrics in /metrics (`meshhub_sync_…`, issue 12 "Site identity"): the
 * outbox's depth and lag are read from SQLite at each scrape; the rest are counted as they happen.
 */
import type { Counter, Gauge } from 'prom-client';
import type { ModuleMetrics } from '../../src/module.js';
import type { CommandAck } from '../protocol.js';

/** What a scrape reads from the outbox (undefined while the sync actor is not running). */
export interface OutboxGauges {
  depth: number;
  /** ms since the epoch of the oldest unacknowledged entry, null when there is none. */
  oldestAt: number | null;
  /** Entries dropped for the disk budget since the outbox was made (persisted). */
  droppedTotal: number;
}

export class SyncMetrics {
  readonly batchesSent: Counter;
  readonly recordsSent: Counter;
  readonly rejects: Counter<'reason'>;
  readonly downlinkCommands: Counter<'kind' | 'result'>;
  readonly downlinkInvalidFrames: Counter;
  private readonly depth: Gauge;
  private readonly lag: Gauge;
  private readonly dropped: Counter;
  private readonly downlinkConnected: Gauge;
  private droppedSeen: number | undefined;

  constructor(private readonly metrics: ModuleMetrics) {
    this.depth = metrics.gauge({
      name: 'sync_outbox_depth',
      help: 'Outbox entries not yet acknowledged upstream',
    });
    this.lag = metrics.gauge({
      name: 'sync_lag_seconds',
      help: 'Age of the oldest outbox entry not yet acknowledged upstream (0 when none waits)',
    });
    this.batchesSent = metrics.counter({
      name: 'sync_batches_sent_total',
      help: 'Batches the upstream acknowledged',
    });
    this.recordsSent = metrics.counter({
      name: 'sync_records_sent_total',
      help: 'Records in batches the upstream acknowledged',
    });
    this.rejects = metrics.counter({
      name: 'sync_rejects_total',
      help: 'Requests the upstream refused, by reason (the problem type, or http_<status>)',
      labelNames: ['reason'],
    });
    this.dropped = metrics.counter({
      name: 'sync_outbox_dropped_total',
      help: 'Raw readings dropped from the outbox for its disk budget (their rollups are still synced)',
    });
    this.downlinkConnected = metrics.gauge({
      name: 'sync_downlink_connected',
      help: '1 while the downlink connection to the upstream is open',
    });
    this.downlinkCommands = metrics.counter({
      name: 'sync_downlink_commands_total',
      help: 'Downlink commands answered, by kind and result (applied, duplicate, rejected)',
      labelNames: ['kind', 'result'],
    });
    this.downlinkInvalidFrames = metrics.counter({
      name: 'sync_downlink_invalid_frames_total',
      help: 'Downlink frames ignored because they were not JSON or not a known frame',
    });
  }

  /** Reads the outbox at each scrape; returns the function that stops it. */
  watchOutbox(read: () => OutboxGauges, now: () => number = Date.now): () => void {
    return this.metrics.onRender(() => {
      const stats = read();
      this.depth.set(stats.depth);
      this.lag.set(stats.oldestAt === null ? 0 : Math.max(0, (now() - stats.oldestAt) / 1000));
      // The total is persisted; the counter moves by what was dropped since it was last read.
      const delta = stats.droppedTotal - (this.droppedSeen ?? 0);
      if (delta > 0) this.dropped.inc(delta);
      this.droppedSeen = Math.max(this.droppedSeen ?? 0, stats.droppedTotal);
    });
  }

  setDownlinkConnected(connected: boolean): void {
    this.downlinkConnected.set(connected ? 1 : 0);
  }

  commandAnswered(kind: string, ack: CommandAck): void {
    this.downlinkCommands.inc({ kind, result: ack.result });
  }
}
