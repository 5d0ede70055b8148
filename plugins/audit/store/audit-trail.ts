/**
 * The internal audit trail (spec "What the service does": every mutating request, recorded with
 * the verified identity claims of the caller), kept apart from the audit events themselves.
 */
import type { Database, Statement } from '../../../src/store/database.js';

export interface TrailEntry {
  at: number;
  requestId?: string;
  method: string;
  path: string;
  route?: string;
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
}

export class AuditTrail {
  private readonly insert: Statement;
  private readonly recent: Statement;

  constructor(db: Database) {
    this.insert = db.prepare(`
      INSERT INTO audit_trail (at, request_id, method, path, route, status, subject, username, issuer, roles, client_ip, detail)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.recent = db.prepare('SELECT * FROM audit_trail ORDER BY id DESC LIMIT ?');
  }

  record(e: TrailEntry): void {
    this.insert.run(
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
      e.detail ? JSON.stringify(e.detail).slice(0, 8192) : null,
    );
  }

  latest(limit: number): TrailRow[] {
    return this.recent.all(limit) as TrailRow[];
  }
}
