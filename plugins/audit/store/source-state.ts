/**
 * Per source: the incremental watermark (spec "Watermark: one per source") and the health shown
 * in `GET /api/source-health` (spec: `last_attempt_time` and an error status) — plus, for the
 * Office 365 sources, the content blobs already fetched (skipped when listed again) and those
 * that failed (retried on later runs until they expire).
 */
import type { Database, Statement } from '../../../src/store/database.js';
import type { SourceName } from '../sources.js';

/** ok: last run complete; error / throttled: last run ended early (the next run resumes); pending: never ran. */
export type SourceStatus = 'pending' | 'running' | 'ok' | 'error' | 'throttled' | 'not_configured';

export interface SourceStateRow {
  source: SourceName;
  watermark: number | null;
  status: SourceStatus;
  last_attempt_time: number | null;
  last_success_time: number | null;
  last_error: string | null;
  consecutive_failures: number;
  events_fetched: number;
  events_stored: number;
  duplicates: number;
  malformed: number;
  throttled: number;
  errors: number;
}

export interface SourceCounts {
  fetched?: number;
  stored?: number;
  duplicates?: number;
  malformed?: number;
  throttled?: number;
  errors?: number;
}

export interface ContentBlob {
  contentId: string;
  contentUri: string;
  contentCreated: number;
  contentExpiration: number;
}

export class SourceStates {
  private readonly ensureRow: Statement;
  private readonly selectOne: Statement;
  private readonly selectAll: Statement;
  private readonly attempt: Statement;
  private readonly success: Statement;
  private readonly failure: Statement;
  private readonly counts: Statement;
  private readonly watermark: Statement;
  private readonly blobState: Statement;
  private readonly upsertBlob: Statement;
  private readonly pendingBlobs: Statement;
  private readonly expireBlobs: Statement;
  private readonly pendingCount: Statement;
  private readonly interrupted: Statement;

  constructor(db: Database) {
    this.ensureRow = db.prepare('INSERT OR IGNORE INTO audit_sources (source) VALUES (?)');
    this.selectOne = db.prepare('SELECT * FROM audit_sources WHERE source = ?');
    this.selectAll = db.prepare('SELECT * FROM audit_sources ORDER BY source');
    this.attempt = db.prepare(
      "UPDATE audit_sources SET status = 'running', last_attempt_time = ? WHERE source = ?",
    );
    this.success = db.prepare(
      "UPDATE audit_sources SET status = 'ok', last_success_time = ?, last_error = NULL, consecutive_failures = 0 WHERE source = ?",
    );
    this.failure = db.prepare(
      'UPDATE audit_sources SET status = ?, last_error = ?, consecutive_failures = consecutive_failures + 1 WHERE source = ?',
    );
    this.counts = db.prepare(`UPDATE audit_sources SET
      events_fetched = events_fetched + ?, events_stored = events_stored + ?, duplicates = duplicates + ?,
      malformed = malformed + ?, throttled = throttled + ?, errors = errors + ? WHERE source = ?`);
    this.watermark = db.prepare('UPDATE audit_sources SET watermark = ? WHERE source = ?');
    this.blobState = db
      .prepare('SELECT state FROM audit_content_blobs WHERE source = ? AND content_id = ?')
      .pluck();
    this.upsertBlob = db.prepare(`
      INSERT INTO audit_content_blobs
        (source, content_id, content_uri, content_created, content_expiration, state, attempts, last_error, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (source, content_id) DO UPDATE SET
        state = excluded.state, attempts = audit_content_blobs.attempts + excluded.attempts,
        last_error = excluded.last_error, updated_at = excluded.updated_at`);
    this.pendingBlobs = db.prepare(`
      SELECT content_id AS contentId, content_uri AS contentUri, content_created AS contentCreated,
             content_expiration AS contentExpiration
      FROM audit_content_blobs WHERE source = ? AND state = 'pending' AND content_expiration > ?
      ORDER BY content_created LIMIT ?`);
    this.expireBlobs = db.prepare(
      "UPDATE audit_content_blobs SET state = 'expired', updated_at = ? WHERE source = ? AND state = 'pending' AND content_expiration <= ?",
    );
    this.interrupted = db.prepare(
      "UPDATE audit_sources SET status = 'error', last_error = 'interrupted: the hub stopped during the run' WHERE status = 'running'",
    );
    this.pendingCount = db
      .prepare("SELECT count(*) FROM audit_content_blobs WHERE source = ? AND state = 'pending'")
      .pluck();
  }

  ensure(sources: readonly SourceName[]): void {
    for (const s of sources) this.ensureRow.run(s);
  }

  /** Runs left `running` by a hub that stopped mid-run: they ended, without completing. */
  markInterrupted(): number {
    return this.interrupted.run().changes;
  }

  get(source: SourceName): SourceStateRow | undefined {
    return this.selectOne.get(source) as SourceStateRow | undefined;
  }

  all(): SourceStateRow[] {
    return this.selectAll.all() as SourceStateRow[];
  }

  recordAttempt(source: SourceName, at: number): void {
    this.attempt.run(at, source);
  }

  recordSuccess(source: SourceName, at: number): void {
    this.success.run(at, source);
  }

  recordFailure(source: SourceName, status: 'error' | 'throttled', error: string): void {
    this.failure.run(status, error.slice(0, 500), source);
  }

  add(source: SourceName, c: SourceCounts): void {
    this.counts.run(
      c.fetched ?? 0,
      c.stored ?? 0,
      c.duplicates ?? 0,
      c.malformed ?? 0,
      c.throttled ?? 0,
      c.errors ?? 0,
      source,
    );
  }

  setWatermark(source: SourceName, at: number): void {
    this.watermark.run(at, source);
  }

  blobDone(source: SourceName, contentId: string): boolean {
    const state = this.blobState.get(source, contentId) as string | undefined;
    return state === 'done' || state === 'expired';
  }

  markBlob(
    source: SourceName,
    blob: ContentBlob,
    state: 'done' | 'pending',
    at: number,
    error?: string,
  ): void {
    this.upsertBlob.run(
      source,
      blob.contentId,
      blob.contentUri,
      blob.contentCreated,
      blob.contentExpiration,
      state,
      1,
      error?.slice(0, 500) ?? null,
      at,
    );
  }

  /** Pending blobs still retrievable, oldest first. */
  pending(source: SourceName, now: number, limit = 1000): ContentBlob[] {
    return this.pendingBlobs.all(source, now, limit) as ContentBlob[];
  }

  /** Gives up on pending blobs past their expiry (the API no longer serves them); returns how many. */
  expire(source: SourceName, now: number): number {
    return this.expireBlobs.run(now, source, now).changes;
  }

  pendingBlobCount(source: SourceName): number {
    return this.pendingCount.get(source) as number;
  }
}
