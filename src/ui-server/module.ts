/**
 * The web UI: `/api/v1/map` (tile source and local tiles) and `/` (the built app, with the SPA
 * fallback, which the HTTP actor serves after every other route).
 */
import { defineModule } from '../module.js';
import { mapRoutes } from './map-routes.js';
import { DEFAULT_WEB_ROOT, openConfiguredMapTiles } from './map-tiles.js';
import { tileOrigins } from './map-tiles-setting.js';
import { webUiSettings } from './settings.js';
import { StaticAssets } from './static-assets.js';
import { uiRoutes } from './ui-routes.js';

/** The identity provider's http(s) origins (its issuer and JWKS URL), for the page's CSP. */
function signInOrigins(provider: { issuer: string; jwksUrl: string } | undefined): string[] {
  const origins = new Set<string>();
  for (const candidate of provider ? [provider.issuer, provider.jwksUrl] : []) {
    try {
      const url = new URL(candidate);
      if (url.protocol === 'https:' || url.protocol === 'http:') origins.add(url.origin);
    } catch {
      // An issuer need not be a URL; then it names no host to allow.
    }
  }
  return [...origins];
}

export const webUiModule = defineModule({
  name: 'web-ui',
  settings: webUiSettings,
  async create(ctx) {
    // MAP_TILES naming a file that cannot be used stops the start like any bad setting.
    const tiles = await openConfiguredMapTiles(ctx.settings.MAP_TILES);
    const webRoot = ctx.settings.WEB_ROOT ?? DEFAULT_WEB_ROOT;
    const assets = StaticAssets.load(webRoot);
    if (!assets)
      ctx.log.warn({ webRoot }, 'the web app is not built (run npm run build); serving the API only');
    ctx.bus.on(ctx.owner, 'hub.stopping', () => {
      void tiles.archive
        ?.close()
        .catch((err: unknown) => ctx.log.warn({ err }, 'closing the map tiles failed'));
    });
    ctx.mount('/api/v1/map', mapRoutes(tiles.setting, tiles.archive), { component: 'hub' });
    ctx.mount(
      '/',
      uiRoutes({
        assets,
        tileOrigins: tileOrigins(tiles.setting),
        signInOrigins: signInOrigins(ctx.auth.provider),
      }),
      { component: 'hub' },
    );
    return {};
  },
});
