/**
 * `meshhub tiles extract` as a person runs it (the built command in a child process) against a
 * loopback HTTP server that serves a PMTiles archive with byte ranges: exactly the tiles of the
 * box come out, only the ranges needed are fetched, an interrupted run resumes where it
 * stopped, and the hub then serves the extracted tiles with no internet.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMapTiles } from '../../src/ui-server/map-tiles.js';
import { buildCli, meshhubCli } from '../helpers/cli.js';
import { startTestHub } from '../helpers/hub.js';
import { type FixtureTile, tileAt, tilePng, writePmtiles } from '../ui-server/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'meshhub-extract-'));
const REMOTE = join(dir, 'remote.pmtiles');
/** The remote archive covers more than the box asked for, zoom 0 to 12. */
const REMOTE_AREA = { west: 7.9, south: 46.9, east: 9.3, north: 47.9 };
const BOX = { west: 8.2, south: 47.2, east: 8.9, north: 47.6 };
const BBOX_ARG = `${BOX.west},${BOX.south},${BOX.east},${BOX.north}`;
const MAX_ZOOM = 11;

function tilesOf(
  area: typeof BOX,
  minZoom: number,
  maxZoom: number,
): Array<{ z: number; x: number; y: number }> {
  const out: Array<{ z: number; x: number; y: number }> = [];
  for (let z = minZoom; z <= maxZoom; z++) {
    const nw = tileAt(area.north, area.west, z);
    const se = tileAt(area.south, area.east, z);
    for (let x = nw.x; x <= se.x; x++) for (let y = nw.y; y <= se.y; y++) out.push({ z, x, y });
  }
  return out;
}

const key = (t: { z: number; x: number; y: number }) => `${t.z}/${t.x}/${t.y}`;
const remoteTiles: FixtureTile[] = tilesOf(REMOTE_AREA, 0, 12).map((t, i) => ({
  ...t,
  // Every fourth tile at zoom 11 is the same (open water): stored once, served for each.
  data:
    t.z === 9 && i % 4 === 0
      ? tilePng([90, 140, 200], 4)
      : tilePng([i % 250, (i * 7) % 250, (i * 13) % 250], 4),
}));
const byKey = new Map(remoteTiles.map((t) => [key(t), t.data]));
const expected = tilesOf(BOX, 0, MAX_ZOOM);

/** A static file server with Range support that counts range requests into the tile data. */
class RangeServer {
  server!: Server;
  url = '';
  tileRequests = 0;
  /** After this many tile requests, connections are cut (a lost uplink). */
  cutAfter = Number.POSITIVE_INFINITY;
  private readonly body: Buffer;
  private readonly dataOffset: number;

