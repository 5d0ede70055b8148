/**
 * Collects reading batches (the `readings.commit` asks) and commits them through one ReadingWriter in bounded
 * transactions (docs/architecture.md "Actors" 6, "Data flows" 1).
 *
 * - A commit happens once `maxBatchRows` rows wait, or `maxDelayMs` after the first row began
 *   waiting, or on `flush()` / `close()`.
 * - No transaction holds more than `maxBatchRows` rows, so none blocks the event loop for long;
 *   a bigger backlog (one huge HTTP batch, say) is written a transaction at a time with a
 *   `setImmediate` between them. `flush()` and `close()` write everything synchronously.
 * - After a commit, every batch whose rows are now all committed gets `onCommitted()` (this is
 *   when MQTT may PUBACK and HTTP may answer), then `onStored` gets the new readings grouped
 *   by source, shaped like the `reading.stored` event.
 * - A failed transaction that held several batches is retried one batch per transaction, so one
 *   bad batch never takes the others down with it; each batch that still fails gets
 *   `onCommitted(error)` exactly once and `onError` reports it. (The rest of a batch split across
 *   transactions is still written: readings are idempotent, and a sender told of the failure
 *   may resend them all.)
 */
import type { ReadingSource } from '../domain/events.js';
import type { Reading } from '../domain/reading.js';
import type { ReadingWriter } from './reading-writer.js';

/** Readings of one source and who to tell once they are committed (or failed to be). */
export interface ReadingBatch {
  readings: Reading[];
  source: ReadingSource;
  onCommitted?: (error?: Error) => void;
}

export interface StoredReadings {
  readings: Reading[];
  source: ReadingSource;
}

export interface BatchingWriterOptions {
  writer: ReadingWriter;
  /** Commit once this many rows wait; also the most rows one transaction holds. Default 2000. */
  maxBatchRows?: number;
  /** Commit at the latest this long after the first row began waiting. Default 100 ms. */
  maxDelayMs?: number;
  /** After each commit: the readings that were new, grouped by source (the `reading.stored` payloads). */
  onStored?: (newReadings: Reading[], sources: StoredReadings[]) => void;
  /** A batch that could not be committed, or a callback that threw. */
  onError?: (
    error: Error,
    context: { source?: ReadingSource; rows?: number; phase: 'commit' | 'callback' },
  ) => void;
}

export interface BatchingWriterStats {
  pendingRows: number;
  committedRows: number;
  storedRows: number;
  transactions: number;
  failedBatches: number;
}

interface Pending {
  batch: ReadingBatch;
  /** Rows of this batch not yet handed to a transaction. */
  offset: number;
  /** Rows of this batch not yet committed (or failed). */
  uncommitted: number;
  failed: boolean;
}

interface Segment {
  pending: Pending;
  readings: Reading[];
}

export class WriterClosedError extends Error {
  override readonly name = 'WriterClosedError';
  constructor() {
    super('the reading writer is closed');
  }
}

export class BatchingWriter {
  private readonly maxBatchRows: number;
  private readonly maxDelayMs: number;
  private readonly queue: Pending[] = [];
  private pendingRows = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private closed = false;
  private readonly counters = { committedRows: 0, storedRows: 0, transactions: 0, failedBatches: 0 };

  private readonly writer: ReadingWriter;

  constructor(private readonly options: BatchingWriterOptions) {
    this.writer = options.writer;
    this.maxBatchRows = Math.max(1, Math.trunc(options.maxBatchRows ?? 2000));
    this.maxDelayMs = Math.max(0, options.maxDelayMs ?? 100);
  }

  get stats(): BatchingWriterStats {
    return { pendingRows: this.pendingRows, ...this.counters };
  }

  /**
   * Queues a batch; may commit synchronously when it fills a transaction. Once closed, a batch
   * is refused with `onCommitted(WriterClosedError)`. An empty batch is acknowledged at once.
   */
  enqueue(batch: ReadingBatch): void {
    if (this.closed) {
      this.callback(() => batch.onCommitted?.(new WriterClosedError()), batch.source);
      return;
    }
    const rows = batch.readings.length;
    if (rows === 0) {
      this.callback(() => batch.onCommitted?.(), batch.source);
      return;
    }
    this.queue.push({ batch, offset: 0, uncommitted: rows, failed: false });
    this.pendingRows += rows;
    if (this.pendingRows >= this.maxBatchRows) this.drainStep();
    else this.timer ??= setTimeout(() => this.onTimer(), this.maxDelayMs);
  }

