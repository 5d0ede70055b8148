/**
 * The one place that builds the hub's TokenVerifier: the hub's own issuer, plus an external
 * identity provider when AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE are set (roles from
 * AUTH_ROLES_CLAIM). Every feature that takes bearer tokens (messaging, MQTT, plugins) uses
 * `HubIdentity.verifier`.
 *
 * Principals: a local token's subject is the username (`alice`); an external token's subject is
 * namespaced as `idp:<sub>`. Usernames cannot contain ':', so the two never collide, and
 * `meshhub subscription grant idp:<sub> …` grants to an identity-provider user.
 *
 * Local tokens are revocable (README "Logins and tokens"): given the user store's token
 * versions, the verifier refuses a local token whose `token_version` is not its user's current
 * one, or whose user is gone. Tokens of the identity provider are left to the provider.
 */
import { ConfigError } from '../config/load.js';
import type { VerifiedIdentity } from './jwt-verifier.js';
import {
  AuthError,
  createTokenVerifier,
  isAcceptableKeysUrl,
  type TokenVerifier,
  type TrustedIssuer,
} from './jwt-verifier.js';
import { LocalIssuer, TOKEN_VERSION_CLAIM } from './local-issuer.js';
import { LoginThrottle } from './login-throttle.js';

export interface ExternalIdentityProvider {
  jwksUrl?: string | undefined;
  issuer?: string | undefined;
  audience?: string | undefined;
  rolesClaim?: string | undefined;
  /** AUTH_JWKS_ALLOW_PRIVATE_NETWORK (src/auth/jwt-verifier.ts). */
  allowPrivateNetwork?: boolean | undefined;
}

export interface Principal {
  /** Stable id: the local username, or `idp:<sub>`. Owns messages and subscriptions. */
  id: string;
  /** For people: `preferred_username` (or `sub`). */
  name: string;
  roles: string[];
  /** True for tokens of the hub's own issuer. */
  local: boolean;
}

export const EXTERNAL_PRINCIPAL_PREFIX = 'idp:';

/** Where the verifier reads a local user's current token version (the hub's SQLite, the upstream's PostgreSQL). */
export interface TokenVersions {
  /** Undefined when the user is gone (or may not log in). */
  tokenVersion(username: string): number | undefined | Promise<number | undefined>;
}

export interface HubIdentity {
  readonly localIssuer: LocalIssuer;
  readonly verifier: TokenVerifier;
  /** The process's one login throttle: every password login (HTTP and MQTT) goes through it. */
  readonly logins: LoginThrottle;
  /** The external issuer, when one is configured. */
  readonly externalIssuer: string | undefined;
  principalOf(identity: VerifiedIdentity): Principal;
}

const PROVIDER_SETTINGS = ['AUTH_JWKS_URL', 'AUTH_ISSUER', 'AUTH_AUDIENCE'] as const;

/**
 * The provider settings still missing when some but not all of AUTH_JWKS_URL, AUTH_ISSUER and
 * AUTH_AUDIENCE are set; empty when none or all are. The hub treats such a provider as
 * misconfigured (audit spec "Authentication" 6): it warns, trusts only its own issuer, and keeps
 * running — the mesh side must not go down over a half-typed identity provider (issue 14).
 */
export function missingProviderSettings(config: ExternalIdentityProvider): string[] {
  const given = [config.jwksUrl, config.issuer, config.audience].map((v) => v !== undefined && v !== '');
  if (!given.some(Boolean) || given.every(Boolean)) return [];
  return PROVIDER_SETTINGS.filter((_, i) => !given[i]);
}

/** The external issuer's TrustedIssuer, or undefined when none is configured; throws ConfigError naming each bad setting. */
export function externalTrustedIssuer(config: ExternalIdentityProvider): TrustedIssuer | undefined {
  const { jwksUrl, issuer, audience } = config;
  if (!jwksUrl && !issuer && !audience) return undefined;
  const problems: string[] = [];
  if (!jwksUrl) problems.push('AUTH_JWKS_URL: required when AUTH_ISSUER or AUTH_AUDIENCE is set');
  if (!issuer) problems.push('AUTH_ISSUER: required when AUTH_JWKS_URL is set');
  if (!audience) problems.push('AUTH_AUDIENCE: required when AUTH_JWKS_URL is set');
  let url: URL | undefined;
  if (jwksUrl) {
    try {
      url = new URL(jwksUrl);
    } catch {
      problems.push(`AUTH_JWKS_URL: not a URL (got ${JSON.stringify(jwksUrl)})`);
    }
    if (url && !isAcceptableKeysUrl(url)) {
      problems.push('AUTH_JWKS_URL: must be https (plain http only to localhost)');
    }
  }
  if (issuer?.startsWith('urn:meshhub:'))
    problems.push("AUTH_ISSUER: 'urn:meshhub:' is the hub's own issuer");
  if (problems.length) throw new ConfigError(problems);
  return {
    issuer: issuer!,
    audience: audience!,
    keys: url!,
    rolesClaim: config.rolesClaim || 'roles',
    ...(config.allowPrivateNetwork ? { allowPrivateNetwork: true } : {}),
  };
}

export function buildHubTokenVerifier(local: LocalIssuer, external?: TrustedIssuer): TokenVerifier {
  return createTokenVerifier(external ? [local.trustedIssuer(), external] : [local.trustedIssuer()]);
}

/**
 * `verifier`, plus for tokens of `localIssuer` the token version check. A token issued before
 * versions existed carries none and counts as 0, the version of users made before then.
 */
export function revocableVerifier(
  verifier: TokenVerifier,
  localIssuer: string,
  versions: TokenVersions,
): TokenVerifier {
  return {
    async verify(token: string): Promise<VerifiedIdentity> {
      const identity = await verifier.verify(token);
      if (identity.issuer !== localIssuer) return identity;
      const claimed = identity.claims[TOKEN_VERSION_CLAIM] ?? 0;
      const current = await versions.tokenVersion(identity.subject);
      if (current === undefined || claimed !== current) {
        throw new AuthError('revoked', 'the token has been revoked');
      }
      return identity;
    },
  };
}

/** Loads (or creates) the hub's signing key in `dataDir` and builds the verifier. */
export async function openHubIdentity(options: {
  dataDir: string;
  external?: ExternalIdentityProvider;
  warn?: (message: string) => void;
  /**
   * The user store's token versions. Every process that serves tokens passes it (the hub, the
   * upstream); without it local tokens are not revocable (benches, tests of other parts).
   */
  tokenVersions?: TokenVersions;
  logins?: LoginThrottle;
}): Promise<HubIdentity> {
  const external = externalTrustedIssuer(options.external ?? {});
  const localIssuer = await LocalIssuer.open(options.dataDir, {
    ...(options.warn ? { warn: options.warn } : {}),
  });
  const plain = buildHubTokenVerifier(localIssuer, external);
  const verifier = options.tokenVersions
    ? revocableVerifier(plain, localIssuer.issuer, options.tokenVersions)
    : plain;
  return {
    localIssuer,
    verifier,
    logins: options.logins ?? new LoginThrottle(),
    externalIssuer: external?.issuer,
    principalOf(identity) {
      const local = identity.issuer === localIssuer.issuer;
      return {
        id: local ? identity.subject : `${EXTERNAL_PRINCIPAL_PREFIX}${identity.subject}`,
        name: identity.username,
        roles: identity.roles,
        local,
      };
    },
  };
}