  constructor(path: string) {
    this.body = readFileSync(path);
    this.dataOffset = Number(this.body.readBigUInt64LE(56));
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      if (req.url !== new URL(this.url).pathname) {
        res.writeHead(404);
        res.end();
        return;
      }
      const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      if (!range) {
        res.writeHead(200, { 'content-length': this.body.length });
        res.end(this.body);
        return;
      }
      const start = Number(range[1]);
      const end = Math.min(Number(range[2]), this.body.length - 1);
      if (start >= this.dataOffset) {
        this.tileRequests++;
        if (this.tileRequests > this.cutAfter) {
          req.socket.destroy();
          return;
        }
      }
      res.writeHead(206, {
        'content-range': `bytes ${start}-${end}/${this.body.length}`,
        'content-length': end - start + 1,
        etag: '"v1"',
      });
      res.end(this.body.subarray(start, end + 1));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/maps/site-raster.pmtiles`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

let remote: RangeServer;

beforeAll(async () => {
  buildCli();
  writePmtiles(REMOTE, remoteTiles, {
    gzipInternal: true,
    metadata: { name: 'Site raster', attribution: '© Survey contributors' },
    bounds: [REMOTE_AREA.west, REMOTE_AREA.south, REMOTE_AREA.east, REMOTE_AREA.north],
  });
  remote = new RangeServer(REMOTE);
  await remote.start();
}, 300_000);

afterAll(async () => {
  await remote?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const env = (dataDir: string) => ({ PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });

describe('meshhub tiles extract', () => {
  it('copies exactly the tiles of the box into DATA_DIR/tiles, fetching only those, and says where it is', async () => {
    const dataDir = join(dir, 'data-whole');
    remote.tileRequests = 0;
    const run = await meshhubCli(
      ['tiles', 'extract', '--bbox', BBOX_ARG, '--max-zoom', String(MAX_ZOOM), '--source', remote.url],
      { env: env(dataDir) },
    );
    expect(run.err).toContain(`tiles ${expected.length}/${expected.length}`);
    expect(run.code).toBe(0);
    const out = join(dataDir, 'tiles', 'site-raster.pmtiles');
    expect(run.out).toContain(`serve it with MAP_TILES=${out}`);
    // One range request per tile of the box, nothing of the rest of the archive.
    expect(remote.tileRequests).toBe(expected.length);
    expect(existsSync(`${out}.part`) || existsSync(`${out}.journal`)).toBe(false);

    const local = await openMapTiles(out);
    try {
      const archive = local.archive!;
      expect(archive.info).toMatchObject({
        minZoom: 0,
        maxZoom: MAX_ZOOM,
        attribution: '© Survey contributors',
      });
      for (const t of expected) {
        const data = await archive.tile(t.z, t.x, t.y);
        expect(data && Buffer.from(data).equals(byKey.get(key(t))!), key(t)).toBe(true);
      }
      // Tiles the remote has outside the box, or beyond the zoom, are not in the copy.
      const inBox = new Set(expected.map(key));
      const outside = remoteTiles.filter((t) => !inBox.has(key(t)));
      expect(outside.length).toBeGreaterThan(0);
      for (const t of outside) expect(await archive.tile(t.z, t.x, t.y), key(t)).toBeUndefined();
      const header = readFileSync(out);
      expect(Number(header.readBigUInt64LE(72))).toBe(expected.length); // addressed tiles
    } finally {
      await local.archive?.close();
    }
  });

  it('resumes after an interrupted run, fetching only the tiles it did not have', async () => {
    const dataDir = join(dir, 'data-resume');
    const out = join(dataDir, 'site.pmtiles');
    const args = [
      'tiles',
      'extract',
      `--bbox=${BBOX_ARG}`,
      `--max-zoom=${MAX_ZOOM}`,
      '--source',
      remote.url,
      '--out',
      out,
    ];
    remote.tileRequests = 0;
    remote.cutAfter = 20;
    const first = await meshhubCli(args, { env: env(dataDir) });
    remote.cutAfter = Number.POSITIVE_INFINITY;
    expect(first.code).toBe(1);
    expect(first.err).toMatch(/run the same command again to resume/);
    expect(first.err).not.toMatch(/\n\s+at /); // no stack
    expect(existsSync(out)).toBe(false);
    const kept = readFileSync(`${out}.journal`, 'utf8').trim().split('\n').length - 1;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThan(expected.length);

    remote.tileRequests = 0;
    const second = await meshhubCli(args, { env: env(dataDir) });
    expect(second.code).toBe(0);
    expect(second.err).toContain(`(${kept} from the interrupted run)`);
    expect(remote.tileRequests).toBe(expected.length - kept);
    const local = await openMapTiles(out);
    try {
      for (const t of expected) {
        const data = await local.archive!.tile(t.z, t.x, t.y);
        expect(data && Buffer.from(data).equals(byKey.get(key(t))!), key(t)).toBe(true);
      }
    } finally {
      await local.archive?.close();
    }
  });

  it('then the hub serves those tiles itself, with the internet gone', async () => {
    const out = join(dir, 'data-resume', 'site.pmtiles');
    await remote.stop();
    const hub = await startTestHub({ MAP_TILES: out });
    try {
      const tilejson = await fetch(`${hub.baseUrl}/api/v1/map/tilejson`).then((r) => r.json());
      expect(tilejson).toMatchObject({ tiles: ['/api/v1/map/tiles/{z}/{x}/{y}'], maxzoom: MAX_ZOOM });
      for (const t of expected.filter((_, i) => i % 5 === 0)) {
        const res = await fetch(`${hub.baseUrl}/api/v1/map/tiles/${t.z}/${t.x}/${t.y}`);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('image/png');
        expect(Buffer.from(await res.arrayBuffer()).equals(byKey.get(key(t))!)).toBe(true);
      }
    } finally {
      await hub.stop();
      await remote.start();
    }
  });

  it.each([
    [['--max-zoom', '8', '--source', 'http://127.0.0.1:9/x.pmtiles'], /--bbox is required/],
    [
      ['--bbox', '8.4,47.3,8.7', '--max-zoom', '8', '--source', 'http://127.0.0.1:9/x.pmtiles'],
      /--bbox "8\.4,47\.3,8\.7" is not four numbers/,
    ],
    [
      ['--bbox', '8.7,47.3,8.4,47.5', '--max-zoom', '8', '--source', 'http://127.0.0.1:9/x.pmtiles'],
      /west below east/,
    ],
    [
      ['--bbox', '8.4,47.3,8.7,91', '--max-zoom', '8', '--source', 'http://127.0.0.1:9/x.pmtiles'],
      /latitudes must be within/,
    ],
    [
      ['--bbox', BBOX_ARG, '--max-zoom', '25', '--source', 'http://127.0.0.1:9/x.pmtiles'],
      /--max-zoom "25" must be a whole number 0-20/,
    ],
    [['--bbox', BBOX_ARG, '--max-zoom', 'x'], /--max-zoom "x"/],
    [['--bbox', BBOX_ARG, '--max-zoom', '8'], /--source is required/],
    [['--bbox', BBOX_ARG, '--max-zoom', '8', '--source', 'ftp://host/x.pmtiles'], /--source must be/],
    [
      [
        '--bbox',
        BBOX_ARG,
        '--max-zoom',
        '8',
        '--source',
        'http://127.0.0.1:9/x.pmtiles',
        '--out',
        'x.mbtiles',
      ],
      /--out must name a \.pmtiles file/,
    ],
    [['--zoom', '8'], /unknown option --zoom/],
  ])('refuses %j with one plain line and exit 2', async (flags, message) => {
    const run = await meshhubCli(['tiles', 'extract', ...flags], { env: env(join(dir, 'data-usage')) });
    expect(run.code).toBe(2);
    expect(run.err).toMatch(message);
    expect(run.err.trim().split('\n')).toHaveLength(1);
  });

  it('refuses an area of more tiles than one extract fetches, before fetching any', async () => {
    remote.tileRequests = 0;
    const run = await meshhubCli(
      ['tiles', 'extract', '--bbox=-170,-80,170,80', '--max-zoom', '12', '--source', remote.url],
      { env: env(join(dir, 'data-cap')) },
    );
    expect(run.code).toBe(2);
    expect(run.err).toMatch(
      /that area is \d+ tiles from zoom 0 to 12, more than the 100000 one extract fetches; choose a lower --max-zoom or a smaller --bbox/,
    );
    expect(remote.tileRequests).toBe(0);
  });

  it('says plainly when the source is not there or not an archive (exit 1)', async () => {
    const missing = await meshhubCli(
      [
        'tiles',
        'extract',
        '--bbox',
        BBOX_ARG,
        '--max-zoom',
        '3',
        '--source',
        `${new URL(remote.url).origin}/nothing-here`,
      ],
      { env: env(join(dir, 'data-missing')) },
    );
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/is not a readable PMTiles v3 archive|answered HTTP/);
    expect(missing.err).not.toMatch(/\n\s+at /);
  });
});
