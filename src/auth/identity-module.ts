/**
 * The hub identity's HTTP face: `POST /api/v1/auth/token` (local users sign in),
 * `POST /api/v1/auth/refresh` (they stay signed in) and `/.well-known/jwks.json` (the hub's
 * public keys). A module like any other, made for the one identity the hub opened (it needs the
 * local issuer, which no other module sees); its login throttle is the identity's, shared with
 * MQTT logins.
 */

import { defineModule } from '../module.js';
import type { HubIdentity } from './hub-identity.js';
import { jwksRoutes, tokenRoutes } from './routes.js';
import { authSettings } from './settings.js';
import { HubUserService } from './user-service.js';

export const identityModule = (identity: HubIdentity) =>
  defineModule({
    name: 'identity',
    settings: authSettings,
    create(ctx) {
      const users = new HubUserService(ctx.db);
      ctx.mount('/.well-known', jwksRoutes(identity), { component: 'hub' });
      ctx.mount(
        '/api/v1/auth',
        tokenRoutes({
          identity,
          users: () => users,
          tokenTtlSeconds: ctx.settings.AUTH_TOKEN_TTL / 1000,
          refreshTtlMs: ctx.settings.AUTH_REFRESH_TTL,
        }),
        { component: 'hub' },
      );
      return {};
    },
  });
