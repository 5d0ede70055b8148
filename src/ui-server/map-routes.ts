/**
 * `/api/v1/map`: what the web map draws under the nodes.
 * - `GET /tilejson`: a TileJSON 3.0.0 document: the tile URL template (online, or this hub's
 *   own tiles when MAP_TILES names a file), zoom range, bounds and attribution (plain text).
 * - `GET /tiles/{z}/{x}/{y}` (an image extension on `y` is allowed): a tile of the local file.
 *   A tile the file does not hold is a transparent PNG, so the map shows its plain background
 *   there instead of broken images; bad coordinates are a 400 naming the field; without a
 *   local file, 404. With MAP_TILES=off, TileJSON lists no tile URL: the map draws only its
 *   built-in world layer.
 */
import { Hono } from 'hono';
import { COMMON_PROBLEMS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { ProblemError } from '../http/problem.js';
import { DEFAULT_MAP_TILES, type MapTilesSetting } from './map-tiles-setting.js';
import type { TileJson } from './schemas.js';
import { tileJsonSchema, tilePathSchema } from './schemas.js';
import {
  RASTER_CONTENT_TYPES,
  sniffRasterFormat,
  type TileArchive,
  validTileAddress,
} from './tile-archive.js';

export const LOCAL_TILE_TEMPLATE = '/api/v1/map/tiles/{z}/{x}/{y}';

const EMPTY_TILE = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);
const TILE_CACHE = 'public, max-age=86400';

export type { TileJson };

export function tileJson(setting: MapTilesSetting, archive: TileArchive | undefined): TileJson {
  if (setting.kind === 'off') {
    return { tilejson: '3.0.0', tiles: [], scheme: 'xyz', minzoom: 0, maxzoom: 19, attribution: '' };
  }
  if (setting.kind === 'online' || !archive) {
    const template = setting.kind === 'online' ? setting.urlTemplate : DEFAULT_MAP_TILES;
    const host = new URL(template.replace(/\{s\}\./g, '').replace(/\{(\w)\}/g, '0')).hostname;
    const osm = /(^|\.)openstreetmap\.org$/.test(host);
    return {
      tilejson: '3.0.0',
      tiles: [template],
      scheme: 'xyz',
      minzoom: 0,
      maxzoom: 19,
      attribution: osm ? '© OpenStreetMap contributors' : `Map tiles: ${host}`,
    };
  }
  const { info } = archive;
  return {
    tilejson: '3.0.0',
    tiles: [LOCAL_TILE_TEMPLATE],
    scheme: 'xyz',
    minzoom: info.minZoom,
    maxzoom: info.maxZoom,
    attribution: info.attribution ?? '',
    ...(info.bounds ? { bounds: info.bounds } : {}),
    ...(info.center ? { center: info.center } : {}),
    ...(info.name ? { name: info.name } : {}),
  };
}

function coordinate(field: 'z' | 'x' | 'y', raw: string | undefined): number {
  const value = field === 'y' ? raw?.replace(/\.(png|jpe?g|webp)$/i, '') : raw;
  if (value === undefined || !/^\d{1,10}$/.test(value)) {
    throw new ProblemError(400, `invalid ${field}`, {
      errors: [{ field, message: 'must be a whole number of the tile grid' }],
    });
  }
  return Number(value);
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const mapOperations = describeRoutes('/api/v1/map', [
  {
    method: 'get',
    path: '/tilejson',
    operationId: 'getTileJson',
    tag: 'map',
    summary: 'The tile source of the web map (TileJSON 3.0.0)',
    responses: { 200: { description: 'The tile source.', body: tileJsonSchema } },
  },
  {
    method: 'get',
    path: '/tiles/{z}/{x}/{y}',
    operationId: 'getTile',
    tag: 'map',
    summary: 'A tile of the hub’s local map file (MAP_TILES); a transparent PNG where it has none',
    params: { path: tilePathSchema },
    responses: {
      200: { description: 'The tile.', contentType: ['image/png', 'image/jpeg', 'image/webp'] },
      400: COMMON_PROBLEMS.badInput,
      404: problem('The hub serves no tiles: MAP_TILES is an online URL or off.'),
    },
  },
]);

export function mapRoutes(setting: MapTilesSetting, archive: TileArchive | undefined): Hono {
  const app = new Hono();
  const document = JSON.stringify(tileJson(setting, archive));
  app.get('/tilejson', (c) =>
    c.body(document, 200, { 'content-type': 'application/json', 'cache-control': 'no-cache' }),
  );
  app.get('/tiles/:z/:x/:y', async (c) => {
    if (!archive) {
      const why = setting.kind === 'off' ? 'MAP_TILES is off' : 'MAP_TILES is an online URL';
      throw new ProblemError(404, `this hub serves no map tiles: ${why}`);
    }
    const z = coordinate('z', c.req.param('z'));
    const x = coordinate('x', c.req.param('x'));
    const y = coordinate('y', c.req.param('y'));
    if (!validTileAddress(z, x, y)) {
      throw new ProblemError(400, 'invalid tile address', {
        errors: [{ field: 'x', message: `x and y must be below 2^z (${2 ** Math.min(z, 30)}) at zoom ${z}` }],
      });
    }
    const data =
      z >= archive.info.minZoom && z <= archive.info.maxZoom ? await archive.tile(z, x, y) : undefined;
    if (!data) {
      return c.body(EMPTY_TILE, 200, { 'content-type': 'image/png', 'cache-control': TILE_CACHE });
    }
    const format = sniffRasterFormat(data) ?? archive.info.format;
    return c.body(data as Uint8Array<ArrayBuffer>, 200, {
      'content-type': RASTER_CONTENT_TYPES[format],
      'cache-control': TILE_CACHE,
      'x-content-type-options': 'nosniff',
    });
  });
  return app;
}
