/**
 * Bearer checks for the audit routes (spec "Authentication"): off unless AUTH_ENABLED; then every
 * request needs a JWT that the hub's one identity verifies (the identity provider's JWKS, with
 * issuer AUTH_ISSUER and audience AUTH_AUDIENCE, or the hub's own issuer). Roles of the
 * provider's tokens come from AUDIT_ROLES_CLAIM, else AUTH_ROLES_CLAIM (default `roles`).
 *
 * Enabled but incomplete ("misconfigured") fails closed: 503 for every route that needs a token,
 * rather than letting requests through. Client errors are generic; the reason goes to the log.
 */
import type { MiddlewareHandler } from 'hono';
import { AuthError, bearerToken, rolesFrom, type TokenVerifier } from '../../../src/auth/jwt-verifier.js';
import { ProblemError } from '../../../src/http/problem.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { AuthSettings } from '../config.js';
import { ANONYMOUS, type AuditEnv, type Caller, callerOf } from './context.js';

const CHALLENGE = 'Bearer realm="meshhub-audit"';

export function authenticate(options: {
  auth: AuthSettings;
  verifier: TokenVerifier | undefined;
  log: KernelLogger;
}): MiddlewareHandler<AuditEnv> {
  const { auth, verifier, log } = options;
  return async function auditAuthMiddleware(c, next) {
    if (c.req.method === 'OPTIONS') return next();
    if (auth.state === 'off') {
      c.set('caller', ANONYMOUS);
      return next();
    }
    if (auth.state === 'misconfigured' || !verifier) {
      throw new ProblemError(
        503,
        'sign-in is not available: the hub’s authentication settings are incomplete',
      );
    }
    const token = bearerToken(c.req.header('authorization'));
    if (!token) {
      throw new ProblemError(401, 'a bearer token is required', {
        headers: { 'www-authenticate': CHALLENGE },
      });
    }
    try {
      const identity = await verifier.verify(token);
      c.set('caller', {
        authenticated: true,
        subject: identity.subject,
        username: identity.username,
        issuer: identity.issuer,
        // The provider's tokens carry roles where AUDIT_ROLES_CLAIM says; the hub's own, in `roles`.
        roles: identity.issuer === auth.issuer ? rolesFrom(identity.claims, auth.rolesClaim) : identity.roles,
      });
    } catch (error) {
      if (!(error instanceof AuthError)) throw error;
      log.debug({ reason: error.reason }, 'bearer token refused');
      if (error.reason === 'keys_unavailable') {
        throw new ProblemError(503, 'the identity provider’s keys could not be fetched; try again later');
      }
      throw new ProblemError(401, 'the bearer token is not valid', {
        headers: { 'www-authenticate': `${CHALLENGE}, error="invalid_token"` },
      });
    }
    return next();
  };
}

/** Who administers (the trail, rules): with auth on, AUDIT_ADMIN_ROLES or `admin`; with it off, anyone. */
export function auditAdminRoles(auth: AuthSettings): readonly string[] {
  if (auth.state !== 'on') return [];
  return auth.adminRoles.length ? auth.adminRoles : ['admin'];
}

/** Who may `POST /api/fetch`: with auth on, AUDIT_ADMIN_ROLES (empty: any caller); with it off, anyone. */
export function fetchRoles(auth: AuthSettings): readonly string[] {
  return auth.state === 'on' ? auth.adminRoles : [];
}

/** Whether the caller holds one of `roles` (an empty list lets every caller through). */
export function holdsAnyRole(caller: Caller, roles: readonly string[]): boolean {
  return !roles.length || caller.roles.some((r) => roles.includes(r));
}

/** 403 unless the caller holds one of `roles` (an empty list lets every caller through). */
export function requireAnyRole(roles: readonly string[]): MiddlewareHandler<AuditEnv> {
  return async function requireAnyRoleMiddleware(c, next) {
    if (!holdsAnyRole(callerOf(c), roles)) {
      throw new ProblemError(403, 'this action needs an administrator role');
    }
    return next();
  };
}
