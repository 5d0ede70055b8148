/**
 * Writes the internal audit trail (spec: "Records every mutating request in a separate internal
 * audit trail, using the verified identity claims of the caller"; issue 14: "no change without its
 * record", refusals recorded).
 *
 * - A mutation writes its row itself, through `trailOf(c)`: inside the change's SQLite
 *   transaction (tags, comments, bulk tags, rules), or before an action that is not one
 *   transaction (fetch now). A row that cannot be written means no change and a 503.
 * - Every other POST, PUT, PATCH and DELETE (bad input, 404, 409…) gets its row here, after the
 *   answer, one per request.
 * - A request of any method refused by authorization or a rate limit (401, 403, 429) is counted
 *   in one row per hour, client, status, method, route and caller, with a cap on new rows per
 *   hour (store/audit-trail.ts `refuse`): a flood cannot grow the table without limit. This
 *   middleware therefore runs before the rate limiter.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { ProblemError } from '../../../src/http/problem.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { AuditStore } from '../store/audit-store.js';
import { REFUSAL_STATUSES, type TrailEntry } from '../store/audit-trail.js';
import {
  type AuditContext,
  type AuditEnv,
  callerOf,
  clientAddress,
  requestIdOf,
  type TrailRecorder,
} from './context.js';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What a trail row says was done; `read` for a refused read, `other` for anything unnamed. */
export const TRAIL_ACTIONS = [
  'set-tags',
  'add-comment',
  'bulk-tags',
  'fetch',
  'create-rule',
  'update-rule',
  'delete-rule',
  'create-saved-search',
  'update-saved-search',
  'delete-saved-search',
  'ask',
  'explain',
  'webhook-validation',
  'webhook-notification',
  'read',
  'other',
] as const;
export type TrailAction = (typeof TRAIL_ACTIONS)[number];

const ACTION_BY_ROUTE: Record<string, TrailAction> = {
  'PATCH /api/events/:id/tags': 'set-tags',
  'POST /api/events/:id/comments': 'add-comment',
  'POST /api/events/bulk-tags': 'bulk-tags',
  'POST /api/fetch': 'fetch',
  'POST /api/rules': 'create-rule',
  'PUT /api/rules/:id': 'update-rule',
  'DELETE /api/rules/:id': 'delete-rule',
  'POST /api/saved-searches': 'create-saved-search',
  'PUT /api/saved-searches/:id': 'update-saved-search',
  'DELETE /api/saved-searches/:id': 'delete-saved-search',
  'POST /api/ask': 'ask',
  'POST /api/events/:id/explain': 'explain',
  'POST /api/webhooks/directory': 'webhook-notification',
};

/** Answered when a mutation's trail row cannot be written: the change was undone (or never made). */
export class TrailUnavailableError extends ProblemError {
  constructor() {
    super(
      503,
      'the internal audit trail cannot be written, so nothing was changed; try again shortly, and tell the hub’s administrator if it persists',
      { headers: { 'retry-after': '30' } },
    );
  }
}

/**
 * The route as registered (`/api/events/:id/tags`), never the raw path: the first handler of
 * this route group that matched the request (what answers it), or the group's wildcard when
 * none did. Bounded by the routes the plugin registers, whatever paths a client sends.
 * `self` is this middleware's index among the matched routes; the group's prefix is its path.
 */
function routeOf(c: Context, self: number): string {
  const routes = matchedRoutes(c);
  const group = (routes[self]?.path ?? '/*').replace(/\/?\*$/, '');
  const inGroup = (path: string) => path === group || path.startsWith(`${group}/`);
  const handler = routes.find((r, i) => i > self && r.method !== 'ALL' && inGroup(r.path));
  const path = handler?.path ?? routes[self]?.path ?? '*';
  return path.length > 1 ? path.replace(/\/$/, '') : path;
}

function actionOf(method: string, route: string, detail?: Record<string, unknown>): TrailAction {
  const named = detail?.action;
  if (typeof named === 'string' && (TRAIL_ACTIONS as readonly string[]).includes(named)) {
    return named as TrailAction;
  }
  return ACTION_BY_ROUTE[`${method} ${route}`] ?? (method === 'GET' || method === 'HEAD' ? 'read' : 'other');
}

/** The request's recorder; set by the trail middleware on every audit route group. */
export function trailOf(c: AuditContext): TrailRecorder {
  const recorder = c.get('trail');
  if (!recorder) throw new Error('the audit trail middleware does not run for this route');
  return recorder;
}

export function auditTrail(options: {
  store: AuditStore;
  log: KernelLogger;
  /** New refusal rows per hour before refusals are counted in overflow rows (AUDIT_TRAIL_REFUSALS_PER_HOUR). */
  refusalsPerHour: number;
}): MiddlewareHandler<AuditEnv> {
  const { store, log } = options;
  return async function auditTrailMiddleware(c, next) {
    const self = c.req.routeIndex;
    const entry = (status: number, detail?: Record<string, unknown>): TrailEntry => {
      const caller = callerOf(c);
      const requestId = requestIdOf(c);
      const route = routeOf(c, self);
      return {
        at: Date.now(),
        ...(requestId ? { requestId } : {}),
        method: c.req.method,
        path: c.req.path,
        route,
        action: actionOf(c.req.method, route, detail),
        status,
        ...(caller.subject ? { subject: caller.subject } : {}),
        username: caller.username,
        ...(caller.issuer ? { issuer: caller.issuer } : {}),
        roles: caller.roles,
        clientIp: clientAddress(c),
        ...(detail ? { detail } : {}),
      };
    };
    let written: { id: number; status: number; detail: Record<string, unknown> } | undefined;
    const write = (status: number, detail: Record<string, unknown>): number => {
      try {
        return store.repos().trail.record(entry(status, detail));
      } catch (err) {
        log.error(
          { err, path: c.req.path, requestId: requestIdOf(c) },
          'the audit trail could not be written; the change was refused',
        );
        throw new TrailUnavailableError();
      }
    };
    c.set('trail', {
      within(status, change, describe) {
        const db = store.repos().db;
        let row: number | undefined;
        let detail: Record<string, unknown> | undefined;
        const result = db.transaction(() => {
          const value = change();
          detail = describe(value);
          if (detail) row = write(status, detail);
          return value;
        })();
        if (row !== undefined && detail) written = { id: row, status, detail };
        return result;
      },
      before(status, detail) {
        written = { id: write(status, detail), status, detail };
      },
    });

    await next();

    const status = c.res.status;
    try {
      if (written) {
        // Written before the answer was known (fetch now), or a later step failed: settle it.
        const detail = c.get('trailDetail');
        const changed = detail !== undefined && detail !== written.detail;
        if (status !== written.status || changed) {
          store.repos().trail.settle(written.id, status, changed ? detail : undefined);
        }
        return;
      }
      if (REFUSAL_STATUSES.has(status)) {
        store.repos().trail.refuse(entry(status), options.refusalsPerHour);
        return;
      }
      if (!MUTATING.has(c.req.method)) return;
      store.repos().trail.record(entry(status, c.get('trailDetail')));
    } catch (err) {
      log.error({ err, path: c.req.path, requestId: requestIdOf(c) }, 'the audit trail could not be written');
    }
  };
}
