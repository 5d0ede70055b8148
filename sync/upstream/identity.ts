/**
 * The upstream's identity: the same construction as the hub's (src/auth/hub-identity.ts), so
 * tokens, principals and roles mean the same on both. It trusts the upstream's own issuer (the
 * key in the upstream's DATA_DIR, which signs its local users' tokens) and, when AUTH_JWKS_URL,
 * AUTH_ISSUER and AUTH_AUDIENCE are set, an external identity provider.
 *
 * Principals: a local user is its username (`alice`), an identity-provider user `idp:<sub>`;
 * at a site the same subscriber appears as `upstream:<principal>` (protocol.ts).
 */
import { type HubIdentity, openHubIdentity } from '../../src/auth/hub-identity.js';
import type { UpstreamSettings } from './settings.js';

export type UpstreamIdentity = HubIdentity;

export function openUpstreamIdentity(
  settings: Pick<
    UpstreamSettings,
    'DATA_DIR' | 'AUTH_JWKS_URL' | 'AUTH_ISSUER' | 'AUTH_AUDIENCE' | 'AUTH_ROLES_CLAIM'
  >,
  options: { warn?: (message: string) => void } = {},
): Promise<UpstreamIdentity> {
  return openHubIdentity({
    dataDir: settings.DATA_DIR,
    external: {
      jwksUrl: settings.AUTH_JWKS_URL,
      issuer: settings.AUTH_ISSUER,
      audience: settings.AUTH_AUDIENCE,
      rolesClaim: settings.AUTH_ROLES_CLAIM,
    },
    ...(options.warn ? { warn: options.warn } : {}),
  });
}
