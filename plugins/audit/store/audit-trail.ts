/**
 * The internal audit trail (spec "What the service does": every mutating request, recorded with
 * the verified identity claims of the caller), kept apart from the audit events themselves.
 */
import type { Database, Statement } from '../../../src/store/database.js';

export type TrailResult = 'success' | 'failure' | 'refused';

/** 401, 403 and 429: refused by authorization or a rate limit, counted rather than listed. */
export const REFUSAL_STATUSES: ReadonlySet<number> = new Set([401, 403, 429]);

export function trailResult(status: number): TrailResult {
  if (REFUSAL_STATUSES.has(status)) return 'refused';
  return status < 400 ? 'success' : 'failure';
}

const HOUR_MS = 3_600_000;
const MAX_DETAIL_CHARS = 8_192;

/** The detail as stored: JSON that always parses, cut down to an excerpt when too long. */
function detailText(detail: Record<string, unknown>): string {
  const text = JSON.stringify(detail);
  if (text.length <= MAX_DETAIL_CHARS) return text;
  return JSON.stringify({
    action: detail.action,
    truncated: true,
    // Quoted again, escaping at most doubles the excerpt: it stays under the limit.
    excerpt: text.slice(0, MAX_DETAIL_CHARS / 2 - 100),
  });
}

export interface TrailEntry {
  at: number;
  requestId?: string;
  method: string;
  path: string;
  route?: string;
  /** What was done: `set-tags`, `create-rule`, … (http/trail.ts names them). */
  action: string;
  status: number;
  subject?: string;
  username?: string;
  issuer?: string;
  roles: readonly string[];
  clientIp?: string;
  /** What changed, e.g. `{ event: "42", tags: [...] }`; never a secret or a token. */
  detail?: Record<string, unknown>;
}

export interface TrailRow {
  id: number;
  at: number;
  request_id: string | null;
  method: string;
  path: string;
  route: string | null;
  status: number;
  subject: string | null;
  username: string | null;
  issuer: string | null;
  roles: string;
  client_ip: string | null;
  detail: string | null;
  action: string;
  result: TrailResult;
  count: number;
  last_at: number | null;
  refusal_key: string | null;
}

export class AuditTrail {
  private readonly insert: Statement;
  private readonly recent: Statement;
  private readonly settleStatement: Statement;
  private readonly bump: Statement;
  private readonly refusalRows: Statement;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(`
      INSERT INTO audit_trail (at, request_id, method, path, route, status, subject, username, issuer, roles, client_ip, detail, action, result, refusal_key)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.recent = db.prepare('SELECT * FROM audit_trail ORDER BY id DESC LIMIT ?');
    this.settleStatement = db.prepare(
      'UPDATE audit_trail SET status = ?, result = ?, detail = coalesce(?, detail) WHERE id = ?',
    );
    this.bump = db.prepare(
      'UPDATE audit_trail SET count = count + 1, last_at = ? WHERE refusal_key = ? AND refusal_key IS NOT NULL',
    );
    this.refusalRows = db
      .prepare(
        "SELECT count(*) FROM audit_trail WHERE refusal_key IS NOT NULL AND at >= ? AND client_ip IS NOT '*'",
      )
      .pluck();
  }

  /** Writes one row; returns its id. Throws when SQLite cannot (the caller decides what that means). */
  record(e: TrailEntry, refusalKey?: string): number {
    const info = this.insert.run(
      e.at,
      e.requestId ?? null,
      e.method,
      e.path.slice(0, 2048),
      e.route ?? null,
      e.status,
      e.subject ?? null,
      e.username ?? null,
      e.issuer ?? null,
      JSON.stringify(e.roles),
      e.clientIp ?? null,
      e.detail ? detailText(e.detail) : null,
      e.action,
      trailResult(e.status),
      refusalKey ?? null,
    );
    return Number(info.lastInsertRowid);
  }

  /** The final status (and detail) of a row written before the request ended. */
  settle(id: number, status: number, detail?: Record<string, unknown>): void {
    this.settleStatement.run(status, trailResult(status), detail ? detailText(detail) : null, id);
  }

  /**
   * Counts a refusal (401, 403, 429) in its row for the hour, client, status, method, route and
   * caller. At most `perHour` such rows start in one hour; beyond that, refusals are counted in
   * one overflow row per status and route (client, method and caller `*`), so a flood from many
   * addresses adds a bounded number of rows however long it lasts.
   */
  refuse(e: TrailEntry, perHour: number): void {
    const hour = Math.floor(e.at / HOUR_MS);
    const key = JSON.stringify([
      hour,
      e.clientIp ?? null,
      e.status,
      e.method,
      e.route ?? null,
      e.username ?? null,
    ]);
    this.db.transaction(() => {
      if (this.bump.run(e.at, key).changes) return;
      if ((this.refusalRows.get(hour * HOUR_MS) as number) < perHour) {
        this.record(e, key);
        return;
      }
      const overflow = JSON.stringify([hour, '*', e.status, '*', e.route ?? null, '*']);
      if (this.bump.run(e.at, overflow).changes) return;
      const { subject: _s, issuer: _i, ...rest } = e;
      this.record({ ...rest, method: '*', clientIp: '*', username: '*', roles: [] }, overflow);
    })();
  }

  latest(limit: number): TrailRow[] {
    return this.recent.all(limit) as TrailRow[];
  }
}
