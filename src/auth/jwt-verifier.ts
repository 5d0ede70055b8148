/**
 * Bearer JWT verification (jose), shared by every part of the hub that takes tokens: the
 * messaging API, MQTT, the audit plugin.
 *
 * A verifier trusts one or more issuers, each with its own keys: the hub's own issuer (a local
 * JWK set) and/or an external identity provider (its JWKS URL). The algorithm list is fixed to
 * asymmetric algorithms, so `alg: none` and HS256-signed-with-the-public-key (algorithm
 * confusion) are refused before any signature check. Failures carry a reason for the
 * `WWW-Authenticate` header and the log; the token itself is never logged.
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { guardedFetch, refusedAddressOf } from '../http/guarded-fetch.js';

/** Asymmetric only: a symmetric algorithm would let anyone holding a public key mint tokens. */
export const ALLOWED_ALGORITHMS = ['EdDSA', 'ES256', 'ES384', 'RS256', 'RS384', 'RS512', 'PS256'] as const;

export type AuthFailureReason =
  | 'missing'
  | 'malformed'
  | 'algorithm_not_allowed'
  | 'bad_signature'
  | 'unknown_key'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'revoked'
  | 'keys_unavailable';

export class AuthError extends Error {
  override readonly name = 'AuthError';
  constructor(
    readonly reason: AuthFailureReason,
    message: string,
  ) {
    super(message);
  }
}

export interface VerifiedIdentity {
  /** `sub`: the stable id of the caller. */
  subject: string;
  /** A display name: `preferred_username`, `name`, else `sub`. */
  username: string;
  /** From the configured roles claim; empty when the claim is absent. */
  roles: string[];
  issuer: string;
  /** Every verified claim, for audit trails. */
  claims: JWTPayload;
}

export interface TrustedIssuer {
  issuer: string;
  /** Leave out to accept any audience (the hub's own tokens name the hub as audience). */
  audience?: string | string[];
  /** A local key set (the hub's own issuer) or the URL of a JWKS (an identity provider). */
  keys: JSONWebKeySet | URL;
  /** Dotted path of the roles claim, e.g. `roles` or `realm_access.roles`. Default `roles`. */
  rolesClaim?: string;
  /**
   * AUTH_JWKS_ALLOW_PRIVATE_NETWORK: the JWKS URL may resolve to a private (LAN) address. Without
   * it only public addresses and loopback are connected to (checked at connect time).
   */
  allowPrivateNetwork?: boolean;
}

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedIdentity>;
}

