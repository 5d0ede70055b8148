/**
 * MBTiles 1.3: an SQLite file with `tiles(zoom_level, tile_column, tile_row, tile_data)` and a
 * `metadata(name, value)` table. Rows are in the TMS scheme, y counted up from the south, so
 * XYZ y maps to `tile_row = 2^z − 1 − y`. Opened read-only; lookups hit the spec's unique index.
 */
import BetterSqlite3 from 'better-sqlite3';
import {
  MapTilesError,
  type RasterFormat,
  sniffRasterFormat,
  type TileArchive,
  type TileArchiveInfo,
  tileArchiveInfo,
} from './tile-archive.js';

type TileStatement = BetterSqlite3.Statement<[number, number, number], { tile_data: Buffer }>;

function numberList(value: string | undefined, count: number): number[] | undefined {
  if (value === undefined) return undefined;
  const parts = value.split(',').map((s) => Number(s.trim()));
  return parts.length === count && parts.every(Number.isFinite) ? parts : undefined;
}

function formatOf(value: string | undefined): RasterFormat | 'vector' | undefined {
  const v = value?.trim().toLowerCase();
  if (v === 'png') return 'png';
  if (v === 'jpg' || v === 'jpeg') return 'jpg';
  if (v === 'webp') return 'webp';
  if (v === 'pbf' || v === 'mvt' || v === 'mlt') return 'vector';
  return undefined;
}

export function openMbtiles(path: string): TileArchive {
  let db: BetterSqlite3.Database;
  try {
    db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new MapTilesError(`cannot open ${path}: ${(error as Error).message}`);
  }
  try {
    let hasTiles: boolean;
    try {
      hasTiles =
        db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'tiles' AND type IN ('table', 'view')").get() !==
        undefined;
    } catch {
      throw new MapTilesError(`${path} is not an SQLite (MBTiles) file`);
    }
    if (!hasTiles) throw new MapTilesError(`${path} is not an MBTiles file (it has no tiles table)`);
    const metadata = new Map<string, string>();
    try {
      const rows = db.prepare('SELECT name, value FROM metadata').all() as Array<{
        name: string;
        value: string;
      }>;
      for (const row of rows) if (typeof row.value === 'string') metadata.set(row.name, row.value);
    } catch {
      // The metadata table is required by the spec but some tools leave it out; the tiles decide.
    }
    const select = db.prepare(
      'SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?',
    ) as TileStatement;
    const zooms = db.prepare('SELECT min(zoom_level) AS lo, max(zoom_level) AS hi FROM tiles').get() as {
      lo: number | null;
      hi: number | null;
    };
    if (zooms.lo === null || zooms.hi === null) throw new MapTilesError(`${path} holds no tiles`);

    let format = formatOf(metadata.get('format'));
    if (format === undefined) {
      const sample = db.prepare('SELECT tile_data FROM tiles LIMIT 1').get() as
        | { tile_data: Buffer }
        | undefined;
      format = sample ? sniffRasterFormat(sample.tile_data) : undefined;
    }
    if (format === 'vector' || format === undefined) {
      throw new MapTilesError(
        `${path} holds ${format === 'vector' ? 'vector' : 'unknown'} tiles; the web map draws raster tiles (png, jpg or webp)`,
      );
    }

    const minZoom = Number(metadata.get('minzoom') ?? zooms.lo);
    const maxZoom = Number(metadata.get('maxzoom') ?? zooms.hi);
    const bounds = numberList(metadata.get('bounds'), 4) as TileArchiveInfo['bounds'];
    const center = numberList(metadata.get('center'), 3) as TileArchiveInfo['center'];
    const info = tileArchiveInfo({
      format,
      minZoom: Number.isInteger(minZoom) ? minZoom : zooms.lo,
      maxZoom: Number.isInteger(maxZoom) ? maxZoom : zooms.hi,
      bounds,
      center,
      attribution: metadata.get('attribution'),
      name: metadata.get('name'),
    });
    return {
      kind: 'mbtiles',
      path,
      info,
      async tile(z, x, y) {
        const row = select.get(z, x, 2 ** z - 1 - y);
        return row
          ? new Uint8Array(row.tile_data.buffer, row.tile_data.byteOffset, row.tile_data.byteLength)
          : undefined;
      },
      async close() {
        if (db.open) db.close();
      },
    };
  } catch (error) {
    db.close();
    if (error instanceof MapTilesError) throw error;
    throw new MapTilesError(`${path} is not a readable MBTiles file: ${(error as Error).message}`);
  }
}
