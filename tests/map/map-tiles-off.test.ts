/**
 * MAP_TILES=off: a hub that never points the browser at any tile server. TileJSON lists no tile
 * URL (the web map then draws only its built-in world layer), and the tile route says why it
 * has nothing, as a problem document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMapTiles, tileOrigins } from '../../src/ui-server/map-tiles-setting.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';

describe('MAP_TILES=off', () => {
  let hub: TestHub;

  beforeAll(async () => {
    hub = await startTestHub({ MAP_TILES: 'off' });
  });
  afterAll(() => hub?.stop());

  it('is a setting of its own that lets the page load images from no other host', () => {
    expect(parseMapTiles(' OFF ')).toEqual({ kind: 'off' });
    expect(tileOrigins({ kind: 'off' })).toEqual([]);
  });

  it('announces no tile URL, so the map asks nobody for tiles', async () => {
    const res = await fetch(`${hub.baseUrl}/api/v1/map/tilejson`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ tilejson: '3.0.0', tiles: [] });
  });

  it('answers a tile request with a 404 problem saying MAP_TILES is off', async () => {
    const res = await fetch(`${hub.baseUrl}/api/v1/map/tiles/0/0/0`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/problem\+json/);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/MAP_TILES is off/);
  });
});
