/**
 * `meshhub tiles extract`: copies the raster tiles of an area, zoom 0 (or the archive's least)
 * to a chosen zoom, out of a remote PMTiles v3 archive into a local one the hub serves offline.
 * Only the byte ranges needed are fetched (the header, the directories on the way, each tile),
 * through the hub's one outbound client (src/http/guarded-fetch.ts).
 *
 * Resuming: tiles are appended to `<out>.part` in tile-id order and each one is then noted in
 * `<out>.journal` (one JSON line per tile, after a first line naming the source, area and zoom).
 * A run that stops anywhere leaves both; the same command again keeps every journaled tile,
 * cuts off what was written past the last note, and fetches only the rest. At the end the
 * archive is written to `<out>.tmp` (header, directories, metadata, then the tile data) and
 * renamed over `<out>`; the part and journal are removed.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type Header,
  PMTiles,
  type RangeResponse,
  type Source,
  TileType,
  tileIdToZxy,
  zxyToTileId,
} from 'pmtiles';
import { refusedAddressOf } from '../http/guarded-fetch.js';
import { UsageError } from '../kernel/cli-args.js';
import { decompress } from './pmtiles-archive.js';
import { entriesFor, pmtilesPrefix } from './pmtiles-writer.js';

export type Bbox = [west: number, south: number, east: number, north: number];

/** The most tiles one extract fetches: zoom 15 over a town is a few thousand, a region at 14 tens of thousands. */
export const MAX_TILES = 100_000;
/** Tiles fetched at once (one range request each). */
const CONCURRENCY = 8;
const MAX_LAT = 85.0511287798;

/** One plain line for stderr; exit 1 (the source or the disk failed) unless it says 2 (the command line). */
export class TilesExtractError extends UsageError {
  constructor(message: string, exitCode = 1) {
    super(message, exitCode);
  }
}

export interface Progress {
  done: number;
  total: number;
  /** Tile bytes in the part file so far. */
  bytes: number;
  /** Tiles already there from an interrupted run. */
  resumed: number;
}

export type Fetcher = (input: string, init?: RequestInit) => Promise<Response>;

export interface ExtractOptions {
  source: string;
  bbox: Bbox;
  maxZoom: number;
  out: string;
  fetch: Fetcher;
  onProgress?: (progress: Progress) => void;
  maxTiles?: number;
}

export interface ExtractResult {
  path: string;
  tiles: number;
  bytes: number;
  minZoom: number;
  maxZoom: number;
  resumed: number;
}

const RASTER = new Set([TileType.Png, TileType.Jpeg, TileType.Webp]);

/** The tile column and row range of `bbox` at zoom `z` (XYZ, y from the north). */
export function tileRange(bbox: Bbox, z: number): { x0: number; x1: number; y0: number; y1: number } {
  const n = 2 ** z;
  const clamp = (v: number) => Math.min(n - 1, Math.max(0, v));
  const x = (lon: number) => clamp(Math.floor(((lon + 180) / 360) * n));
  const y = (lat: number) => {
    const rad = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
    return clamp(Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n));
  };
  const [west, south, east, north] = bbox;
  return { x0: x(west), x1: x(east), y0: y(north), y1: y(south) };
}

/** How many tiles `bbox` covers from `minZoom` to `maxZoom`. */
export function tileCount(bbox: Bbox, minZoom: number, maxZoom: number): number {
  let count = 0;
  for (let z = minZoom; z <= maxZoom; z++) {
    const r = tileRange(bbox, z);
    count += (r.x1 - r.x0 + 1) * (r.y1 - r.y0 + 1);
  }
  return count;
}

