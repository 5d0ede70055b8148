/**
 * MAP_TILES: an online tile URL template, or a local raster .pmtiles/.mbtiles file the hub serves.
 */
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';
import { projectRoot } from '../version.js';
import { type MapTilesSetting, parseMapTiles } from './map-tiles-setting.js';
import { MapTilesError, openTileArchive, type TileArchive } from './tile-archive.js';

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

/** openMapTiles for the hub's start-up: a file that cannot be used is a configuration error naming MAP_TILES. */
export async function openConfiguredMapTiles(setting: MapTilesSetting): Promise<MapTiles> {
  try {
    return await openMapTiles(setting);
  } catch (error) {
    if (error instanceof MapTilesError) throw new ConfigError([`MAP_TILES: ${error.message}`]);
    throw error;
  }
}
