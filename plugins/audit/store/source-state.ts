/**
 * Per (tenant, source) (issue 29: each tenant its own, `forTenant`): the incremental watermark (spec "Watermark: one per source") and the health shown
 * in `GET /api/source-health` (spec: `last_attempt_time` and an error status) — plus, for the
 * Office 365 sources, the content blobs already fetched (skipped when listed again) and those
 * that failed (retried on later runs until they expire).
 */
import type { Database, Statement } from '../../../src/store/database.js';
import type { SourceName } from '../sources.js';

/** ok: last run complete; error / throttled: last run ended early (the next run resumes); pending: never ran. */
export type SourceStatus = 'pending' | 'running' | 'ok' | 'error' | 'throttled' | 'not_configured';

export interface SourceStateRow {
  /** The tenant's id in audit_tenants (1: `default`) and its name. */
  tenant_id: number;
  tenant: string;
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

class Statements {
  readonly ensureRow: Statement;
  readonly selectOne: Statement;
  readonly selectAll: Statement;
  readonly attempt: Statement;
  readonly success: Statement;
  readonly failure: Statement;
  readonly counts: Statement;
  readonly watermark: Statement;
  readonly blobState: Statement;
  readonly upsertBlob: Statement;
  readonly pendingBlobs: Statement;
  readonly expireBlobs: Statement;
  readonly pendingCount: Statement;
  readonly interrupted: Statement;

  constructor(db: Database) {
    this.ensureRow = db.prepare('INSERT OR IGNORE INTO audit_sources (tenant_id, source) VALUES (?, ?)');
    this.selectOne =
      db.prepare(`SELECT s.*, t.name AS tenant FROM audit_sources s JOIN audit_tenants t ON t.id = s.tenant_id
      WHERE s.tenant_id = ? AND s.source = ?`);
    this.selectAll =
      db.prepare(`SELECT s.*, t.name AS tenant FROM audit_sources s JOIN audit_tenants t ON t.id = s.tenant_id
      ORDER BY s.tenant_id, s.source`);
    this.attempt = db.prepare(
      "UPDATE audit_sources SET status = 'running', last_attempt_time = ? WHERE tenant_id = ? AND source = ?",
    );
    this.success = db.prepare(
      "UPDATE audit_sources SET status = 'ok', last_success_time = ?, last_error = NULL, consecutive_failures = 0 WHERE tenant_id = ? AND source = ?",
    );
    this.failure = db.prepare(
      'UPDATE audit_sources SET status = ?, last_error = ?, consecutive_failures = consecutive_failures + 1 WHERE tenant_id = ? AND source = ?',
    );
    this.counts = db.prepare(`UPDATE audit_sources SET
      events_fetched = events_fetched + ?, events_stored = events_stored + ?, duplicates = duplicates + ?,
      malformed = malformed + ?, throttled = throttled + ?, errors = errors + ? WHERE tenant_id = ? AND source = ?`);
    this.watermark = db.prepare('UPDATE audit_sources SET watermark = ? WHERE tenant_id = ? AND source = ?');
    this.blobState = db
      .prepare('SELECT state FROM audit_content_blobs WHERE tenant_id = ? AND source = ? AND content_id = ?')
      .pluck();
    this.upsertBlob = db.prepare(`
      INSERT INTO audit_content_blobs
        (tenant_id, source, content_id, content_uri, content_created, content_expiration, state, attempts, last_error, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant_id, source, content_id) DO UPDATE SET
        state = excluded.state, attempts = audit_content_blobs.attempts + excluded.attempts,
        last_error = excluded.last_error, updated_at = excluded.updated_at`);
    this.pendingBlobs = db.prepare(`
      SELECT content_id AS contentId, content_uri AS contentUri, content_created AS contentCreated,
             content_expiration AS contentExpiration
      FROM audit_content_blobs WHERE tenant_id = ? AND source = ? AND state = 'pending' AND content_expiration > ?
      ORDER BY content_created LIMIT ?`);
    this.expireBlobs = db.prepare(
      "UPDATE audit_content_blobs SET state = 'expired', updated_at = ? WHERE tenant_id = ? AND source = ? AND state = 'pending' AND content_expiration <= ?",
    );
    this.interrupted = db.prepare(
      "UPDATE audit_sources SET status = 'error', last_error = 'interrupted: the hub stopped during the run' WHERE status = 'running'",
    );
    this.pendingCount = db
      .prepare(
        "SELECT count(*) FROM audit_content_blobs WHERE tenant_id = ? AND source = ? AND state = 'pending'",
      )
      .pluck();
  }
}

/**
 * The watermarks, health and content blobs of one tenant's sources (`forTenant`); the store's
 * own instance is the `default` tenant's (id 1), as before tenants existed.
 */
export class SourceStates {
  private readonly q: Statements;

  constructor(
    db: Database | Statements,
    /** audit_tenants.id */
    readonly tenantId = 1,
  ) {
    this.q = db instanceof Statements ? db : new Statements(db);
  }

  /** The same, for another tenant (its audit_tenants id). */
  forTenant(tenantId: number): SourceStates {
    return tenantId === this.tenantId ? this : new SourceStates(this.q, tenantId);
  }

  ensure(sources: readonly SourceName[]): void {
    for (const s of sources) this.q.ensureRow.run(this.tenantId, s);
  }

  /** Runs left `running` by a hub that stopped mid-run: they ended, without completing. */
  markInterrupted(): number {
    return this.q.interrupted.run().changes;
  }

  get(source: SourceName): SourceStateRow | undefined {
    return this.q.selectOne.get(this.tenantId, source) as SourceStateRow | undefined;
  }

  /** Every tenant's rows (the health route, the metrics). */
  all(): SourceStateRow[] {
    return this.q.selectAll.all() as SourceStateRow[];
  }

  recordAttempt(source: SourceName, at: number): void {
    this.q.attempt.run(at, this.tenantId, source);
  }

  recordSuccess(source: SourceName, at: number): void {
    this.q.success.run(at, this.tenantId, source);
  }

  recordFailure(source: SourceName, status: 'error' | 'throttled', error: string): void {
    this.q.failure.run(status, error.slice(0, 500), this.tenantId, source);
  }

  add(source: SourceName, c: SourceCounts): void {
    this.q.counts.run(
      c.fetched ?? 0,
      c.stored ?? 0,
      c.duplicates ?? 0,
      c.malformed ?? 0,
      c.throttled ?? 0,
      c.errors ?? 0,
      this.tenantId,
      source,
    );
  }

  setWatermark(source: SourceName, at: number): void {
    this.q.watermark.run(at, this.tenantId, source);
  }

  blobDone(source: SourceName, contentId: string): boolean {
    const state = this.q.blobState.get(this.tenantId, source, contentId) as string | undefined;
    return state === 'done' || state === 'expired';
  }

  markBlob(
    source: SourceName,
    blob: ContentBlob,
    state: 'done' | 'pending',
    at: number,
    error?: string,
  ): void {
    this.q.upsertBlob.run(
      this.tenantId,
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
    return this.q.pendingBlobs.all(this.tenantId, source, now, limit) as ContentBlob[];
  }

  /** Gives up on pending blobs past their expiry (the API no longer serves them); returns how many. */
  expire(source: SourceName, now: number): number {
    return this.q.expireBlobs.run(now, this.tenantId, source, now).changes;
  }

  pendingBlobCount(source: SourceName): number {
    return this.q.pendingCount.get(this.tenantId, source) as number;
  }
}
