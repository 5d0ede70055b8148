/**
 * What SIEM forwarding keeps in SQLite (migration 5): the checkpoint — every event up to
 * `last_seq` was accepted by the receiver — with the delivery counters and status shown in
 * `/health` and `/api/source-health`, and the events the receiver refused on their own.
 *
 * The events table is the queue: a stored event's `seq` is assigned in commit order by the one
 * writer, so "everything after the checkpoint, by seq" is every undelivered event, in order, and
 * a restart resumes where the last accepted batch ended.
 */
import type { Database, Statement } from '../../../src/store/database.js';

export const SIEM_SINK = 'siem';

export type SiemStatus = 'idle' | 'delivering' | 'retrying' | 'held';

export interface SiemDeliveryRow {
  sink: string;
  last_seq: number;
  delivered: number;
  rejected: number;
  failures: number;
  consecutive_failures: number;
  status: SiemStatus;
  last_error: string | null;
  last_attempt_at: number | null;
  last_success_at: number | null;
  updated_at: number;
}

/**
 * One event as read for forwarding: the event's columns, and the raw record's JSON text. A row
 * array rather than an object (better-sqlite3's `raw()` mode): building a 13-property object per
 * event was a third of the forwarder's time on the thread that also ingests.
 */
export type OutboxEvent = [
  seq: number,
  source: string,
  source_key: string,
  ts: number,
  service: string,
  operation: string,
  result: string,
  result_raw: string,
  actor: string,
  target: string,
  tags: string,
  ingested_at: number,
  raw: string | null,
  /** Issue 29: the tenant's short name. */
  tenant?: string,
];

export class SiemDeliveryRepository {
  private readonly readRow: Statement;
  private readonly insertRow: Statement;
  private readonly advance: Statement;
  private readonly failure: Statement;
  private readonly setStatusStmt: Statement;
  private readonly rewindStmt: Statement;
  private readonly rejectStmt: Statement;
  private readonly batch: Statement;
  private readonly maxSeq: Statement;
  private readonly oldestAfter: Statement;

  constructor(
    private readonly db: Database,
    private readonly sink = SIEM_SINK,
  ) {
    this.readRow = db.prepare('SELECT * FROM audit_siem_delivery WHERE sink = ?');
    this.insertRow = db.prepare(
      'INSERT INTO audit_siem_delivery (sink, last_seq, updated_at) VALUES (?, ?, ?) ON CONFLICT (sink) DO NOTHING',
    );
    this.advance = db.prepare(`
      UPDATE audit_siem_delivery SET last_seq = ?, delivered = delivered + ?, consecutive_failures = 0,
        status = ?, last_error = NULL, last_attempt_at = ?, last_success_at = ?, updated_at = ?
      WHERE sink = ? AND last_seq = ?`);
    this.failure = db.prepare(`
      UPDATE audit_siem_delivery SET failures = failures + 1, consecutive_failures = consecutive_failures + 1,
        status = ?, last_error = ?, last_attempt_at = ?, updated_at = ?
      WHERE sink = ?`);
    this.setStatusStmt = db.prepare(
      'UPDATE audit_siem_delivery SET status = ?, updated_at = ? WHERE sink = ?',
    );
    this.rewindStmt = db.prepare(
      'UPDATE audit_siem_delivery SET last_seq = ?, updated_at = ? WHERE sink = ? AND last_seq > ?',
    );
    this.rejectStmt = db.prepare(`
      INSERT INTO audit_siem_rejected (sink, seq, status, reason, rejected_at) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (sink, seq) DO UPDATE SET status = excluded.status, reason = excluded.reason,
        rejected_at = excluded.rejected_at`);
    this.batch = db
      .prepare(`
      SELECT e.seq, e.source, e.source_key, e.ts, e.service, o.name AS operation, r.normalized AS result,
        r.raw AS result_raw, a.name AS actor, e.target, e.tags, e.ingested_at, w.raw AS raw,
        n.name AS tenant
      FROM audit_events e
        JOIN audit_operations o ON o.id = e.operation_id
        JOIN audit_results r ON r.id = e.result_id
        JOIN audit_actors a ON a.id = e.actor_id
        LEFT JOIN audit_event_raw w ON w.seq = e.seq
        LEFT JOIN audit_tenants n ON n.id = e.tenant_id
      WHERE e.seq > ? ORDER BY e.seq LIMIT ?`)
      .raw();
    this.maxSeq = db.prepare('SELECT coalesce(max(seq), 0) FROM audit_events').pluck();
    this.oldestAfter = db
      .prepare('SELECT ingested_at FROM audit_events WHERE seq > ? ORDER BY seq LIMIT 1')
      .pluck();
  }

  /**
   * The sink's row, created on first use with the checkpoint at the newest stored event: turning
   * forwarding on sends what is stored from then on, not the whole retention period.
   */
  ensure(now = Date.now()): SiemDeliveryRow {
    this.insertRow.run(this.sink, this.newestSeq(), now);
    return this.row()!;
  }

  row(): SiemDeliveryRow | undefined {
    return this.readRow.get(this.sink) as SiemDeliveryRow | undefined;
  }

  newestSeq(): number {
    return this.maxSeq.get() as number;
  }

  /** When the oldest event not yet delivered was stored (ms), or undefined when none waits. */
  oldestWaitingSince(afterSeq: number): number | undefined {
    return this.oldestAfter.get(afterSeq) as number | undefined;
  }

  /** Up to `limit` events after `afterSeq`, in seq order (columns in the order of `OutboxEvent`). */
  eventsAfter(afterSeq: number, limit: number): OutboxEvent[] {
    return this.batch.all(afterSeq, limit) as OutboxEvent[];
  }

  /**
   * Moves the checkpoint from `from` to `to` after the receiver accepted a batch of `count`
   * events. Compare-and-set on `from`: a rewind that happened meanwhile is not overwritten.
   */
  delivered(from: number, to: number, count: number, status: SiemStatus, now = Date.now()): boolean {
    return this.advance.run(to, count, status, now, now, now, this.sink, from).changes === 1;
  }

  failed(status: SiemStatus, error: string, now = Date.now()): void {
    this.failure.run(status, error.slice(0, 1000), now, now, this.sink);
  }

  setStatus(status: SiemStatus, now = Date.now()): void {
    this.setStatusStmt.run(status, now, this.sink);
  }

  /** Moves the checkpoint back (an event was stored with a seq at or below it). */
  rewind(to: number, now = Date.now()): boolean {
    return this.rewindStmt.run(to, now, this.sink, to).changes === 1;
  }

  /** Records an event the receiver refused on its own and moves the checkpoint past it. */
  reject(seq: number, from: number, status: number, reason: string, now = Date.now()): void {
    this.db.transaction(() => {
      this.rejectStmt.run(this.sink, seq, status, reason.slice(0, 1000), now);
      this.db
        .prepare(
          'UPDATE audit_siem_delivery SET last_seq = ?, rejected = rejected + 1, updated_at = ? WHERE sink = ? AND last_seq = ?',
        )
        .run(seq, now, this.sink, from);
    })();
  }

  rejectedEvents(limit = 100): Array<{ seq: number; status: number; reason: string; rejected_at: number }> {
    return this.db
      .prepare(
        'SELECT seq, status, reason, rejected_at FROM audit_siem_rejected WHERE sink = ? ORDER BY seq LIMIT ?',
      )
      .all(this.sink, limit) as Array<{ seq: number; status: number; reason: string; rejected_at: number }>;
  }
}
