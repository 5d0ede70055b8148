/**
 * A local file of map tiles (MBTiles 1.3 or PMTiles v3) the hub serves to the web map. Only
 * raster tiles (PNG, JPEG, WebP): Leaflet draws images, and a vector-tile renderer would be
 * several times the size of the whole web app. A file that cannot be used is a start-up error
 * naming MAP_TILES, as every other bad setting is.
 */
import type { MapTilesSetting } from './map-tiles-setting.js';

export type RasterFormat = 'png' | 'jpg' | 'webp';

export const RASTER_CONTENT_TYPES: Record<RasterFormat, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

export interface TileArchiveInfo {
  format: RasterFormat;
  minZoom: number;
  maxZoom: number;
  /** West, south, east, north in degrees, when the file says. */
  bounds?: [number, number, number, number];
  /** Longitude, latitude, zoom. */
  center?: [number, number, number];
  /** Plain text (markup stripped): the map shows it as text. */
  attribution?: string;
  name?: string;
}

export interface TileArchive {
  readonly kind: 'pmtiles' | 'mbtiles';
  readonly path: string;
  readonly info: TileArchiveInfo;
  /** The tile at XYZ coordinates (y down from the north, as Leaflet asks), or undefined. */
  tile(z: number, x: number, y: number): Promise<Uint8Array | undefined>;
  close(): Promise<void>;
}

export class MapTilesError extends Error {
  override readonly name = 'MapTilesError';
}

/** The image format from the first bytes (PNG signature, JPEG SOI, RIFF…WEBP). */
export function sniffRasterFormat(data: Uint8Array): RasterFormat | undefined {
  if (data.length >= 8 && data[0] === 0x89 && data[1] === 0x50 && data[2] === 0x4e && data[3] === 0x47) {
    return 'png';
  }
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpg';
  if (
    data.length >= 12 &&
    String.fromCharCode(...data.subarray(0, 4)) === 'RIFF' &&
    String.fromCharCode(...data.subarray(8, 12)) === 'WEBP'
  ) {
    return 'webp';
  }
  return undefined;
}

/** Markup out, whitespace folded, length bounded: attribution from a file is shown as text. */
export function plainAttribution(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value
    .replace(/<[^>]*>/g, '')
    .replace(/&copy;/gi, '©')
    .replace(/&amp;/gi, '&')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
  return text || undefined;
}

/**
 * An archive's info from what its file says: bounds and center only when known, attribution
 * and name as plain text and only when not empty.
 */
export function tileArchiveInfo(fields: {
  format: RasterFormat;
  minZoom: number;
  maxZoom: number;
  bounds?: TileArchiveInfo['bounds'];
  center?: TileArchiveInfo['center'];
  attribution: unknown;
  name: unknown;
}): TileArchiveInfo {
  const { format, minZoom, maxZoom, bounds, center } = fields;
  const attribution = plainAttribution(fields.attribution);
  const name = plainAttribution(fields.name);
  return {
    format,
    minZoom,
    maxZoom,
    ...(bounds ? { bounds } : {}),
    ...(center ? { center } : {}),
    ...(attribution ? { attribution } : {}),
    ...(name ? { name } : {}),
  };
}

/** Whether z/x/y name a tile of the Web Mercator pyramid. */
export function validTileAddress(z: number, x: number, y: number): boolean {
  if (!Number.isInteger(z) || z < 0 || z > 30) return false;
  const size = 2 ** z;
  return Number.isInteger(x) && Number.isInteger(y) && x >= 0 && y >= 0 && x < size && y < size;
}

export async function openTileArchive(setting: MapTilesSetting): Promise<TileArchive | undefined> {
  if (setting.kind === 'online' || setting.kind === 'off') return undefined;
  if (setting.kind === 'mbtiles') {
    const { openMbtiles } = await import('./mbtiles-archive.js');
    return openMbtiles(setting.path);
  }
  const { openPmtiles } = await import('./pmtiles-archive.js');
  return openPmtiles(setting.path);
}
