/**
 * The hub's issuer over HTTP:
 * - `GET /.well-known/jwks.json`: the public signing keys;
 * - `POST /api/v1/auth/token`: `{ "username", "password" }` (JSON, or a form as OAuth clients
 *   send it, `grant_type=password` allowed) → `{ access_token, token_type: "Bearer", expires_in }`.
 *   Wrong credentials are a 401 that does not say whether the user exists; throttled attempts a 429
 *   with Retry-After (login-throttle.ts). The client address is the TCP peer: the hub serves the
 *   LAN directly, so X-Forwarded-For is not trusted (`trustProxy`, off on the hub; the upstream
 *   turns it on with HTTP_TRUST_PROXY).
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono } from 'hono';
import { ProblemError } from '../http/problem.js';
import type { HubIdentity } from './hub-identity.js';
import { LoginThrottle } from './login-throttle.js';
import { bodyProblem, limitBody, readJsonOrFormBody } from './request-body.js';
import { bearerChallenge } from './require-auth.js';
import { type TokenResponseJson, tokenRequestSchema } from './schemas.js';
import type { AuthenticatedUser } from './users.js';

/** The TCP peer, or with `trustProxy` the last X-Forwarded-For entry (the address the proxy saw). */
function clientAddress(c: Context, trustProxy = false): string {
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

/** What the token endpoint needs of a user store: the hub's UserRepository, the upstream's users. */
export interface PasswordChecker {
  checkPassword(username: string, password: string): Promise<AuthenticatedUser | undefined>;
}

export interface AuthRoutesOptions {
  identity: Pick<HubIdentity, 'localIssuer'>;
  users: () => PasswordChecker;
  tokenTtlSeconds: number;
  /** Take the client address from X-Forwarded-For (behind a trusted proxy); default false. */
  trustProxy?: boolean;
  throttle?: LoginThrottle;
}

export function tokenRoutes(options: AuthRoutesOptions): Hono {
  const throttle = options.throttle ?? new LoginThrottle();
  const app = new Hono();
  app.post('/token', limitBody(4096), async (c) => {
    const parsed = tokenRequestSchema.safeParse(await readJsonOrFormBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const username = parsed.data.username.trim().toLowerCase();
    const address = clientAddress(c, options.trustProxy);
    const verdict = throttle.attempt(username, address);
    if (!verdict.allowed) {
      throw new ProblemError(429, `too many failed logins; try again in ${verdict.retryAfterSeconds} s`, {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    const user = await options.users().checkPassword(username, parsed.data.password);
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
    return c.json(body, 200, {
      'cache-control': 'no-store',
      pragma: 'no-cache',
    });
  });
  return app;
}

export function jwksRoutes(identity: HubIdentity): Hono {
  const app = new Hono();
  app.get('/jwks.json', (c) =>
    c.json(identity.localIssuer.jwks(), 200, { 'cache-control': 'public, max-age=300' }),
  );
  return app;
}

/** `/.well-known/jwks.json` and `/api/v1/auth/token`. */
