import type { HubBus, ReadingBatch } from '../src/events.js';
import { Actor } from '../src/kernel/actor.js';
import type { Mailbox } from '../src/kernel/mailbox.js';
import type { Logger } from '../src/log.js';
import type { HubMetrics } from '../src/metrics.js';
import { BatchingWriter } from '../src/store/batching-writer.js';
import { ReadingWriter } from '../src/store/reading-writer.js';
import type { StoreActor } from './store.js';

/**
 * The one writer of readings (DESIGN.md "Actors" 6): `reading.received` batches wait in a
 * drop-oldest mailbox (telemetry: the newest matters most), are batched into transactions, and
 * `reading.stored` announces what was new once it is committed.
 */
export class IngestWriterActor extends Actor {
  readonly name = 'ingest-writer';
  override readonly dependsOn = ['store'];
  private writer: BatchingWriter | undefined;
  private readonly inbox: Mailbox<ReadingBatch>;

  constructor(
    private readonly deps: {
      bus: HubBus;
      store: StoreActor;
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
    const { bus, store, metrics, log } = this.deps;
    this.writer = new BatchingWriter({
      writer: new ReadingWriter(store.db),
      onStored: (_all, bySource) => {
        for (const { readings, source } of bySource) {
          metrics.readingsIngested.inc({ source }, readings.length);
          bus.emit('reading.stored', { readings, source });
        }
      },
      onError: (error) => log.error({ err: error }, 'writing readings failed'),
    });
    this.inbox.reopen();
    bus.on(this.name, 'reading.received', (batch) => {
      if (!this.inbox.post(batch))
        batch.onCommitted?.(new Error('the ingest writer is not accepting readings'));
    });
  }

  /** Commits everything already received: pending mailbox messages, then the open batch. */
  async flush(): Promise<void> {
    await this.inbox.idle();
    this.writer?.flush();
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.inbox.close();
    await this.inbox.idle();
    this.writer?.close();
    this.writer = undefined;
  }
}
