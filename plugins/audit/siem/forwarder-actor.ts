/**
 * SIEM forwarding (issue 14; spec "Events": "when SIEM_ENABLED is true, events are exported to
 * SIEM_WEBHOOK_URL"): an actor that sends every newly stored audit event to the SIEM, in order,
 * at least once.
 *
 * The events table is the queue and `audit_siem_delivery.last_seq` the checkpoint (see
 * delivery-repository.ts): the forwarder reads the events after the checkpoint, sends them as one
 * batch, and moves the checkpoint only when the receiver accepted the batch. Nothing is held in
 * memory, so a SIEM that is down for a day costs a day of backlog in SQLite (which retention
 * bounds), and a restart resumes from the checkpoint. A batch accepted just before a crash, whose
 * checkpoint was not yet written, is sent again: receivers deduplicate on the event `id`.
 *
 * Failures (sender.ts decides which kind): `retry` backs off exponentially from
 * SIEM_BACKOFF_BASE_MS to SIEM_BACKOFF_MAX_MS with jitter (each delay drawn from its upper half);
 * `hold` waits the longest backoff and tries the same batch again (nothing is skipped); `reject`
 * halves the batch until the refused event is alone, then records it in `audit_siem_rejected`
 * and moves past it — unless the previous event was skipped the same way with no success in
 * between, which means the receiver refuses everything: that is a `hold`, so a receiver answering
 * 400 to all cannot empty the queue into the rejected list. Stored events wake the forwarder; the
 * writer never waits for it.
 */
import { hostname } from 'node:os';
import { Actor, type KernelLogger } from '../../../src/kernel/actor.js';
import { equalJitter, exponentialDelay } from '../../../src/kernel/backoff.js';
import type { ModuleMetrics } from '../../../src/module.js';
import type { Database } from '../../../src/store/database.js';
import type { AuditStore } from '../store/audit-store.js';
import { SiemDeliveryRepository, type SiemDeliveryRow, type SiemStatus } from './delivery-repository.js';
import { type Batch, buildBatch } from './payload.js';
import { type PreparedRequest, type SendOutcome, SiemSender } from './sender.js';
import type { SiemConfig } from './settings.js';

export interface SiemForwarderDeps {
  config: SiemConfig;
  store: AuditStore;
  metrics: ModuleMetrics;
  log: KernelLogger;
  version: string;
  fetchImpl?: typeof fetch;
  resolve?: (host: string) => Promise<string[]>;
  random?: () => number;
}

/** A batch read after checkpoint `after`, its request being prepared (gzip, signature). */
interface Outgoing {
  after: number;
  batch: Batch;
  request: Promise<PreparedRequest>;
}

export class SiemForwarderActor extends Actor {
  readonly name = 'audit-siem';
  override readonly dependsOn = ['store'];
  override readonly required = false;

  private readonly sender: SiemSender;
  private readonly host: string;
  private deliveryFor: { db: Database; store: SiemDeliveryRepository } | undefined;
  private abort = new AbortController();
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private woken = false;
  private offStored: (() => void) | undefined;
  private batchLimit: number;
  /** The next batch, read ahead while one is in flight. */
  private next: Outgoing | undefined;
  /** The highest seq read into a batch (sent, in flight or read ahead). */
  private readThrough = 0;
  /** Set when an event was stored at or below `readThrough` while a batch was in flight. */
  private rereadFrom: number | undefined;
  private skippedSinceSuccess = false;
  private status: SiemStatus = 'idle';
  private lastError: string | undefined;
  private nextAttemptAt: number | undefined;
  private readonly counters: {
    delivered: ReturnType<ModuleMetrics['counter']>;
    requests: ReturnType<ModuleMetrics['counter']>;
    rejected: ReturnType<ModuleMetrics['counter']>;
  };