  /** Writes everything waiting now, synchronously, in transactions of at most `maxBatchRows` rows. */
  flush(): void {
    this.clearSchedule();
    while (this.pendingRows > 0) this.commitOne();
  }

  /** Flushes and stops; later batches are refused. */
  close(): void {
    this.flush();
    this.closed = true;
  }

  private onTimer(): void {
    this.timer = undefined;
    this.drainStep();
  }

  /** One transaction now; more later (after I/O has had its turn) if a backlog remains. */
  private drainStep(): void {
    this.clearSchedule();
    this.commitOne();
    if (this.pendingRows >= this.maxBatchRows) this.immediate = setImmediate(() => this.drainStep());
    else if (this.pendingRows > 0) this.timer = setTimeout(() => this.onTimer(), this.maxDelayMs);
  }

  private clearSchedule(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  /** Takes up to maxBatchRows rows off the queue (splitting a batch when needed) and commits them. */
  private commitOne(): void {
    const segments: Segment[] = [];
    let room = this.maxBatchRows;
    let done = 0;
    for (let i = 0; room > 0 && i < this.queue.length; i++) {
      const pending = this.queue[i]!;
      const { readings } = pending.batch;
      const take = Math.min(room, readings.length - pending.offset);
      const slice =
        pending.offset === 0 && take === readings.length
          ? readings
          : readings.slice(pending.offset, pending.offset + take);
      segments.push({ pending, readings: slice });
      pending.offset += take;
      room -= take;
      if (pending.offset === readings.length) done++;
    }
    this.queue.splice(0, done);
    this.pendingRows -= this.maxBatchRows - room;
    if (segments.length === 0) return;

    const results = this.commitSegments(segments);
    const stored = new Map<ReadingSource, Reading[]>();
    const all: Reading[] = [];
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      const result = results[i]!;
      const { pending } = segment;
      pending.uncommitted -= segment.readings.length;
      if (result instanceof Error) {
        if (!pending.failed) {
          pending.failed = true;
          this.counters.failedBatches++;
          this.report(result, {
            source: pending.batch.source,
            rows: pending.batch.readings.length,
            phase: 'commit',
          });
          this.callback(() => pending.batch.onCommitted?.(result), pending.batch.source);
        }
        continue;
      }
      this.counters.committedRows += segment.readings.length;
      if (result.length > 0) {
        all.push(...result);
        const list = stored.get(pending.batch.source);
        if (list) list.push(...result);
        else stored.set(pending.batch.source, [...result]);
      }
      if (pending.uncommitted === 0 && !pending.failed) {
        this.callback(() => pending.batch.onCommitted?.(), pending.batch.source);
      }
    }
    this.counters.storedRows += all.length;
    const onStored = this.options.onStored;
    if (onStored && all.length > 0) {
      const sources = [...stored].map(([source, readings]) => ({ source, readings }));
      this.callback(() => onStored(all, sources));
    }
  }

  /** One result per segment: the new readings, or the error that kept it from being committed. */
  private commitSegments(segments: Segment[]): Array<Reading[] | Error> {
    const together = this.tryWrite(segments.map((s) => s.readings));
    if (!(together instanceof Error)) return together;
    if (segments.length === 1) return [together];
    // Isolate the batch that broke the transaction: retry each on its own.
    return segments.map((s) => {
      const alone = this.tryWrite([s.readings]);
      return alone instanceof Error ? alone : alone[0]!;
    });
  }

  private tryWrite(groups: Reading[][]): Reading[][] | Error {
    try {
      const stored = this.writer.writeGroups(groups);
      this.counters.transactions++;
      return stored;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  private callback(fn: () => void, source?: ReadingSource): void {
    try {
      fn();
    } catch (error) {
      this.report(error instanceof Error ? error : new Error(String(error)), {
        ...(source ? { source } : {}),
        phase: 'callback',
      });
    }
  }

  private report(
    error: Error,
    context: { source?: ReadingSource; rows?: number; phase: 'commit' | 'callback' },
  ): void {
    try {
      this.options.onError?.(error, context);
    } catch {
      // The reporter itself failed; nothing more can be done without risking the writer.
    }
  }
}
