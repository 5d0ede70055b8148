/**
 * Map tile files for tests, written to their specs: PNG tiles (RFC 2083), MBTiles 1.3 (SQLite,
 * TMS rows) and PMTiles v3 (127-byte header, varint directories), so the hub reads real files.
 */
import { writeFileSync } from 'node:fs';
import { crc32, deflateSync, gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { zxyToTileId } from 'pmtiles';

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

function varint(value: number, out: number[]): void {
  let n = value;
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

interface DirectoryEntry {
  tileId: number;
  offset: number;
  length: number;
  runLength: number;
}

/** PMTiles v3 directory: count, then delta tile ids, run lengths, lengths, offsets (0 = contiguous). */
function directory(entries: readonly DirectoryEntry[]): Buffer {
  const out: number[] = [];
  varint(entries.length, out);
  let last = 0;
  for (const e of entries) {
    varint(e.tileId - last, out);
    last = e.tileId;
  }
  for (const e of entries) varint(e.runLength, out);
  for (const e of entries) varint(e.length, out);
  entries.forEach((e, i) => {
    const previous = entries[i - 1];
    varint(previous && e.offset === previous.offset + previous.length ? 0 : e.offset + 1, out);
  });
  return Buffer.from(out);
}

export interface PmtilesOptions {
  tileType?: number;
  gzipInternal?: boolean;
  metadata?: Record<string, unknown>;
  bounds?: [number, number, number, number];
}

export function writePmtiles(
  path: string,
  tiles: readonly FixtureTile[],
  options: PmtilesOptions = {},
): void {
  const sorted = tiles
    .map((t) => ({ ...t, tileId: zxyToTileId(t.z, t.x, t.y) }))
    .sort((a, b) => a.tileId - b.tileId);
  const entries: DirectoryEntry[] = [];
  const blobs: Buffer[] = [];
  let offset = 0;
  for (const t of sorted) {
    entries.push({ tileId: t.tileId, offset, length: t.data.length, runLength: 1 });
    blobs.push(t.data);
    offset += t.data.length;
  }
  const pack = (b: Buffer) => (options.gzipInternal ? gzipSync(b) : b);
  const root = pack(directory(entries));
  const meta = pack(Buffer.from(JSON.stringify(options.metadata ?? { name: 'test' })));
  const data = Buffer.concat(blobs);
  const [minLon, minLat, maxLon, maxLat] = options.bounds ?? [-180, -85, 180, 85];
  const zooms = sorted.map((t) => t.z);
  const header = Buffer.alloc(127);
  header.write('PMTiles', 0, 'ascii');
  header[7] = 3;
  const u64 = (at: number, v: number) => header.writeBigUInt64LE(BigInt(v), at);
  const rootOffset = 127;
  const metaOffset = rootOffset + root.length;
  const dataOffset = metaOffset + meta.length;
  u64(8, rootOffset);
  u64(16, root.length);
  u64(24, metaOffset);
  u64(32, meta.length);
  u64(40, dataOffset); // no leaf directories
  u64(48, 0);
  u64(56, dataOffset);
  u64(64, data.length);
  u64(72, entries.length);
  u64(80, entries.length);
  u64(88, entries.length);
  header[96] = 1; // clustered
  header[97] = options.gzipInternal ? 2 : 1; // internal compression: gzip / none
  header[98] = 1; // tile compression: none
  header[99] = options.tileType ?? 2; // PNG
  header[100] = Math.min(...zooms);
  header[101] = Math.max(...zooms);
  header.writeInt32LE(Math.round(minLon * 1e7), 102);
  header.writeInt32LE(Math.round(minLat * 1e7), 106);
  header.writeInt32LE(Math.round(maxLon * 1e7), 110);
  header.writeInt32LE(Math.round(maxLat * 1e7), 114);
  header[118] = Math.max(...zooms);
  header.writeInt32LE(Math.round(((minLon + maxLon) / 2) * 1e7), 119);
  header.writeInt32LE(Math.round(((minLat + maxLat) / 2) * 1e7), 123);
  writeFileSync(path, Buffer.concat([header, root, meta, data]));
}
