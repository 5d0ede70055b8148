/**
 * `MAP_TILES`: where the web map's background comes from.
 * - an online tile URL template (`https://…/{z}/{x}/{y}.png`, optionally with `{s}` subdomains):
 *   the browser fetches tiles itself (default: OpenStreetMap's standard tiles);
 * - a path to a local `.pmtiles` or `.mbtiles` file of raster tiles: the hub serves them at
 *   `/api/v1/map/tiles/{z}/{x}/{y}`, so the map works with no internet at all;
 * - `off`: no tiles at all; the map draws only its built-in world layer and grid, and the
 *   browser never asks anyone for a tile.
 */
import { isAbsolute, resolve } from 'node:path';

export const DEFAULT_MAP_TILES = 'https://tile.openstreetmap.org/{z}/{x}/{y}.png';

export type MapTilesSetting =
  | { kind: 'online'; urlTemplate: string }
  | { kind: 'pmtiles' | 'mbtiles'; path: string }
  | { kind: 'off' };

const HINT =
  'expected an http(s) tile URL template with {z}, {x} and {y}, or a path to a .pmtiles or .mbtiles file, or off (no tiles)';

/** Parses the setting; a string is the reason it is invalid. Relative paths resolve against `cwd`. */
export function parseMapTiles(value: string, cwd = process.cwd()): MapTilesSetting | string {
  const trimmed = value.trim();
  if (trimmed.toLowerCase() === 'off') return { kind: 'off' };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    let url: URL;
    try {
      url = new URL(trimmed.replace(/\{(\w)\}/g, '0'));
    } catch {
      return HINT;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return HINT;
    for (const placeholder of ['{z}', '{x}', '{y}']) {
      if (!trimmed.includes(placeholder)) return `${HINT} (${placeholder} is missing)`;
    }
    return { kind: 'online', urlTemplate: trimmed };
  }
  const lower = trimmed.toLowerCase();
  const kind = lower.endsWith('.pmtiles') ? 'pmtiles' : lower.endsWith('.mbtiles') ? 'mbtiles' : undefined;
  if (!kind) return HINT;
  return { kind, path: isAbsolute(trimmed) ? trimmed : resolve(cwd, trimmed) };
}

/**
 * The origins the browser loads online tiles from, for the Content-Security-Policy:
 * `https://{s}.tile.example.org/…` → `https://*.tile.example.org`.
 */
export function tileOrigins(setting: MapTilesSetting): string[] {
  if (setting.kind !== 'online') return [];
  const withWildcard = setting.urlTemplate.replace(/\{s\}/g, 'wildcard-subdomain');
  try {
    const url = new URL(withWildcard.replace(/\{(\w)\}/g, '0'));
    return [`${url.protocol}//${url.host.replace('wildcard-subdomain', '*')}`];
  } catch {
    return [];
  }
}