/** True for http(s) URLs that are https, or plain http to a loopback host (tests, a local IdP). */
export function isAcceptableKeysUrl(url: URL): boolean {
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function readPath(claims: JWTPayload, path: string): unknown {
  let value: unknown = claims;
  for (const key of path.split('.')) {
    if (!value || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

export function rolesFrom(claims: JWTPayload, path = 'roles'): string[] {
  const value = readPath(claims, path);
  if (typeof value === 'string') return value.split(/[\s,]+/).filter(Boolean);
  return Array.isArray(value) ? value.filter((r): r is string => typeof r === 'string') : [];
}

function translate(error: unknown): AuthError {
  if (error instanceof AuthError) return error;
  if (error instanceof errors.JWTExpired) return new AuthError('expired', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return new AuthError('not_yet_valid', 'the token is not valid yet');
    if (error.claim === 'iss')
      return new AuthError('wrong_issuer', 'the token was issued by an untrusted issuer');
    if (error.claim === 'aud')
      return new AuthError('wrong_audience', 'the token is meant for another audience');
    return new AuthError('malformed', `the token's "${error.claim}" claim is invalid`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new AuthError('algorithm_not_allowed', 'the token uses an algorithm that is not allowed');
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new AuthError('bad_signature', 'the token signature is invalid');
  if (error instanceof errors.JWKSNoMatchingKey)
    return new AuthError('unknown_key', 'the token is signed with an unknown key');
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
    return new AuthError('keys_unavailable', 'the signing keys could not be fetched');
  }
  return new AuthError('malformed', 'the token is malformed');
}

/**
 * The JWKS download, through the hub's guarded client (src/http/guarded-fetch.ts): the name is
 * resolved on the socket and a non-public address (loopback excepted: a local identity provider,
 * the tests) is refused unless AUTH_JWKS_ALLOW_PRIVATE_NETWORK=true; the refusal says so.
 */
function jwksFetch(allowPrivateNetwork: boolean) {
  const keysFetch = guardedFetch({
    allowLoopback: true,
    allowPrivateNetwork,
    setting: 'AUTH_JWKS_ALLOW_PRIVATE_NETWORK',
  });
  return async (url: string, init: RequestInit): Promise<Response> => {
    try {
      return await keysFetch(url, init);
    } catch (error) {
      const refused = refusedAddressOf(error);
      if (refused)
        throw new AuthError('keys_unavailable', `the signing keys could not be fetched: ${refused.message}`);
      throw error;
    }
  };
}

/**
 * Keys from a JWKS URL (an identity provider's, a site's on the upstream), fetched through the
 * guarded client, cached and rate-limited by jose.
 */
export function remoteJwks(url: URL, allowPrivateNetwork: boolean): JWTVerifyGetKey {
  return createRemoteJWKSet(url, {
    timeoutDuration: 5_000,
    cooldownDuration: 30_000,
    cacheMaxAge: 600_000,
    [customFetch]: jwksFetch(allowPrivateNetwork),
  });
}

/**
 * Verifies against several issuers: the token's `iss` picks the issuer (unverified at that
 * point, only used to choose keys; the signature and the claim are checked after).
 */
export function createTokenVerifier(
  issuers: TrustedIssuer[],
  options: { clockToleranceSeconds?: number } = {},
): TokenVerifier {
  const byIssuer = new Map<string, { trusted: TrustedIssuer; keys: JWTVerifyGetKey }>();
  for (const trusted of issuers) {
    if (trusted.keys instanceof URL && !isAcceptableKeysUrl(trusted.keys)) {
      throw new Error(`the JWKS URL of ${trusted.issuer} must be https (or http on loopback)`);
    }
    const keys =
      trusted.keys instanceof URL
        ? remoteJwks(trusted.keys, trusted.allowPrivateNetwork ?? false)
        : createLocalJWKSet(trusted.keys);
    byIssuer.set(trusted.issuer, { trusted, keys });
  }

  return {
    async verify(token: string): Promise<VerifiedIdentity> {
      if (!token) throw new AuthError('missing', 'a bearer token is required');
      try {
        // Refuse before touching keys: alg none and symmetric algorithms never reach jwtVerify.
        const header = decodeProtectedHeader(token);
        if (!header.alg || !(ALLOWED_ALGORITHMS as readonly string[]).includes(header.alg)) {
          throw new AuthError('algorithm_not_allowed', 'the token uses an algorithm that is not allowed');
        }
        const parts = token.split('.');
        const payload = JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) as JWTPayload;
        const entry = typeof payload.iss === 'string' ? byIssuer.get(payload.iss) : undefined;
        if (!entry) throw new AuthError('wrong_issuer', 'the token was issued by an untrusted issuer');
        const { payload: claims } = await jwtVerify(token, entry.keys, {
          issuer: entry.trusted.issuer,
          ...(entry.trusted.audience ? { audience: entry.trusted.audience } : {}),
          algorithms: [...ALLOWED_ALGORITHMS],
          clockTolerance: options.clockToleranceSeconds ?? 30,
          requiredClaims: ['sub', 'exp'],
        });
        const subject = claims.sub!;
        const name = claims.preferred_username ?? claims.name;
        return {
          subject,
          username: typeof name === 'string' && name ? name : subject,
          roles: rolesFrom(claims, entry.trusted.rolesClaim),
          issuer: entry.trusted.issuer,
          claims,
        };
      } catch (error) {
        throw translate(error);
      }
    },
  };
}

/** `Authorization: Bearer <token>` → the token, or undefined when absent or of another scheme. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+([A-Za-z0-9\-_.~+/]+=*)\s*$/i.exec(header);
  return m?.[1];
}
