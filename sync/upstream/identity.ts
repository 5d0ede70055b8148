/**
 * The upstream's identity: the same construction as the hub's (src/auth/hub-identity.ts), so
 * tokens, principals and roles mean the same on both. It trusts the upstream's own issuer (the
 * key in the upstream's DATA_DIR, which signs its local users' tokens) and, when AUTH_JWKS_URL,
 * AUTH_ISSUER and AUTH_AUDIENCE are set, an external identity provider.
 *
 * Principals: a local user is its username (`alice`), an identity-provider user `idp:<sub>`;
 * at a site the same subscriber appears as `upstream:<principal>` (protocol.ts).
 *
 * Local tokens are revocable: the verifier asks PostgreSQL for the user's token version on every
 * local token (auth/user-service.ts `tokenVersion`), so a revocation holds at once in every
 * process behind the load balancer. The login throttle is per process (AUTH_LOGIN_* settings).
 */
import { type HubIdentity, openHubIdentity, type TokenVersions } from '../../src/auth/hub-identity.js';
import { loginThrottleFrom } from '../../src/auth/settings.js';
import type { UpstreamSettings } from './settings.js';

export type UpstreamIdentity = HubIdentity;

export function openUpstreamIdentity(
  settings: Pick<
    UpstreamSettings,
    | 'DATA_DIR'
    | 'AUTH_JWKS_URL'
    | 'AUTH_ISSUER'
    | 'AUTH_AUDIENCE'
    | 'AUTH_ROLES_CLAIM'
    | 'AUTH_JWKS_ALLOW_PRIVATE_NETWORK'
    | 'AUTH_LOGIN_FREE_FAILURES'
    | 'AUTH_LOGIN_ADDRESS_FREE_FAILURES'
    | 'AUTH_LOGIN_MAX_DELAY'
    | 'AUTH_LOGIN_CONCURRENCY'
  >,
  options: { warn?: (message: string) => void; users: TokenVersions; now?: () => number },
): Promise<UpstreamIdentity> {
  return openHubIdentity({
    dataDir: settings.DATA_DIR,
    external: {
      jwksUrl: settings.AUTH_JWKS_URL,
      issuer: settings.AUTH_ISSUER,
      audience: settings.AUTH_AUDIENCE,
      rolesClaim: settings.AUTH_ROLES_CLAIM,
      allowPrivateNetwork: settings.AUTH_JWKS_ALLOW_PRIVATE_NETWORK,
    },
    ...(options.warn ? { warn: options.warn } : {}),
    tokenVersions: options.users,
    logins: loginThrottleFrom(settings, { now: options.now, internet: true }),
  });
}