function tileIds(bbox: Bbox, minZoom: number, maxZoom: number): number[] {
  const ids: number[] = [];
  for (let z = minZoom; z <= maxZoom; z++) {
    const r = tileRange(bbox, z);
    for (let x = r.x0; x <= r.x1; x++) for (let y = r.y0; y <= r.y1; y++) ids.push(zxyToTileId(z, x, y));
  }
  return ids.sort((a, b) => a - b);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** A `pmtiles` Source reading byte ranges over HTTP through `fetch`. */
function rangeSource(url: string, fetch: Fetcher): Source {
  return {
    getKey: () => url,
    async getBytes(
      offset: number,
      length: number,
      signal?: AbortSignal,
      etag?: string,
    ): Promise<RangeResponse> {
      const headers: Record<string, string> = { range: `bytes=${offset}-${offset + length - 1}` };
      if (etag) headers['if-match'] = etag;
      let response: Response;
      try {
        response = await fetch(url, { headers, ...(signal ? { signal } : {}) });
      } catch (error) {
        const refused = refusedAddressOf(error);
        if (refused) throw new TilesExtractError(`${url}: ${refused.message}`);
        const cause = (error as { cause?: { message?: string; code?: string } }).cause;
        throw new TilesExtractError(
          `cannot read ${hostOf(url)}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
        );
      }
      if (response.status === 416 && offset > 0) {
        await response.body?.cancel();
        throw new TilesExtractError(
          `${url} is shorter than its directories say (HTTP 416): is it a PMTiles file?`,
        );
      }
      if (response.status === 412) {
        await response.body?.cancel();
        throw new TilesExtractError(`${url} changed while it was being read; run the command again`);
      }
      if (response.status !== 206 && response.status !== 200) {
        await response.body?.cancel();
        throw new TilesExtractError(`${url} answered HTTP ${response.status}`);
      }
      const body = await response.arrayBuffer();
      if (response.status === 200 && (offset > 0 || body.byteLength > length)) {
        // A whole file for a range: fine for a tiny file at offset 0, never for a real archive.
        throw new TilesExtractError(
          `${hostOf(url)} does not answer byte ranges (HTTP 200 to a Range request); serve the file from a server that does`,
        );
      }
      const newEtag = response.headers.get('etag') ?? undefined;
      return { data: body.slice(0, length), ...(newEtag ? { etag: newEtag } : {}) };
    },
  };
}

interface JournalHead {
  source: string;
  bbox: Bbox;
  maxZoom: number;
  etag?: string;
}

type Noted = [tileId: number, offset: number, length: number];

async function readJournal(path: string): Promise<{ head: JournalHead; noted: Noted[] } | undefined> {
  if (!existsSync(path)) return undefined;
  const lines = (await readFile(path, 'utf8')).split('\n');
  let head: JournalHead;
  try {
    head = JSON.parse(lines[0] ?? '') as JournalHead;
  } catch {
    return undefined;
  }
  const noted: Noted[] = [];
  for (const line of lines.slice(1)) {
    if (!line.endsWith(']')) continue; // the torn last line of a run that stopped mid-write
    try {
      const entry = JSON.parse(line) as Noted;
      if (Array.isArray(entry) && entry.length === 3) noted.push(entry);
    } catch {
      // the same
    }
  }
  return { head, noted };
}

const sameArea = (a: JournalHead, b: JournalHead) =>
  a.source === b.source && a.maxZoom === b.maxZoom && a.bbox.every((v, i) => v === b.bbox[i]);

function rasterCheck(url: string, header: Header): void {
  if (RASTER.has(header.tileType)) return;
  const what =
    header.tileType === TileType.Mvt || header.tileType === TileType.Mlt
      ? 'vector tiles'
      : 'tiles of an unknown type';
  throw new TilesExtractError(
    `${url} holds ${what}; the web map draws raster tiles (png, jpg or webp): choose a raster archive`,
  );
}

export async function extractTiles(options: ExtractOptions): Promise<ExtractResult> {
  const { source: url, bbox, out } = options;
  const partPath = `${out}.part`;
  const journalPath = `${out}.journal`;
  const archive = new PMTiles(rangeSource(url, options.fetch), undefined, decompress);
  let header: Header;
  try {
    header = await archive.getHeader();
  } catch (error) {
    if (error instanceof TilesExtractError) throw error;
    throw new TilesExtractError(`${url} is not a readable PMTiles v3 archive: ${(error as Error).message}`);
  }
  rasterCheck(url, header);
  const minZoom = header.minZoom;
  const maxZoom = Math.min(options.maxZoom, header.maxZoom);
  if (minZoom > maxZoom) {
    throw new TilesExtractError(
      `${url} has no zoom up to ${options.maxZoom}: its tiles start at zoom ${minZoom}`,
      2,
    );
  }
  const total = tileCount(bbox, minZoom, maxZoom);
  const limit = options.maxTiles ?? MAX_TILES;
  if (total > limit) {
    throw new TilesExtractError(
      `that area is ${total} tiles from zoom ${minZoom} to ${maxZoom}, more than the ${limit} one extract fetches; choose a lower --max-zoom or a smaller --bbox`,
      2,
    );
  }

  const head: JournalHead = {
    source: url,
    bbox,
    maxZoom: options.maxZoom,
    ...(header.etag ? { etag: header.etag } : {}),
  };
  const previous = await readJournal(journalPath);
  if (previous && !sameArea(previous.head, head)) {
    throw new TilesExtractError(
      `${partPath} is an unfinished extract of another source, area or zoom; finish it with its own command, or delete ${partPath} and ${journalPath}`,
    );
  }
  if (previous?.head.etag && head.etag && previous.head.etag !== head.etag) {
    throw new TilesExtractError(
      `${url} changed since the interrupted run (another ETag); delete ${partPath} and ${journalPath} and run again`,
    );
  }
  const noted = new Map<number, Noted>();
  for (const entry of previous?.noted ?? []) noted.set(entry[0], entry);
  let partEnd = 0;
  for (const [, offset, length] of noted.values()) partEnd = Math.max(partEnd, offset + length);
  const partSize = existsSync(partPath) ? statSync(partPath).size : -1;
  const fresh = !previous || partSize < partEnd;
  if (fresh) {
    // Nothing to resume (or the part file lost what its journal promises): start over.
    noted.clear();
    partEnd = 0;
    await mkdir(dirname(out), { recursive: true });
    await rm(partPath, { force: true });
    await writeFile(journalPath, `${JSON.stringify(head)}\n`);
  }
  const part = await open(partPath, existsSync(partPath) ? 'r+' : 'w+');
  const journal = await open(journalPath, 'a');
  // Identical tiles (open sea, empty land) are stored once.
  const byHash = new Map<string, [number, number]>();
  const hash = (data: Uint8Array) => createHash('sha256').update(data).digest('base64');
  try {
    // Bytes past the last journaled tile were written by a run that stopped before noting them.
    await part.truncate(partEnd);
    for (const [, offset, length] of noted.values()) {
      if (length === 0 || byHash.size > 50_000) continue;
      const buffer = Buffer.alloc(length);
      await part.read(buffer, 0, length, offset);
      byHash.set(hash(buffer), [offset, length]);
    }
    const resumed = noted.size;
    const wanted = tileIds(bbox, minZoom, maxZoom).filter((id) => !noted.has(id));
    const progress = () => options.onProgress?.({ done: noted.size, total, bytes: partEnd, resumed });
    progress();
    const fetchInto = async (): Promise<void> => {
      for (let i = 0; i < wanted.length; i += CONCURRENCY) {
        const batch = wanted.slice(i, i + CONCURRENCY);
        const fetched = await Promise.all(
          batch.map(async (id) => {
            const [z, x, y] = tileIdToZxy(id);
            return { id, found: await archive.getZxy(z, x, y) };
          }),
        );
        // Written in tile-id order, so the part file is the finished archive's tile data as it is.
        for (const { id, found } of fetched) {
          let entry: Noted = [id, partEnd, 0];
          if (found && found.data.byteLength > 0) {
            const data = new Uint8Array(found.data);
            const key = hash(data);
            const same = byHash.get(key);
            if (same) entry = [id, same[0], same[1]];
            else {
              await part.write(data, 0, data.length, partEnd);
              entry = [id, partEnd, data.length];
              byHash.set(key, [partEnd, data.length]);
              partEnd += data.length;
            }
          }
          await journal.appendFile(`${JSON.stringify(entry)}\n`);
          noted.set(id, entry);
        }
        progress();
      }
    };
    try {
      await fetchInto();
    } catch (error) {
      if (!(error instanceof TilesExtractError) || error.exitCode !== 1) throw error;
      throw new TilesExtractError(
        `${error.message}; ${noted.size} of ${total} tiles are kept: run the same command again to resume`,
      );
    }
    await part.sync();
  } finally {
    await journal.close();
    await part.close();
  }

  const stored = [...noted.values()].filter(([, , length]) => length > 0);
  if (stored.length === 0) {
    await rm(partPath, { force: true });
    await rm(journalPath, { force: true });
    throw new TilesExtractError(`${url} holds no tiles in that area from zoom ${minZoom} to ${maxZoom}`);
  }
  const zooms = stored.map(([id]) => tileIdToZxy(id)[0]);
  const metadata = await remoteMetadata(archive);
  const prefix = pmtilesPrefix(
    entriesFor(stored.map(([tileId, offset, length]) => ({ tileId, offset, length }))),
    partEnd,
    {
      tileType: header.tileType,
      tileCompression: header.tileCompression,
      minZoom: Math.min(...zooms),
      maxZoom: Math.max(...zooms),
      bounds: bbox,
      metadata: {
        ...metadata,
        meshhub_extract: { source: url, bbox, max_zoom: options.maxZoom },
      },
    },
  );
  const tmp = `${out}.tmp`;
  const file = await open(tmp, 'w');
  try {
    await file.write(prefix);
    const source = await open(partPath, 'r');
    try {
      const chunk = Buffer.alloc(1 << 20);
      for (let at = 0; at < partEnd; ) {
        const { bytesRead } = await source.read(chunk, 0, Math.min(chunk.length, partEnd - at), at);
        if (bytesRead === 0)
          throw new TilesExtractError(`${partPath} ended early; delete it and its journal and run again`);
        await file.write(chunk, 0, bytesRead);
        at += bytesRead;
      }
    } finally {
      await source.close();
    }
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, out);
  await rm(partPath, { force: true });
  await rm(journalPath, { force: true });
  return {
    path: out,
    tiles: stored.length,
    bytes: prefix.length + partEnd,
    minZoom: Math.min(...zooms),
    maxZoom: Math.max(...zooms),
    resumed: fresh ? 0 : (previous?.noted.length ?? 0),
  };
}

/** The remote archive's name, attribution and description (what the hub shows), if it has them. */
async function remoteMetadata(archive: PMTiles): Promise<Record<string, unknown>> {
  try {
    const all = (await archive.getMetadata()) as Record<string, unknown> | null;
    if (!all || typeof all !== 'object') return {};
    const kept: Record<string, unknown> = {};
    for (const key of ['name', 'attribution', 'description', 'version']) {
      if (typeof all[key] === 'string') kept[key] = all[key];
    }
    return kept;
  } catch {
    return {};
  }
}
