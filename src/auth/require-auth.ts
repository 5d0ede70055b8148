/**
 * `requireAuth(verifier, { roles })`: the Hono middleware in front of every bearer-protected
 * route. It verifies `Authorization: Bearer <jwt>` and puts the identity on the context
 * (`c.get('identity')`), or answers with problem details (RFC 6750 §3):
 * - no token: 401, `WWW-Authenticate: Bearer realm="meshhub"` (no error code, §3.1);
 * - a bad token: 401, `WWW-Authenticate: Bearer realm="meshhub", error="invalid_token", error_description="…"`;
 * - a missing role: 403, `error="insufficient_scope"`;
 * - the identity provider's keys cannot be fetched: 503 with Retry-After (not the caller's fault).
 * The token is never logged.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { ProblemError } from '../http/problem.js';
import { AuthError, bearerToken, type TokenVerifier, type VerifiedIdentity } from './jwt-verifier.js';

export const REALM = 'meshhub';

export type AuthVariables = { identity: VerifiedIdentity };
export type AuthEnv = { Variables: AuthVariables };

export interface RequireAuthOptions {
  /** Any one of these roles lets the caller in; leave out to accept any verified caller. */
  roles?: readonly string[];
}

function quoted(text: string): string {
  return `"${text.replace(/["\\\r\n]/g, ' ')}"`;
}

export function bearerChallenge(error?: string, description?: string): string {
  const parts = [`Bearer realm=${quoted(REALM)}`];
  if (error) parts.push(`error=${quoted(error)}`);
  if (description) parts.push(`error_description=${quoted(description)}`);
  return parts.join(', ');
}

/** The 401/503 problem for a failed verification. */
export function authProblem(error: AuthError): ProblemError {
  if (error.reason === 'keys_unavailable') {
    return new ProblemError(503, 'the identity provider cannot be reached to check the token', {
      headers: { 'retry-after': '30' },
    });
  }
  if (error.reason === 'missing') {
    return new ProblemError(401, 'a bearer token is required (Authorization: Bearer <token>)', {
      headers: { 'www-authenticate': bearerChallenge() },
    });
  }
  return new ProblemError(401, error.message, {
    headers: { 'www-authenticate': bearerChallenge('invalid_token', error.message) },
    reason: error.reason,
  });
}

export function requireAuth(
  verifier: TokenVerifier,
  options: RequireAuthOptions = {},
): MiddlewareHandler<AuthEnv> {
  const roles = options.roles ?? [];
  return async function requireAuthMiddleware(c, next) {
    const header = c.req.header('authorization');
    const token = bearerToken(header);
    if (!token) {
      throw header
        ? authProblem(new AuthError('malformed', 'the Authorization header is not "Bearer <token>"'))
        : authProblem(new AuthError('missing', 'a bearer token is required'));
    }
    let identity: VerifiedIdentity;
    try {
      identity = await verifier.verify(token);
    } catch (error) {
      if (error instanceof AuthError) throw authProblem(error);
      throw error;
    }
    if (roles.length && !identity.roles.some((r) => roles.includes(r))) {
      const needed = roles.join(' or ');
      throw new ProblemError(403, `this needs the role ${needed}`, {
        headers: { 'www-authenticate': bearerChallenge('insufficient_scope', `requires role ${needed}`) },
      });
    }
    c.set('identity', identity);
    await next();
  };
}

/** The identity `requireAuth` verified for this request. */
export function verifiedIdentity(c: Context<AuthEnv>): VerifiedIdentity {
  const identity = c.get('identity');
  if (!identity) throw new Error('requireAuth must run before this handler');
  return identity;
}
