/**
 * The web UI as route groups of the HTTP server: `/api/v1/map` (tile source and local tiles)
 * and `/` (the built app, with the SPA fallback). Register it after the API's groups.
 */
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { RouteMount, RouteProvider } from '../http/routes.js';
import type { Logger } from '../log.js';
import { projectRoot } from '../version.js';
import { mapRoutes } from './map-routes.js';
import { type MapTilesSetting, parseMapTiles, tileOrigins } from './map-tiles-setting.js';
import { StaticAssets } from './static-assets.js';
import { MapTilesError, openTileArchive, type TileArchive } from './tile-archive.js';
import { uiRoutes } from './ui-routes.js';

export const DEFAULT_WEB_ROOT = join(projectRoot(), 'dist', 'web');

export interface MapTiles {
  setting: MapTilesSetting;
  archive: TileArchive | undefined;
}

/** Opens MAP_TILES' file, if it names one; throws MapTilesError saying why it cannot be used. */
export async function openMapTiles(value: string | MapTilesSetting): Promise<MapTiles> {
  const setting = typeof value === 'string' ? parseMapTiles(value) : value;
  if (typeof setting === 'string') throw new MapTilesError(setting);
  return { setting, archive: await openTileArchive(setting) };
}

export interface WebUiOptions {
  tiles: MapTiles;
  log: Logger;
  /** The built app (default: dist/web of this checkout). */
  webRoot?: string;
}

export function webUiRouteProvider(options: WebUiOptions): RouteProvider {
  const { tiles, log } = options;
  return ({ bus, owner }): RouteMount[] => {
    const webRoot = options.webRoot ?? DEFAULT_WEB_ROOT;
    const assets = StaticAssets.load(webRoot);
    if (!assets) log.warn({ webRoot }, 'the web app is not built (run npm run build); serving the API only');
    bus.on(owner, 'hub.stopping', () => {
      void tiles.archive?.close().catch((err: unknown) => log.warn({ err }, 'closing the map tiles failed'));
    });
    return [
      { path: '/api/v1/map', app: mapRoutes(tiles.setting, tiles.archive), component: 'hub' },
      { path: '/', app: uiRoutes({ assets, tileOrigins: tileOrigins(tiles.setting) }), component: 'hub' },
    ];
  };
}

/** openMapTiles for the hub's start-up: a file that cannot be used is a configuration error naming MAP_TILES. */
export async function openConfiguredMapTiles(setting: MapTilesSetting): Promise<MapTiles> {
  try {
    return await openMapTiles(setting);
  } catch (error) {
    if (error instanceof MapTilesError) throw new ConfigError([`MAP_TILES: ${error.message}`]);
    throw error;
  }
}
