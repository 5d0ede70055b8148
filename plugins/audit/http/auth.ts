/**
 * Bearer checks for the audit routes (spec "Authentication"): off unless AUTH_ENABLED; then every
 * request needs a JWT that the hub's one identity verifies (the identity provider's JWKS, with
 * issuer AUTH_ISSUER and audience AUTH_AUDIENCE, or the hub's own issuer). Roles of the
 * provider's tokens come from AUDIT_ROLES_CLAIM, else AUTH_ROLES_CLAIM (default `roles`).
 *
 * Enabled but incomplete ("misconfigured") fails closed: 503 for every route that needs a token,
 * rather than letting requests through. Client errors are generic; the reason goes to the log.
 *
 * Then the role check (issue 23): every audit data route needs a reader role, every change an
 * admin role (requireAccess below); with auth off the anonymous caller has full access, which
 * the plugin allows only on loopback or with AUDIT_ALLOW_ANONYMOUS (settings.ts).
 */
import type { MiddlewareHandler } from 'hono';
import {
  AuthError,
  bearerToken,
  rolesFrom,
  type TokenVerifier,
  type VerifiedIdentity,
} from '../../../src/auth/jwt-verifier.js';
import { ProblemError } from '../../../src/http/problem.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { AuthSettings } from '../settings.js';
import { ANONYMOUS, type AuditEnv, type Caller, callerOf } from './context.js';

const CHALLENGE = 'Bearer realm="meshhub-audit"';

/**
 * The audit caller a verified token makes (the HTTP API's and MCP over HTTP's one rule): the
 * provider's tokens carry roles where AUDIT_ROLES_CLAIM says; the hub's own, in `roles`.
 */
export function callerFrom(identity: VerifiedIdentity, auth: AuthSettings): Caller {
  return {
    authenticated: true,
    subject: identity.subject,
    username: identity.username,
    issuer: identity.issuer,
    roles: identity.issuer === auth.issuer ? rolesFrom(identity.claims, auth.rolesClaim) : identity.roles,
  };
}

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
      c.set('caller', callerFrom(await verifier.verify(token), auth));
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

/**
 * What a route needs (issue 23, README "Who reads the audit data"): `read` the audit data
 * (AUDIT_READER_ROLES, and the admins), or `admin`: change it (tags, comments, bulk tags, rules),
 * fetch, read the trail and the alerts (AUDIT_ADMIN_ROLES).
 */
export type AuditAccess = 'read' | 'admin';

/** The roles that grant `access`. Never empty: an empty list would mean "anyone". */
export function rolesFor(auth: AuthSettings, access: AuditAccess): readonly string[] {
  return access === 'admin' ? auth.adminRoles : [...new Set([...auth.readerRoles, ...auth.adminRoles])];
}

/**
 * Whether the caller may have `access`. With AUTH_ENABLED off (HTTP_HOST on loopback, or
 * AUDIT_ALLOW_ANONYMOUS) the anonymous caller has it all; otherwise a verified caller holding one
 * of the roles. Subscriber and machine roles never are in the lists (settings.ts refuses them).
 */
export function mayAccess(caller: Caller, auth: AuthSettings, access: AuditAccess): boolean {
  if (auth.state === 'off') return true;
  if (auth.state !== 'on' || !caller.authenticated) return false;
  const roles = rolesFor(auth, access);
  return caller.roles.some((r) => roles.includes(r));
}

/** The 403 for a caller without `access`; `access` and `roles` let the console say what to ask for. */
export function accessProblem(auth: AuthSettings, access: AuditAccess): ProblemError {
  const roles = rolesFor(auth, access);
  return new ProblemError(
    403,
    access === 'read'
      ? 'your account is not allowed to read the audit data (it needs a role in AUDIT_READER_ROLES)'
      : 'your account is not allowed to change the audit data, fetch or read the trail (it needs a role in AUDIT_ADMIN_ROLES)',
    { access, roles: [...roles] },
  );
}

/** 403 unless the caller may have `access` (runs after the bearer check). */
export function requireAccess(auth: AuthSettings, access: AuditAccess): MiddlewareHandler<AuditEnv> {
  return async function requireAccessMiddleware(c, next) {
    // A preflight carries no token (the bearer check lets it by too): CORS answers it, or nothing does.
    if (c.req.method === 'OPTIONS') return next();
    if (!mayAccess(callerOf(c), auth, access)) throw accessProblem(auth, access);
    return next();
  };
}

/** Reads (GET, HEAD) need `read`; every other method changes something and needs `admin`. */
export function requireAccessByMethod(auth: AuthSettings): MiddlewareHandler<AuditEnv> {
  const read = requireAccess(auth, 'read');
  const admin = requireAccess(auth, 'admin');
  return async function requireAccessByMethodMiddleware(c, next) {
    const method = c.req.method;
    return method === 'GET' || method === 'HEAD' ? read(c, next) : admin(c, next);
  };
}
