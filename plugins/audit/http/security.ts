/**
 * Response hardening for the audit routes (spec "Gaps and notes"): security headers with a
 * content security policy that lets the identity provider's sign-in host be reached for
 * connect, frame and form-action; cache-control on API (no-store: audit data must not linger in
 * shared caches) and HTML (no-cache) responses; CORS for the origins in CORS_ORIGINS.
 */
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { AuthSettings } from '../settings.js';
import type { AuditEnv } from './context.js';

/** Origins of the identity provider the browser talks to when signing in. */
export function signInOrigins(auth: AuthSettings): string[] {
  const origins = new Set<string>();
  for (const candidate of [auth.issuer, auth.jwksUrl?.href]) {
    if (!candidate) continue;
    try {
      const url = new URL(candidate);
      if (url.protocol === 'https:' || url.protocol === 'http:') origins.add(url.origin);
    } catch {
      // An issuer need not be a URL; then it names no host to allow.
    }
  }
  return [...origins];
}

export function contentSecurityPolicy(idp: readonly string[]): string {
  const extra = idp.length ? ` ${idp.join(' ')}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${extra}`,
    `frame-src${idp.length ? extra : " 'none'"}`,
    `form-action 'self'${extra}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "object-src 'none'",
  ].join('; ');
}

export function securityHeaders(options: { auth: AuthSettings }): MiddlewareHandler<AuditEnv> {
  const csp = contentSecurityPolicy(signInOrigins(options.auth));
  return async function auditSecurityHeadersMiddleware(c, next) {
    await next();
    const h = c.res.headers;
    h.set('content-security-policy', csp);
    h.set('x-content-type-options', 'nosniff');
    h.set('x-frame-options', 'DENY');
    h.set('referrer-policy', 'no-referrer');
    h.set('cross-origin-opener-policy', 'same-origin');
    h.set('permissions-policy', 'camera=(), microphone=(), geolocation=()');
    if (!h.has('cache-control')) {
      const html = (h.get('content-type') ?? '').startsWith('text/html');
      h.set('cache-control', html ? 'no-cache' : 'no-store');
    }
  };
}

/**
 * CORS for CORS_ORIGINS. A `*` entry is kept as configured (spec "Authentication" 5), with a
 * warning at start-up. No origins configured: no CORS headers, same-origin use only. Tokens go
 * in the Authorization header, never in cookies, so credentials are not allowed.
 */
export function corsFor(origins: readonly string[]): MiddlewareHandler<AuditEnv> {
  const wildcard = origins.includes('*');
  const handler = cors({
    origin: wildcard ? '*' : (origin) => (origins.includes(origin) ? origin : null),
    allowMethods: ['GET', 'POST', 'PATCH', 'OPTIONS'],
    allowHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    exposeHeaders: ['X-Request-Id', 'Retry-After', 'Content-Disposition', 'Location', 'WWW-Authenticate'],
    maxAge: 600,
  });
  return async function auditCorsMiddleware(c, next) {
    if (!origins.length) return next();
    return handler(c, next);
  };
}
