/**
 * Commits normalised events in bounded transactions (docs/architecture.md "Actors" 6): at most
 * `maxBatchRows` per transaction, with a yield to the event loop between transactions, so a
 * 50,000-event blob never blocks the HTTP routes for long.
 *
 * Dedupe is the unique (tenant_id, source, source_key) index: a duplicate is an `ON CONFLICT DO NOTHING`,
 * counted and otherwise free. A transaction that fails is retried one event per transaction, so
 * one bad row never takes the rest of its batch down with it; only rows that fail alone are
 * reported as failed (and if every row fails, the store itself is in trouble: the error is
 * thrown and the fetch does not advance its watermark).
 */
import type { Database, Statement } from '../../../src/store/database.js';
import type { NormalizedEvent } from '../normalize.js';
import { keyWriter } from '../timeline/keys.js';
import { ActorDays } from './actor-days.js';
import type { Dictionaries } from './dictionaries.js';

export interface StoredEvent {
  seq: number;
  event: NormalizedEvent;
}

export interface WriteOutcome {
  stored: number;
  duplicates: number;
  failed: number;
  /** The first error of a row that failed alone, for source health. */
  error?: Error;
}

export type StoredListener = (events: StoredEvent[]) => void;

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class AuditEventWriter {
  private readonly insertEvent: Statement;
  private readonly insertRaw: Statement;
  /** Issue 29: the event's pivot keys (timeline/keys.ts). */
  private readonly writeKeys: ReturnType<typeof keyWriter>;
  /** Issue 29: the timeline's per-day counts (actor-days.ts), for the rows actually inserted. */
  private readonly actorDays: ActorDays;
  private readonly listeners = new Set<StoredListener>();
  private readonly maxBatchRows: number;

  constructor(
    private readonly db: Database,
    private readonly dictionaries: Dictionaries,
    private readonly options: { maxBatchRows?: number; now?: () => number } = {},
  ) {
    this.maxBatchRows = Math.max(1, Math.trunc(options.maxBatchRows ?? 1000));
    this.insertEvent = db.prepare(`
      INSERT INTO audit_events
        (tenant_id, source, source_key, ts, service, operation_id, result_id, actor_id, target, ingested_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, source, source_key) DO NOTHING`);
    this.insertRaw = db.prepare('INSERT INTO audit_event_raw (seq, raw) VALUES (?, ?)');
    this.writeKeys = keyWriter(db);
    this.actorDays = new ActorDays(db);
  }

  /** Called after each commit with the events that were new (the later SIEM and alert hooks). */
  onStored(listener: StoredListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes everything, a transaction at a time, yielding between transactions. */
  async write(events: readonly NormalizedEvent[]): Promise<WriteOutcome> {
    const total: WriteOutcome = { stored: 0, duplicates: 0, failed: 0 };
    for (let i = 0; i < events.length; i += this.maxBatchRows) {
      if (i > 0) await yieldToEventLoop();
      const part = this.writeChunk(events.slice(i, i + this.maxBatchRows));
      addOutcome(total, part);
    }
    return total;
  }

  /** Synchronous variant (benchmarks, maintenance): the same transactions, no yields. */
  writeNow(events: readonly NormalizedEvent[]): WriteOutcome {
    const total: WriteOutcome = { stored: 0, duplicates: 0, failed: 0 };
    for (let i = 0; i < events.length; i += this.maxBatchRows) {
      const part = this.writeChunk(events.slice(i, i + this.maxBatchRows));
      addOutcome(total, part);
    }
    return total;
  }

  private readonly transaction = (events: readonly NormalizedEvent[]): StoredEvent[] =>
    this.db.transaction((batch: readonly NormalizedEvent[]) => {
      const now = (this.options.now ?? Date.now)();
      const stored: StoredEvent[] = [];
      for (const e of batch) {
        const counted = {
          actorId: this.dictionaries.actors.idOf(e.actor),
          ts: e.timestamp,
          tenantId: this.dictionaries.tenants.idOf(e.tenant),
          service: e.service,
          operationId: this.dictionaries.operations.idOf(e.operation),
          resultId: this.dictionaries.results.idOf(e.resultRaw, e.result),
        };
        const info = this.insertEvent.run(
          counted.tenantId,
          e.source,
          e.sourceKey,
          e.timestamp,
          e.service,
          counted.operationId,
          counted.resultId,
          counted.actorId,
          e.target,
          now,
        );
        if (info.changes === 1) {
          const seq = Number(info.lastInsertRowid);
          this.insertRaw.run(seq, e.raw);
          this.writeKeys(seq, e.timestamp, e);
          this.actorDays.added(counted);
          stored.push({ seq, event: e });
        }
      }
      return stored;
    })(events);

  private writeChunk(events: readonly NormalizedEvent[]): WriteOutcome {
    let stored: StoredEvent[] = [];
    let failed = 0;
    let error: Error | undefined;
    try {
      stored = this.transaction(events);
    } catch (batchError) {
      // A dictionary id cached from a rolled-back insert would now point nowhere.
      this.dictionaries.clear();
      if (events.length === 1) throw batchError;
      for (const e of events) {
        try {
          stored.push(...this.transaction([e]));
        } catch (rowError) {
          this.dictionaries.clear();
          failed++;
          error ??= rowError instanceof Error ? rowError : new Error(String(rowError));
        }
      }
      if (failed === events.length) throw batchError;
    }
    if (stored.length) {
      for (const listener of this.listeners) {
        try {
          listener(stored);
        } catch {
          // A listener's failure is its own; the events are committed.
        }
      }
    }
    return {
      stored: stored.length,
      duplicates: events.length - stored.length - failed,
      failed,
      ...(error ? { error } : {}),
    };
  }
}

/** Adds a transaction's outcome to the total (the first error is kept). */
function addOutcome(total: WriteOutcome, part: WriteOutcome): void {
  total.stored += part.stored;
  total.duplicates += part.duplicates;
  total.failed += part.failed;
  total.error ??= part.error;
}
