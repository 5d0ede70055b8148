/**
 * Map tile files for tests, written to their specs: PNG tiles (RFC 2083), MBTiles 1.3 (SQLite,
 * TMS rows) and PMTiles v3 (the hub's own writer), so the hub reads real files.
 */
import { writeFileSync } from 'node:fs';
import { crc32, deflateSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { zxyToTileId } from 'pmtiles';
import { entriesFor, pmtilesPrefix, TileType } from '../../src/ui-server/pmtiles-writer.js';

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/** A 256×256 RGB PNG: a flat colour with a darker 1-px border, so tile edges show in screenshots. */
export function tilePng(rgb: [number, number, number], size = 256): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3);
    for (let x = 0; x < size; x++) {
      const edge = x === 0 || y === 0;
      row[1 + x * 3] = edge ? rgb[0] - 30 : rgb[0];
      row[2 + x * 3] = edge ? rgb[1] - 30 : rgb[1];
      row[3 + x * 3] = edge ? rgb[2] - 30 : rgb[2];
    }
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export interface FixtureTile {
  z: number;
  x: number;
  /** XYZ (y from the north), as the map asks. */
  y: number;
  data: Buffer;
}

/** XYZ tile coordinates of a point (Web Mercator). */
export function tileAt(lat: number, lon: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  const x = Math.floor(((lon + 180) / 360) * n);
  const rad = (lat * Math.PI) / 180;
  const y = Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n);
  return { x, y };
}

/** Tiles around a point from zoom 0 to `maxZoom` (the point's tile and its neighbours), each a distinct colour. */
export function tilesAround(lat: number, lon: number, maxZoom: number): FixtureTile[] {
  const tiles: FixtureTile[] = [];
  for (let z = 0; z <= maxZoom; z++) {
    const n = 2 ** z;
    const c = tileAt(lat, lon, z);
    for (let dx = -1; dx <= 1; dx++) {
      for (let dy = -1; dy <= 1; dy++) {
        const x = c.x + dx;
        const y = c.y + dy;
        if (x < 0 || y < 0 || x >= n || y >= n) continue;
        const shade = 200 + ((x + y + z) % 3) * 12;
        tiles.push({ z, x, y, data: tilePng([shade - 10, shade + 20, shade - 25]) });
      }
    }
  }
  return tiles;
}

export function writeMbtiles(
  path: string,
  tiles: readonly FixtureTile[],
  metadata: Record<string, string> = { name: 'test', format: 'png' },
): void {
  const db = new Database(path);
  db.exec(`CREATE TABLE metadata (name TEXT, value TEXT);
    CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
    CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);`);
  const meta = db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)');
  for (const [name, value] of Object.entries(metadata)) meta.run(name, value);
  const insert = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
  // MBTiles rows are TMS: counted from the south.
  for (const t of tiles) insert.run(t.z, t.x, 2 ** t.z - 1 - t.y, t.data);
  db.close();
}

export interface PmtilesOptions {
  tileType?: number;
  gzipInternal?: boolean;
  metadata?: Record<string, unknown>;
  bounds?: [number, number, number, number];
}

/** A PMTiles v3 file of `tiles` (the hub's own writer, src/ui-server/pmtiles-writer.ts; read back by the `pmtiles` library). */
export function writePmtiles(
  path: string,
  tiles: readonly FixtureTile[],
  options: PmtilesOptions = {},
): void {
  const sorted = tiles
    .map((t) => ({ ...t, tileId: zxyToTileId(t.z, t.x, t.y) }))
    .sort((a, b) => a.tileId - b.tileId);
  let offset = 0;
  const placed = sorted.map((t) => {
    const at = { tileId: t.tileId, offset, length: t.data.length };
    offset += t.data.length;
    return at;
  });
  const zooms = sorted.map((t) => t.z);
  const prefix = pmtilesPrefix(entriesFor(placed), offset, {
    tileType: options.tileType ?? TileType.Png,
    gzip: options.gzipInternal ?? false,
    minZoom: Math.min(...zooms),
    maxZoom: Math.max(...zooms),
    bounds: options.bounds ?? [-180, -85, 180, 85],
    metadata: options.metadata ?? { name: 'test' },
  });
  writeFileSync(path, Buffer.concat([prefix, ...sorted.map((t) => t.data)]));
}
