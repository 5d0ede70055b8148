import type { HubBus, HubRequests } from '../domain/events.js';
import { Actor } from '../kernel/actor.js';
import type { Mailbox } from '../kernel/mailbox.js';
import type { Logger } from '../log.js';
import type { HubMetrics } from '../metrics.js';
import { BatchingWriter, type ReadingBatch } from './batching-writer.js';
import type { Database } from './database.js';
import { ReadingWriter, STALE_BUCKET_GRACE_MS } from './reading-writer.js';
import { isStorageFull } from './storage-full.js';

/** After a refusal for want of space, how long commits must succeed before the disk counts as having room. */
const STORAGE_FULL_HOLD_MS = 15_000;

export class WriterBusyError extends Error {
  override readonly name = 'WriterBusyError';
  constructor() {
    super('the ingest writer is not accepting readings');
  }
}

/**
 * The one writer of readings (docs/architecture.md "Actors" 6): it answers `readings.commit` asks once the
 * readings are durable. Batches wait in a drop-oldest mailbox (telemetry: the newest matters
 * most; a dropped batch's ask times out), are batched into transactions, and `reading.stored`
 * announces what was new once it is committed. An urgent ask (someone waits for a PUBACK or an
 * HTTP answer) commits at the next turn; the radio's readings wait for the batching delay.
 */
export class IngestWriterActor extends Actor {
  readonly name = 'ingest-writer';
  override readonly dependsOn = ['store'];
  private writer: BatchingWriter | undefined;
  private readingWriter: ReadingWriter | undefined;
  private staleTimer: NodeJS.Timeout | undefined;
  private readonly inbox: Mailbox<ReadingBatch>;
  private commitScheduled = false;
  /** Since when commits fail for want of space (SQLITE_FULL): the hub is degraded meanwhile. */
  private fullSince: number | undefined;
  private lastFullAt = 0;

  constructor(
    private readonly deps: {
      bus: HubBus;
      db: Database;
      log: Logger;
      metrics: HubMetrics;
      capacity?: number;
    },
  ) {
    super();
    this.inbox = this.createMailbox<ReadingBatch>('readings', {
      capacity: deps.capacity ?? 20_000,
      overflow: 'drop-oldest',
      handle: (batch) => this.writer?.enqueue(batch),
    });
  }

  async start(): Promise<void> {
    const { bus, db, metrics, log } = this.deps;
    const readingWriter = new ReadingWriter(db);
    this.readingWriter = readingWriter;
    // Buckets of nodes that went quiet are written and leave memory (reading-writer.ts).
    this.staleTimer = setInterval(() => {
      try {
        this.writer?.flush();
        readingWriter.closeStale(Date.now());
      } catch (error) {
        log.error({ err: error }, 'writing the stale rollup buckets failed');
      }
    }, STALE_BUCKET_GRACE_MS);
    this.staleTimer.unref();
    this.writer = new BatchingWriter({
      writer: readingWriter,
      onStored: (_all, bySource) => {
        // A small write can fit in the last free pages while batches still fail: room again
        // only once a commit succeeds with no refusal for STORAGE_FULL_HOLD_MS.
        if (this.fullSince !== undefined && Date.now() - this.lastFullAt >= STORAGE_FULL_HOLD_MS) {
          log.warn('the disk has room again; readings are stored');
          this.fullSince = undefined;
        }
        for (const { readings, source } of bySource) {
          metrics.readingsIngested.inc({ source }, readings.length);
          bus.emit('reading.stored', { readings, source });
        }
      },
      onError: (error) => {
        if (!isStorageFull(error)) return log.error({ err: error }, 'writing readings failed');
        this.lastFullAt = Date.now();
        // Once per episode: every batch fails alike until there is room again.
        if (this.fullSince === undefined) {
          log.error({ err: error }, 'the disk is full: readings are refused until there is room');
          this.fullSince = this.lastFullAt;
        }
      },
    });
    this.inbox.reopen();
    bus.handle(this.name, 'readings.commit', (request) => this.commit(request));
    // A renumbered node's readings follow it (src/nodes/renumber.ts), at once (readers look after
    // this emit): the open batch is committed first, so nothing of the old id is left behind it.
    bus.on(this.name, 'node.renumbered', ({ oldNodeId, newNodeId }) => {
      if (!this.writer) return;
      try {
        this.writer.flush();
        const moved = readingWriter.renumber(oldNodeId, newNodeId);
        log.info(
          { old: oldNodeId, node: newNodeId, readings: moved },
          'readings moved to the renumbered node',
        );
      } catch (error) {
        log.error(
          { err: error, old: oldNodeId, node: newNodeId },
          'moving the readings of a renumbered node failed',
        );
      }
    });
  }

  private commit({ readings, source, urgent }: HubRequests['readings.commit']['request']): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const accepted = this.inbox.post({
        readings,
        source,
        onCommitted: (error) => (error ? reject(error) : resolve()),
      });
      if (!accepted) reject(new WriterBusyError());
      else if (urgent) this.commitSoon();
    });
  }

  /** Commits at the next turn what every urgent ask of this turn brought. */
  private commitSoon(): void {
    if (this.commitScheduled) return;
    this.commitScheduled = true;
    setImmediate(() => {
      this.commitScheduled = false;
      void this.flush();
    });
  }

  /** Commits everything already received: pending mailbox messages, then the open batch. */
  async flush(): Promise<void> {
    await this.inbox.idle();
    this.writer?.flush();
  }

  override ready(): boolean {
    return this.fullSince === undefined;
  }

  override describe(): Record<string, unknown> {
    return this.fullSince === undefined
      ? {}
      : { storage: 'full', full_since: new Date(this.fullSince).toISOString() };
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.inbox.close();
    await this.inbox.idle();
    clearInterval(this.staleTimer);
    this.writer?.close();
    this.writer = undefined;
    // The open buckets and latest rows to their tables: nothing to rebuild at the next start.
    try {
      this.readingWriter?.close();
    } catch (error) {
      this.deps.log.error({ err: error }, 'writing the open rollup buckets at stop failed');
    }
    this.readingWriter = undefined;
  }
}
