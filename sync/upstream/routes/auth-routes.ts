/**
 * The upstream's issuer over HTTP, the same requests, answers and problems as a hub's
 * (src/auth/routes.ts):
 * - `POST /api/v1/auth/token`: `{ "username", "password" }` (JSON, or an OAuth form with
 *   `grant_type=password`) → `{ access_token, token_type: "Bearer", expires_in }`; wrong
 *   credentials (or a disabled user) a 401 that does not say which; throttled attempts a 429 with
 *   Retry-After (src/auth/login-throttle.ts, per username and per client address);
 * - `GET /.well-known/jwks.json`: the public key of the upstream's issuer.
 *
 * The throttle is per process: behind a load balancer of N processes an attacker gets up to N
 * times the attempts. The client address is the TCP peer, or with HTTP_TRUST_PROXY the last
 * X-Forwarded-For entry (the address the proxy saw), so one proxy does not count as one client.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono } from 'hono';
import { LoginThrottle } from '../../../src/auth/login-throttle.js';
import { bodyProblem, limitBody, readJsonOrFormBody } from '../../../src/auth/request-body.js';
import { bearerChallenge } from '../../../src/auth/require-auth.js';
import { jwksRoutes } from '../../../src/auth/routes.js';
import { type TokenResponseJson, tokenRequestSchema } from '../../../src/auth/schemas.js';
import type { AuthenticatedUser } from '../../../src/auth/users.js';
import { ProblemError } from '../../../src/http/problem.js';
import type { UpstreamIdentity } from '../identity.js';

export { jwksRoutes as upstreamJwksRoutes };

export interface PasswordChecker {
  checkPassword(username: string, password: string): Promise<AuthenticatedUser | undefined>;
}

export interface UpstreamTokenRoutesOptions {
  identity: UpstreamIdentity;
  users: PasswordChecker;
  tokenTtlSeconds: number;
  /** Take the client address from X-Forwarded-For (HTTP_TRUST_PROXY). */
  trustProxy?: boolean;
  throttle?: LoginThrottle;
}

export function clientAddress(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = c.req.header('x-forwarded-for');
    const last = forwarded?.split(',').at(-1)?.trim();
    if (last) return last.slice(0, 64);
  }
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** `POST /token`, to mount at `/api/v1/auth`. */
export function upstreamTokenRoutes(options: UpstreamTokenRoutesOptions): Hono {
  const throttle = options.throttle ?? new LoginThrottle();
  const app = new Hono();
  app.post('/token', limitBody(4096), async (c) => {
    const parsed = tokenRequestSchema.safeParse(await readJsonOrFormBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const username = parsed.data.username.trim().toLowerCase();
    const address = clientAddress(c, options.trustProxy ?? false);
    const verdict = throttle.attempt(username, address);
    if (!verdict.allowed) {
      throw new ProblemError(429, `too many failed logins; try again in ${verdict.retryAfterSeconds} s`, {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    const user = await options.users.checkPassword(username, parsed.data.password);
    if (!user) {
      throw new ProblemError(401, 'wrong username or password', {
        headers: { 'www-authenticate': bearerChallenge() },
      });
    }
    throttle.succeeded(username, address);
    const issued = await options.identity.localIssuer.issue(user, options.tokenTtlSeconds);
    const body: TokenResponseJson = {
      access_token: issued.accessToken,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
    };
    return c.json(body, 200, { 'cache-control': 'no-store', pragma: 'no-cache' });
  });
  return app;
}
