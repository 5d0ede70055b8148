/**
 * MAP_TILES: an online template, or a local .mbtiles / .pmtiles file the hub serves at
 * /api/v1/map/tiles/{z}/{x}/{y}, with a TileJSON document telling the web map which.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { ConfigError } from '../../src/config/load.js';
import { createHttpApp } from '../../src/http/app.js';
import { HubMetrics } from '../../src/metrics.js';
import { mapRoutes } from '../../src/ui-server/map-routes.js';
import { type MapTiles, openConfiguredMapTiles, openMapTiles } from '../../src/ui-server/map-tiles.js';
import { DEFAULT_MAP_TILES, parseMapTiles, tileOrigins } from '../../src/ui-server/map-tiles-setting.js';
import { type FixtureTile, tilePng, writeMbtiles, writePmtiles } from './fixtures.js';

type Problem = { errors: Array<{ field: string }> };

const dir = mkdtempSync(join(tmpdir(), 'meshhub-tiles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TILES: FixtureTile[] = [
  { z: 0, x: 0, y: 0, data: tilePng([200, 220, 200], 8) },
  { z: 1, x: 1, y: 0, data: tilePng([10, 20, 30], 8) },
  { z: 2, x: 1, y: 0, data: tilePng([40, 50, 60], 8) },
  { z: 2, x: 1, y: 3, data: tilePng([70, 80, 90], 8) },
];

function appFor(tiles: MapTiles): Hono {
  const log = pino({ level: 'silent' });
  // What the web UI module mounts for MAP_TILES (src/ui-server/module.ts).
  const routes = [{ path: '/api/v1/map', app: mapRoutes(tiles.setting, tiles.archive) }];
  return createHttpApp({
    log,
    metrics: new HubMetrics({ defaultMetrics: false }),
    version: 'test',
    health: () => ({
      status: 'ok',
      version: 'test',
      uptime_s: 0,
      radio: { state: 'connected', transport: 'none', simulated: false },
      actors: [],
    }),
    routes,
  });
}

describe('MAP_TILES setting', () => {
  it('defaults to OpenStreetMap and accepts templates and tile files', () => {
    expect(loadConfig({}).MAP_TILES).toEqual({ kind: 'online', urlTemplate: DEFAULT_MAP_TILES });
    expect(parseMapTiles('https://{s}.tile.example.org/{z}/{x}/{y}.png')).toEqual({
      kind: 'online',
      urlTemplate: 'https://{s}.tile.example.org/{z}/{x}/{y}.png',
    });
    expect(parseMapTiles('maps/site.pmtiles', '/srv/meshhub')).toEqual({
      kind: 'pmtiles',
      path: '/srv/meshhub/maps/site.pmtiles',
    });
    expect(parseMapTiles('/data/Region.MBTILES')).toEqual({ kind: 'mbtiles', path: '/data/Region.MBTILES' });
  });

  it('refuses anything else at start-up, naming MAP_TILES and the reason', () => {
    for (const [value, reason] of [
      ['https://tiles.example.org/{z}/{x}.png', '{y} is missing'],
      ['ftp://tiles.example.org/{z}/{x}/{y}.png', 'expected an http(s) tile URL template'],
      ['/data/map.zip', 'or a path to a .pmtiles or .mbtiles file'],
    ] as const) {
      const error = (() => {
        try {
          loadConfig({ MAP_TILES: value });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.join('\n')).toMatch(
        new RegExp(`^MAP_TILES: .*${reason.replace(/[{}().]/g, '\\$&')}`, 'm'),
      );
    }
  });

  it('lets the browser load online tiles (and only those hosts) under the page CSP', () => {
    expect(tileOrigins({ kind: 'online', urlTemplate: DEFAULT_MAP_TILES })).toEqual([
      'https://tile.openstreetmap.org',
    ]);
    expect(
      tileOrigins({ kind: 'online', urlTemplate: 'https://{s}.tiles.example.org:8443/{z}/{x}/{y}.png' }),
    ).toEqual(['https://*.tiles.example.org:8443']);
    expect(tileOrigins({ kind: 'mbtiles', path: '/x.mbtiles' })).toEqual([]);
  });

  it('an unusable file stops the start with a configuration error naming MAP_TILES', async () => {
    const vector = join(dir, 'vector.mbtiles');
    writeMbtiles(vector, TILES, { name: 'v', format: 'pbf' });
    const notSqlite = join(dir, 'text.mbtiles');
    writeFileSync(notSqlite, 'this is not a database');
    const emptyDb = join(dir, 'empty.mbtiles');
    new Database(emptyDb).exec('CREATE TABLE x (y)');
    const garbage = join(dir, 'garbage.pmtiles');
    writeFileSync(garbage, Buffer.alloc(200, 7));
    const vectorPm = join(dir, 'vector.pmtiles');
    writePmtiles(vectorPm, TILES, { tileType: 1 });
    const cases: Array<[string, RegExp]> = [
      [join(dir, 'missing.mbtiles'), /cannot open .*missing\.mbtiles/],
      [join(dir, 'missing.pmtiles'), /cannot open .*missing\.pmtiles/],
      [vector, /holds vector tiles; the web map draws raster tiles/],
      [notSqlite, /is not an SQLite \(MBTiles\) file/],
      [emptyDb, /is not an MBTiles file \(it has no tiles table\)/],
      [garbage, /not a readable PMTiles v3 file/],
      [vectorPm, /holds vector tiles/],
    ];
    for (const [path, reason] of cases) {
      const setting = parseMapTiles(path);
      if (typeof setting === 'string') throw new Error(setting);
      const error = await openConfiguredMapTiles(setting).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, path).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems[0]).toMatch(/^MAP_TILES: /);
      expect((error as ConfigError).problems[0]).toMatch(reason);
    }
  });
});

describe.each([
  [
    'mbtiles',
    (path: string) =>
      writeMbtiles(path, TILES, {
        name: 'Site <b>map</b>',
        format: 'png',
        attribution: '&copy; <a href="https://example.org">Survey</a>',
        bounds: '8.4,47.3,8.6,47.5',
        minzoom: '0',
        maxzoom: '2',
      }),
  ],
  [
    'pmtiles',
    (path: string) =>
      writePmtiles(path, TILES, {
        metadata: { name: 'Site <b>map</b>', attribution: '&copy; <a href="https://example.org">Survey</a>' },
        bounds: [8.4, 47.3, 8.6, 47.5],
      }),
  ],
  [
    'pmtiles (gzip directories)',
    (path: string) =>
      writePmtiles(path, TILES, {
        gzipInternal: true,
        metadata: { name: 'Site <b>map</b>', attribution: '© Survey' },
        bounds: [8.4, 47.3, 8.6, 47.5],
      }),
  ],
] as const)('a local %s file', (kind, write) => {
  let app: Hono;
  let tiles: MapTiles;

  beforeAll(async () => {
    const path = join(
      dir,
      `site-${kind.replace(/\W+/g, '-')}.${kind.startsWith('pmtiles') ? 'pmtiles' : 'mbtiles'}`,
    );
    write(path);
    tiles = await openMapTiles(path);
    app = appFor(tiles);
  });
  afterAll(() => tiles.archive?.close());

  it('is announced as this hub’s own tile URL in TileJSON, with its zooms, bounds and plain-text attribution', async () => {
    const res = await app.request('/api/v1/map/tilejson');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { bounds: unknown };
    expect(doc).toMatchObject({
      tilejson: '3.0.0',
      tiles: ['/api/v1/map/tiles/{z}/{x}/{y}'],
      scheme: 'xyz',
      minzoom: 0,
      maxzoom: 2,
      attribution: '© Survey',
      name: 'Site map',
    });
    expect(doc.bounds).toEqual([8.4, 47.3, 8.6, 47.5]);
  });

  it('serves each tile at its XYZ address (MBTiles rows flipped from TMS)', async () => {
    for (const tile of TILES) {
      const res = await app.request(`/api/v1/map/tiles/${tile.z}/${tile.x}/${tile.y}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(res.headers.get('cache-control')).toMatch(/max-age=\d+/);
      expect(Buffer.from(await res.arrayBuffer()).equals(tile.data)).toBe(true);
    }
    // `.png` on y is accepted too (some clients add it).
    const withExtension = await app.request('/api/v1/map/tiles/2/1/3.png');
    expect(Buffer.from(await withExtension.arrayBuffer()).equals(TILES[3]!.data)).toBe(true);
  });

  it('answers a tile the file does not hold with a transparent PNG, so the grid shows there', async () => {
    for (const path of ['/api/v1/map/tiles/2/3/3', '/api/v1/map/tiles/9/0/0']) {
      const res = await app.request(path);
      expect(res.status).toBe(200);
      const body = Buffer.from(await res.arrayBuffer());
      expect(body.subarray(1, 4).toString('ascii')).toBe('PNG');
      expect(TILES.some((t) => t.data.equals(body))).toBe(false);
    }
  });

  it('refuses bad coordinates with a 400 naming the field, never a 500', async () => {
    const cases: Array<[string, string]> = [
      ['/api/v1/map/tiles/a/0/0', 'z'],
      ['/api/v1/map/tiles/1/-1/0', 'x'],
      ['/api/v1/map/tiles/1/0/0.gif', 'y'],
      ['/api/v1/map/tiles/1/2/0', 'x'],
      ['/api/v1/map/tiles/31/0/0', 'x'],
    ];
    for (const [path, field] of cases) {
      const res = await app.request(path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(((await res.json()) as Problem).errors[0]!.field).toBe(field);
    }
  });

  it('never fails on free-form coordinates (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.string(), fc.string(), async (z, x, y) => {
        const path = `/api/v1/map/tiles/${encodeURIComponent(z)}/${encodeURIComponent(x)}/${encodeURIComponent(y)}`;
        const res = await app.request(path);
        expect([200, 400, 404]).toContain(res.status);
        if (res.status === 400)
          expect(['z', 'x', 'y']).toContain(((await res.json()) as Problem).errors[0]!.field);
      }),
      { numRuns: 150 },
    );
  });
});

describe('online tiles', () => {
  it('TileJSON names the online template with OpenStreetMap’s attribution, and the hub serves no tiles itself', async () => {
    const app = appFor(await openMapTiles(DEFAULT_MAP_TILES));
    expect(await (await app.request('/api/v1/map/tilejson')).json()).toEqual({
      tilejson: '3.0.0',
      tiles: [DEFAULT_MAP_TILES],
      scheme: 'xyz',
      minzoom: 0,
      maxzoom: 19,
      attribution: '© OpenStreetMap contributors',
    });
    const res = await app.request('/api/v1/map/tiles/1/0/0');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });
});
