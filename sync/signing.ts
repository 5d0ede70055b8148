/**
 * Site request tokens: how a site proves who it is to the upstream (issue 12 "Site identity").
 *
 * The site signs a short-lived JWT per request with its own Ed25519 key (the local issuer's key
 * in DATA_DIR, src/auth/local-issuer.ts). Claims:
 * - `iss` and `sub`: the site id; `aud`: SYNC_AUDIENCE;
 * - `iat`/`exp`: REQUEST_TOKEN_TTL_S apart, on the site's clock corrected by the offset it
 *   measured from the upstream's `server_time` (a site whose clock is hours wrong still signs
 *   valid tokens; its records keep their own timestamps);
 * - `jti`: random, so the upstream refuses the same signed request twice;
 * - `req`: `"<METHOD> <path>"`, so a token for the downlink cannot post a batch;
 * - `bsh`: base64url SHA-256 of the exact body bytes sent (gzip'd), for requests with a body.
 *
 * The upstream verifies with the public key registered for the site
 * (`meshhub upstream site add <site_id> --public-key <file> | --jwks-url <url>`).
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  createLocalJWKSet,
  decodeJwt,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  errors as joseErrors,
  jwtVerify,
} from 'jose';
import { SYNC_AUDIENCE, siteIdSchema } from './protocol.js';

/** Lifetime of one request token. */
export const REQUEST_TOKEN_TTL_S = 120;
/** Clock difference the upstream tolerates beyond the token's own window. */
export const CLOCK_TOLERANCE_S = 30;

export interface ClaimsSigner {
  signClaims(claims: JWTPayload): Promise<string>;
}

export function bodyHash(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('base64url');
}

export interface SignRequestInput {
  siteId: string;
  method: string;
  path: string;
  body?: Uint8Array;
  /** The site's corrected clock (ms): Date.now() + offset measured from the upstream. */
  nowMs: number;
}

export async function signSiteRequest(signer: ClaimsSigner, input: SignRequestInput): Promise<string> {
  const iat = Math.floor(input.nowMs / 1000);
  const claims: JWTPayload = {
    iss: input.siteId,
    sub: input.siteId,
    aud: SYNC_AUDIENCE,
    iat,
    exp: iat + REQUEST_TOKEN_TTL_S,
    jti: randomUUID(),
    req: `${input.method.toUpperCase()} ${input.path}`,
  };
  if (input.body) claims.bsh = bodyHash(input.body);
  return signer.signClaims(claims);
}

export class SiteAuthError extends Error {
  override readonly name = 'SiteAuthError';
  constructor(
    /** unknown_site: no key verifies (or no such site); revoked_site: the operator revoked it. */
    readonly reason: 'unknown_site' | 'revoked_site' | 'bad_token',
    message: string,
  ) {
    super(message);
  }
}

/** What the upstream knows of a registered site's keys. */
export interface RegisteredSiteKeys {
  siteId: string;
  revoked: boolean;
  /** A public JWK set registered from a file, or a resolver for a JWKS URL. */
  keys: JSONWebKeySet | JWTVerifyGetKey;
}

export interface VerifiedSiteRequest {
  siteId: string;
  jti: string;
  /** ms since the epoch, from the token (the site's corrected clock). */
  issuedAt: number;
  expiresAt: number;
}

/** The site id a token claims, before it is verified (to look up its key); undefined when unreadable. */
export function claimedSiteId(token: string): string | undefined {
  try {
    const sub = decodeJwt(token).sub;
    return typeof sub === 'string' && siteIdSchema.safeParse(sub).success ? sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies a site request token against the site's registered keys, the request line and (when
 * given) the body bytes. Throws SiteAuthError; never says more than "does not verify" about why
 * a signature failed.
 */
export async function verifySiteRequest(
  token: string,
  site: RegisteredSiteKeys | undefined,
  request: { method: string; path: string; body?: Uint8Array; nowMs?: number },
): Promise<VerifiedSiteRequest> {
  if (!site) throw new SiteAuthError('unknown_site', 'the token names no registered site');
  if (site.revoked) throw new SiteAuthError('revoked_site', `site ${site.siteId} is revoked`);
  const getKey = typeof site.keys === 'function' ? site.keys : createLocalJWKSet(site.keys);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, getKey, {
      algorithms: ['EdDSA'],
      audience: SYNC_AUDIENCE,
      issuer: site.siteId,
      subject: site.siteId,
      clockTolerance: CLOCK_TOLERANCE_S,
      maxTokenAge: REQUEST_TOKEN_TTL_S + CLOCK_TOLERANCE_S,
      requiredClaims: ['iat', 'exp', 'jti', 'req'],
      ...(request.nowMs !== undefined ? { currentDate: new Date(request.nowMs) } : {}),
    }));
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) {
      throw new SiteAuthError('bad_token', 'the request token has expired (is the site clock right?)');
    }
    if (error instanceof joseErrors.JWTClaimValidationFailed) {
      throw new SiteAuthError('bad_token', `the request token's "${error.claim}" claim is not valid`);
    }
    throw new SiteAuthError(
      'unknown_site',
      `the request token does not verify with site ${site.siteId}'s key`,
    );
  }
  const expectedReq = `${request.method.toUpperCase()} ${request.path}`;
  if (payload.req !== expectedReq) {
    throw new SiteAuthError(
      'bad_token',
      `the request token is for "${String(payload.req)}", not "${expectedReq}"`,
    );
  }
  if (request.body !== undefined && payload.bsh !== bodyHash(request.body)) {
    throw new SiteAuthError('bad_token', 'the request token does not sign this body');
  }
  return {
    siteId: site.siteId,
    jti: String(payload.jti),
    issuedAt: (payload.iat ?? 0) * 1000,
    expiresAt: (payload.exp ?? 0) * 1000,
  };
}