  constructor(private readonly deps: SiemForwarderDeps) {
    super();
    this.host = deps.config.hec.host ?? hostname();
    this.batchLimit = deps.config.batchMaxEvents;
    this.sender = new SiemSender({
      config: deps.config,
      userAgent: `meshhub/${deps.version} (audit SIEM forwarding)`,
      ...(deps.fetchImpl ? { fetchImpl: deps.fetchImpl } : {}),
      ...(deps.resolve ? { resolve: deps.resolve } : {}),
    });
    this.counters = registerMetrics(deps.metrics, {
      row: () => this.snapshot(),
      lag: () => {
        const row = this.snapshot();
        if (!row) return undefined;
        return { events: this.lagEvents(row), oldestMs: this.delivery().oldestWaitingSince(row.last_seq) };
      },
    });
  }

  get config(): SiemConfig {
    return this.deps.config;
  }

  /** The delivery store of the current connection (the store actor may reopen it). */
  private delivery(): SiemDeliveryRepository {
    const db = this.deps.store.repos().db;
    if (this.deliveryFor?.db !== db) this.deliveryFor = { db, store: new SiemDeliveryRepository(db) };
    return this.deliveryFor.store;
  }

  async start(): Promise<void> {
    this.abort = new AbortController();
    this.delivery().ensure();
    this.offStored = this.deps.store.onStored((events) => {
      let min = Number.POSITIVE_INFINITY;
      for (const e of events) if (e.seq < min) min = e.seq;
      this.onStored(min);
    });
    this.loop = this.run().catch((error: unknown) => this.crash(error));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.offStored?.();
    this.offStored = undefined;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  override ready(): boolean {
    return this.status !== 'held' && (this.snapshot()?.consecutive_failures ?? 0) < 3;
  }

  override describe(): Record<string, unknown> {
    const row = this.snapshot();
    return {
      siem: {
        endpoint: this.deps.config.url.host,
        format: this.deps.config.format,
        status: this.status,
        checkpoint: row ? String(row.last_seq) : null,
        lag_events: row ? this.lagEvents(row) : null,
        delivered: row?.delivered ?? 0,
        rejected: row?.rejected ?? 0,
        failures: row?.failures ?? 0,
        consecutive_failures: row?.consecutive_failures ?? 0,
        last_error: this.lastError ?? row?.last_error ?? null,
        last_success_time: row?.last_success_at ? new Date(row.last_success_at).toISOString() : null,
        next_attempt_time: this.nextAttemptAt ? new Date(this.nextAttemptAt).toISOString() : null,
      },
    };
  }

  /** Resolves once every stored event has been delivered (or skipped); tests and the bench. */
  async drained(timeoutMs = 30_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const row = this.snapshot();
      if (row && this.lagEvents(row) === 0 && this.status !== 'delivering') return;
      if (Date.now() > until) throw new Error(`SIEM forwarding did not drain within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  private snapshot(): SiemDeliveryRow | undefined {
    try {
      return this.delivery().row();
    } catch {
      return undefined; // the store is closed (hub stopping)
    }
  }

  private lagEvents(row: SiemDeliveryRow): number {
    return Math.max(0, this.delivery().newestSeq() - row.last_seq);
  }

  private onStored(minSeq: number): void {
    // SQLite reuses the largest rowid after it was deleted (maintenance folding a duplicate):
    // an event stored at or below the checkpoint would never be sent. Rewind to just before it
    // (what lies between is sent again: at-least-once). One stored below a batch already read
    // (in flight or read ahead) drops the read-ahead and rewinds after the in-flight one.
    const row = this.snapshot();
    if (row && minSeq <= row.last_seq) {
      this.delivery().rewind(minSeq - 1);
      this.deps.log.warn(
        { seq: minSeq, checkpoint: row.last_seq },
        'SIEM checkpoint moved back to an event stored below it',
      );
    }
    if (minSeq <= this.readThrough) {
      this.next = undefined;
      this.rereadFrom = Math.min(this.rereadFrom ?? Number.POSITIVE_INFINITY, minSeq - 1);
    }
    this.woken = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    const { config } = this.deps;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const delivery = this.delivery();
      const row = delivery.row() ?? delivery.ensure();
      // The batch read while the previous one was in flight goes only if it starts at the
      // checkpoint (a rewind, a failure or a smaller batch limit drops it).
      const ready = this.next;
      this.next = undefined;
      const current =
        ready && ready.after === row.last_seq && ready.batch.count <= this.batchLimit
          ? ready
          : this.readBatch(delivery, row.last_seq);
      if (!current) {
        this.readThrough = row.last_seq;
        this.setStatus('idle');
        await this.idle();
        continue;
      }
      const { batch } = current;
      if (this.status === 'idle') this.setStatus('delivering');
      const sending = this.sender.post(await current.request, signal);
      // While this batch is on the wire, read, build and gzip the next one: the receiver's and
      // the network's time is not added to every batch. It is sent only after this one is accepted.
      if (this.status === 'delivering' && this.batchLimit === config.batchMaxEvents) {
        this.next = this.readBatch(delivery, batch.lastSeq);
      }
      const outcome = await sending;
      this.counters.requests.inc({ outcome: outcome.ok ? 'ok' : outcome.kind });
      if (outcome.ok) {
        const moved = delivery.delivered(row.last_seq, batch.lastSeq, batch.count, 'delivering');
        if (!moved) this.next = undefined;
        if (this.rereadFrom !== undefined) {
          // An event was stored inside the batch just accepted (see onStored): send from it again.
          if (moved && this.rereadFrom < batch.lastSeq) delivery.rewind(this.rereadFrom);
          this.rereadFrom = undefined;
          this.next = undefined;
        }
        this.counters.delivered.inc(batch.count);
        this.status = 'delivering';
        this.lastError = undefined;
        this.nextAttemptAt = undefined;
        this.skippedSinceSuccess = false;
        this.batchLimit = Math.min(config.batchMaxEvents, this.batchLimit * 2);
        continue;
      }
      this.next = undefined;
      this.rereadFrom = undefined;
      await this.onFailure(outcome, batch, row.last_seq, delivery);
    }
  }

  /** Up to `batchLimit` events after `after`, as a body being gzip'd and signed (undefined: none). */
  private readBatch(delivery: SiemDeliveryRepository, after: number): Outgoing | undefined {
    const { config } = this.deps;
    const events = delivery.eventsAfter(after, this.batchLimit);
    if (!events.length) return undefined;
    const batch = buildBatch(events, {
      format: config.format,
      host: this.host,
      hec: config.hec,
      maxEvents: this.batchLimit,
      maxBytes: config.batchMaxBytes,
    });
    const request = this.sender.prepare(batch.body);
    request.catch(() => {}); // a dropped read-ahead is never awaited; a sent one rethrows
    this.readThrough = Math.max(this.readThrough, batch.lastSeq);
    return { after, batch, request };
  }

  private async onFailure(
    outcome: Exclude<SendOutcome, { ok: true }>,
    batch: Batch,
    checkpoint: number,
    delivery: SiemDeliveryRepository,
  ): Promise<void> {
    const { log } = this.deps;
    if (this.abort.signal.aborted) return;
    if (outcome.kind === 'reject' && batch.count > 1) {
      // One event in the batch is refused: halve until it is alone.
      this.batchLimit = Math.max(1, Math.ceil(batch.count / 2));
      return;
    }
    if (outcome.kind === 'reject' && !this.skippedSinceSuccess) {
      delivery.reject(batch.firstSeq, checkpoint, outcome.status ?? 0, outcome.message);
      this.counters.rejected.inc();
      this.skippedSinceSuccess = true;
      log.warn(
        { seq: batch.firstSeq, status: outcome.status, reason: outcome.message },
        'the SIEM refused one event; it is skipped and listed as rejected',
      );
      return;
    }
    await this.failed(outcome, delivery);
  }

  private async failed(
    outcome: Exclude<SendOutcome, { ok: true }>,
    delivery: SiemDeliveryRepository,
  ): Promise<void> {
    const { config, log } = this.deps;
    const hold = outcome.kind !== 'retry';
    const message =
      outcome.kind === 'reject'
        ? `the receiver refuses event after event (${outcome.message}); holding`
        : outcome.message;
    this.status = hold ? 'held' : 'retrying';
    this.lastError = message;
    delivery.failed(this.status, message);
    const failures = delivery.row()?.consecutive_failures ?? 1;
    const ceiling = hold
      ? config.backoffMaxMs
      : exponentialDelay(failures - 1, config.backoffBaseMs, config.backoffMaxMs);
    const delay = equalJitter(ceiling, this.deps.random);
    this.nextAttemptAt = Date.now() + delay;
    const level = failures === 1 || hold ? 'warn' : 'debug';
    log[level](
      {
        status: outcome.status,
        kind: outcome.kind,
        consecutive_failures: failures,
        retry_in_ms: delay,
        err: message,
      },
      hold ? 'SIEM delivery held: the receiver needs attention' : 'SIEM delivery failed; retrying',
    );
    await this.sleep(delay);
    this.nextAttemptAt = undefined;
  }

  private setStatus(status: SiemStatus): void {
    if (this.status === status) return;
    this.status = status;
    try {
      this.delivery().setStatus(status);
    } catch {
      // the store is closing; the status is shown from memory meanwhile
    }
  }

  /** Waits for a stored event (or stop). */
  private idle(): Promise<void> {
    if (this.woken || this.abort.signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        this.woken = false;
        resolve();
      };
    });
  }

  /** Waits `ms` (or until stop); new events do not cut a backoff short. */
  private sleep(ms: number): Promise<void> {
    const signal = this.abort.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
    });
  }
}

interface MetricSource {
  row(): SiemDeliveryRow | undefined;
  /** Lag in events and the age (ms) of the oldest waiting event; undefined when the store is closed. */
  lag(): { events: number; oldestMs: number | undefined } | undefined;
}

function registerMetrics(metrics: ModuleMetrics, source: MetricSource) {
  const delivered = metrics.counter({
    name: 'siem_delivered_events_total',
    help: 'Audit events the SIEM accepted',
  });
  const requests = metrics.counter({
    name: 'siem_requests_total',
    help: 'SIEM requests by outcome: ok, retry (network, timeout, 408, 429, 5xx), reject (400/413/422), hold (other 4xx, redirect, private address)',
    labelNames: ['outcome'],
  });
  const rejected = metrics.counter({
    name: 'siem_rejected_events_total',
    help: 'Events the SIEM refused on their own, skipped and listed in audit_siem_rejected',
  });
  const gauge = (name: string, help: string, value: () => number | undefined) =>
    metrics.gauge({
      name,
      help,
      collect() {
        const v = value();
        if (v !== undefined) this.set(v);
      },
    });
  const fromRow = (pick: (r: SiemDeliveryRow) => number | undefined) => () => {
    const r = source.row();
    return r ? pick(r) : undefined;
  };
  gauge(
    'siem_consecutive_failures',
    'SIEM requests in a row that failed',
    fromRow((r) => r.consecutive_failures),
  );
  gauge(
    'siem_held',
    '1 while forwarding is held on an answer that needs attention (401, 403, 404, redirect…)',
    fromRow((r) => (r.status === 'held' ? 1 : 0)),
  );
  gauge(
    'siem_last_success_timestamp_seconds',
    'When the SIEM last accepted a batch',
    fromRow((r) => (r.last_success_at === null ? undefined : r.last_success_at / 1000)),
  );
  gauge(
    'siem_checkpoint_seq',
    'Every event up to this id was accepted by the SIEM',
    fromRow((r) => r.last_seq),
  );
  gauge('siem_lag_events', 'Stored audit events not yet accepted by the SIEM', () => source.lag()?.events);
  gauge(
    'siem_lag_seconds',
    'Age of the oldest stored event not yet accepted by the SIEM (0 when none waits)',
    () => {
      const lag = source.lag();
      if (!lag) return undefined;
      return lag.oldestMs === undefined ? 0 : Math.max(0, (Date.now() - lag.oldestMs) / 1000);
    },
  );
  return { delivered, requests, rejected };
}
