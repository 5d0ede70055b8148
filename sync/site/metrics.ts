/**
 * The sync module's metrics in /metrics (`meshhub_sync_…`, issue 12 "Site identity"): the
 * outbox's depth and lag are read from SQLite at each scrape; the rest are counted as they happen.
 */
import type { Counter, Gauge } from 'prom-client';
import { declareCounters, declareGauges } from '../../src/metrics.js';
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
    const gauges = declareGauges((config) => metrics.gauge(config), {
      sync_outbox_depth: 'Outbox entries not yet acknowledged upstream',
      sync_lag_seconds: 'Age of the oldest outbox entry not yet acknowledged upstream (0 when none waits)',
      sync_downlink_connected: '1 while the downlink connection to the upstream is open',
    });
    const counters = declareCounters((config) => metrics.counter(config), {
      sync_batches_sent_total: 'Batches the upstream acknowledged',
      sync_records_sent_total: 'Records in batches the upstream acknowledged',
      sync_rejects_total: [
        'Requests the upstream refused, by reason (the problem type, or http_<status>)',
        ['reason'],
      ],
      sync_outbox_dropped_total:
        'Raw readings dropped from the outbox for its disk budget (their rollups are still synced)',
      sync_downlink_commands_total: [
        'Downlink commands answered, by kind and result (applied, duplicate, rejected)',
        ['kind', 'result'],
      ],
      sync_downlink_invalid_frames_total:
        'Downlink frames ignored because they were not JSON or not a known frame',
    });
    this.depth = gauges.sync_outbox_depth;
    this.lag = gauges.sync_lag_seconds;
    this.downlinkConnected = gauges.sync_downlink_connected;
    this.batchesSent = counters.sync_batches_sent_total;
    this.recordsSent = counters.sync_records_sent_total;
    this.rejects = counters.sync_rejects_total;
    this.dropped = counters.sync_outbox_dropped_total;
    this.downlinkCommands = counters.sync_downlink_commands_total;
    this.downlinkInvalidFrames = counters.sync_downlink_invalid_frames_total;
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
