/**
 * PMTiles v3, read with the `pmtiles` library over a local file: a `Source` that reads byte
 * ranges with one open file handle, and gunzip from node:zlib for gzip-compressed directories
 * (also what `meshhub tiles extract` decompresses a remote archive's directories with).
 */
import { open } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { Compression, PMTiles, type RangeResponse, type Source, TileType } from 'pmtiles';
import { MapTilesError, type RasterFormat, type TileArchive, tileArchiveInfo } from './tile-archive.js';

const RASTER_TYPES: Partial<Record<TileType, RasterFormat>> = {
  [TileType.Png]: 'png',
  [TileType.Jpeg]: 'jpg',
  [TileType.Webp]: 'webp',
};

export async function decompress(buf: ArrayBuffer, compression: Compression): Promise<ArrayBuffer> {
  if (compression === Compression.None || compression === Compression.Unknown) return buf;
  if (compression === Compression.Gzip) {
    const out = gunzipSync(new Uint8Array(buf));
    return out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer;
  }
  throw new MapTilesError(`compression ${Compression[compression]} is not supported`);
}

export async function openPmtiles(path: string): Promise<TileArchive> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    throw new MapTilesError(`cannot open ${path}: ${(error as Error).message}`);
  }
  const size = (await handle.stat()).size;
  const source: Source = {
    getKey: () => path,
    async getBytes(offset: number, length: number): Promise<RangeResponse> {
      // The library asks for the first 16 KiB up front; a smaller file simply ends sooner.
      const wanted = Math.max(0, Math.min(length, size - offset));
      const buffer = Buffer.alloc(wanted);
      const { bytesRead } = await handle.read(buffer, 0, wanted, offset);
      return { data: buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + bytesRead) as ArrayBuffer };
    },
  };
  const archive = new PMTiles(source, undefined, decompress);
  try {
    const header = await archive.getHeader();
    const format = RASTER_TYPES[header.tileType];
    if (!format) {
      const what =
        header.tileType === TileType.Mvt || header.tileType === TileType.Mlt ? 'vector' : 'unknown';
      throw new MapTilesError(
        `${path} holds ${what} tiles; the web map draws raster tiles (png, jpg or webp)`,
      );
    }
    let metadata: Record<string, unknown> = {};
    try {
      const parsed = await archive.getMetadata();
      if (parsed && typeof parsed === 'object') metadata = parsed as Record<string, unknown>;
    } catch {
      // Metadata is optional for us: the header has what the map needs.
    }
    const boundsKnown = header.minLon < header.maxLon && header.minLat < header.maxLat;
    const info = tileArchiveInfo({
      format,
      minZoom: header.minZoom,
      maxZoom: header.maxZoom,
      ...(boundsKnown ? { bounds: [header.minLon, header.minLat, header.maxLon, header.maxLat] } : {}),
      ...(boundsKnown ? { center: [header.centerLon, header.centerLat, header.centerZoom] } : {}),
      attribution: metadata.attribution,
      name: metadata.name,
    });
    return {
      kind: 'pmtiles',
      path,
      info,
      async tile(z, x, y) {
        const found = await archive.getZxy(z, x, y);
        return found ? new Uint8Array(found.data) : undefined;
      },
      async close() {
        await handle.close();
      },
    };
  } catch (error) {
    await handle.close();
    if (error instanceof MapTilesError) throw error;
    throw new MapTilesError(`${path} is not a readable PMTiles v3 file: ${(error as Error).message}`);
  }
}
