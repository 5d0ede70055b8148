/**
 * What the audit routes share through the request context: the caller (verified claims when
 * AUTH_ENABLED, else anonymous) and what a mutation changed, for the audit trail.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { ProblemError } from '../../../src/http/problem.js';

export interface Caller {
  authenticated: boolean;
  /** `sub` of the verified token. */
  subject?: string;
  username: string;
  issuer?: string;
  roles: readonly string[];
}

export const ANONYMOUS: Caller = { authenticated: false, username: 'anonymous', roles: [] };

export type AuditEnv = {
  Variables: {
    caller: Caller;
    /** Set by a mutating route: what it changed, for the audit trail. */
    trailDetail: Record<string, unknown>;
    /** Writes the request's trail row with its change (http/trail.ts). */
    trail: TrailRecorder;
  };
};

/** No change without its record (issue 14): how a mutating route writes its trail row. */
export interface TrailRecorder {
  /**
   * Runs `change` and writes the trail row (with `status` and what `detail` says) in the same
   * SQLite transaction; no row when `detail` answers undefined (nothing changed, e.g. a 404). A
   * row that cannot be written undoes the change and answers 503.
   */
  within<T>(status: number, change: () => T, detail: (result: T) => Record<string, unknown> | undefined): T;
  /** For an action that is not one transaction: writes the row first, 503 (nothing done) when it cannot. */
  before(status: number, detail: Record<string, unknown>): void;
}

export type AuditContext = Context<AuditEnv>;

export function callerOf(c: AuditContext): Caller {
  return c.get('caller') ?? ANONYMOUS;
}

/** The TCP peer; forwarded-for headers are not trusted (the hub sits on the LAN, not behind a proxy). */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? 'unknown';
}

export function requestIdOf(c: Context): string | undefined {
  return c.get('requestId') as string | undefined;
}

export function fieldProblem(field: string, message: string, status = 400): ProblemError {
  return new ProblemError(status, `invalid ${field}`, { errors: [{ field, message }] });
}

/** Reads a JSON body, refusing other media types with 415 (the hub's onError turns bad JSON into 400). */
export async function jsonBody(c: Context): Promise<unknown> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json(\s*;|$)/i.test(type)) {
    throw new ProblemError(415, 'the request body must be application/json');
  }
  return c.req.json();
}
