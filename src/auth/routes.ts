/**
 * The hub's issuer over HTTP (README "Logins and tokens"):
 * - `GET /.well-known/jwks.json`: the public signing keys;
 * - `POST /api/v1/auth/token`: `{ "username", "password" }` (JSON, or a form as OAuth clients
 *   send it, `grant_type=password` allowed) → `{ access_token, token_type: "Bearer", expires_in,
 *   refresh_token }`. Wrong credentials are a 401 that does not say whether the user exists;
 *   attempts the login throttle refuses a 429 with Retry-After, before any password is checked
 *   (login-throttle.ts). The client address is the TCP peer: the hub serves the LAN directly,
 *   so X-Forwarded-For is not trusted (`trustProxy`, off on the hub; the upstream turns it on
 *   with HTTP_TRUST_PROXY).
 * - `POST /api/v1/auth/refresh`: `{ "refresh_token" }` → the same answer with a new access token
 *   and a new refresh token; the one sent is used up. 401 when it is unknown, used, expired or
 *   revoked (its user's token version changed).
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono } from 'hono';
import type { z } from 'zod';
import { BODY_PROBLEMS, COMMON_PROBLEMS, HEADERS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { ProblemError } from '../http/problem.js';
import type { HubIdentity } from './hub-identity.js';
import type { RefreshTokenStore } from './refresh-tokens.js';
import { bodyProblem, limitBody, readJsonOrFormBody } from './request-body.js';
import { bearerChallenge } from './require-auth.js';
import {
  jwksSchema,
  refreshRequestSchema,
  type TokenResponseJson,
  tokenRequestSchema,
  tokenResponseSchema,
} from './schemas.js';
import type { LoginUser } from './user-service.js';

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

/** What the token routes need of a user store: the hub's HubUserService, the upstream's users. */
export interface LoginStore extends RefreshTokenStore {
  checkPassword(username: string, password: string): Promise<LoginUser | undefined>;
}

export interface AuthRoutesOptions {
  identity: Pick<HubIdentity, 'localIssuer' | 'logins'>;
  users: () => LoginStore;
  /** Lifetime of the access tokens these routes issue. */
  tokenTtlSeconds: number;
  /** Lifetime of refresh tokens, renewed by each use; 0: none are issued. */
  refreshTtlMs: number;
  /** Take the client address from X-Forwarded-For (behind a trusted proxy); default false. */
  trustProxy?: boolean;
  now?: () => number;
}

function noStore(): Record<string, string> {
  return { 'cache-control': 'no-store', pragma: 'no-cache' };
}

/** A token request's body: JSON, or a form as OAuth clients send it. */
function tokenRequestBody(schema: z.ZodType) {
  return { schema, contentTypes: ['application/json', 'application/x-www-form-urlencoded'] };
}

/** The refusals both token endpoints answer; `refused`: why the credentials were refused (401). */
function tokenRefusals(refused: string) {
  return {
    400: COMMON_PROBLEMS.badInput,
    401: problem(refused, { 'WWW-Authenticate': HEADERS.wwwAuthenticate }),
    ...BODY_PROBLEMS,
  };
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const tokenOperations = describeRoutes('/api/v1/auth', [
  {
    method: 'post',
    path: '/token',
    operationId: 'issueToken',
    tag: 'auth',
    summary: 'A bearer token for a user of this hub (password grant)',
    body: tokenRequestBody(tokenRequestSchema),
    responses: {
      200: { description: 'The token.', body: tokenResponseSchema },
      ...tokenRefusals('Wrong username or password (it does not say which).'),
      429: problem('Too many failed sign-ins from this address, or too many at once: wait Retry-After.', {
        'Retry-After': HEADERS.retryAfter,
      }),
    },
  },
  {
    method: 'post',
    path: '/refresh',
    operationId: 'refreshToken',
    tag: 'auth',
    summary: 'A new access token (and refresh token) for a refresh token',
    description:
      'Each refresh token works once: the answer carries the next one. It stops working when it expires (AUTH_REFRESH_TTL) or its user is removed, changes password or roles, or has their tokens revoked.',
    body: tokenRequestBody(refreshRequestSchema),
    responses: {
      200: { description: 'The new tokens.', body: tokenResponseSchema },
      ...tokenRefusals('The refresh token is unknown, used, expired or revoked: sign in again.'),
    },
  },
]);

export function tokenRoutes(options: AuthRoutesOptions): Hono {
  const { identity } = options;
  const now = options.now ?? Date.now;
  const app = new Hono();

  const answer = async (c: Context, user: LoginUser) => {
    const issued = await identity.localIssuer.issue(user, options.tokenTtlSeconds, now());
    const body: TokenResponseJson = {
      access_token: issued.accessToken,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
    };
    if (options.refreshTtlMs > 0) {
      body.refresh_token = await options.users().createRefreshToken(user, now() + options.refreshTtlMs);
    }
    return c.json(body, 200, noStore());
  };

  app.post('/token', limitBody(4096), async (c) => {
    const parsed = tokenRequestSchema.safeParse(await readJsonOrFormBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const username = parsed.data.username.trim().toLowerCase();
    const result = await identity.logins.login(username, clientAddress(c, options.trustProxy), () =>
      options.users().checkPassword(username, parsed.data.password),
    );
    if (result.outcome === 'throttled') {
      const detail =
        result.by === 'busy'
          ? 'too many sign-ins at once; try again in a second'
          : `too many failed sign-ins; try again in ${result.retryAfterSeconds} s`;
      throw new ProblemError(429, detail, { headers: { 'retry-after': String(result.retryAfterSeconds) } });
    }
    if (result.outcome === 'failed') {
      throw new ProblemError(401, 'wrong username or password', {
        headers: { 'www-authenticate': bearerChallenge() },
      });
    }
    return answer(c, result.user);
  });

  app.post('/refresh', limitBody(4096), async (c) => {
    const parsed = refreshRequestSchema.safeParse(await readJsonOrFormBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const user =
      options.refreshTtlMs > 0
        ? await options.users().redeemRefreshToken(parsed.data.refresh_token, now())
        : undefined;
    if (!user) {
      throw new ProblemError(
        401,
        'the refresh token is not valid (used, expired or revoked); sign in again',
        {
          headers: { 'www-authenticate': bearerChallenge('invalid_token', 'the refresh token is not valid') },
        },
      );
    }
    return answer(c, user);
  });
  return app;
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const jwksOperations = describeRoutes('/.well-known', [
  {
    method: 'get',
    path: '/jwks.json',
    operationId: 'getJwks',
    tag: 'auth',
    summary: 'The public keys the hub signs its tokens with',
    responses: { 200: { description: 'A JWK Set (RFC 7517).', body: jwksSchema } },
  },
]);

export function jwksRoutes(identity: HubIdentity): Hono {
  const app = new Hono();
  app.get('/jwks.json', (c) =>
    c.json(identity.localIssuer.jwks(), 200, { 'cache-control': 'public, max-age=300' }),
  );
  return app;
}
