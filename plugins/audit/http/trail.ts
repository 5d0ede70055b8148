/**
 * Writes the internal audit trail (spec: "Records every mutating request in a separate internal
 * audit trail, using the verified identity claims of the caller"): every POST, PUT, PATCH and
 * DELETE that reaches the audit routes, refused ones included, with the caller as verified
 * (anonymous when auth is off or the token was refused), the status, and what changed.
 */
import type { MiddlewareHandler } from 'hono';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { AuditStore } from '../store/audit-store.js';
import { type AuditEnv, callerOf, clientAddress, requestIdOf } from './context.js';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function auditTrail(options: { store: AuditStore; log: KernelLogger }): MiddlewareHandler<AuditEnv> {
  return async function auditTrailMiddleware(c, next) {
    await next();
    if (!MUTATING.has(c.req.method)) return;
    const caller = callerOf(c);
    const requestId = requestIdOf(c);
    try {
      options.store.repos().trail.record({
        at: Date.now(),
        ...(requestId ? { requestId } : {}),
        method: c.req.method,
        path: c.req.path,
        ...(c.req.routePath ? { route: c.req.routePath } : {}),
        status: c.res.status,
        ...(caller.subject ? { subject: caller.subject } : {}),
        username: caller.username,
        ...(caller.issuer ? { issuer: caller.issuer } : {}),
        roles: caller.roles,
        clientIp: clientAddress(c),
        ...(c.get('trailDetail') ? { detail: c.get('trailDetail') } : {}),
      });
    } catch (err) {
      options.log.error({ err, path: c.req.path, requestId }, 'the audit trail could not be written');
    }
  };
}
