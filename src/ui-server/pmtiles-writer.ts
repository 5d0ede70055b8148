/**
 * Writes PMTiles v3 archives (the `pmtiles` library only reads them): the 127-byte header, the
 * root directory within the first 16 KiB, leaf directories when the root would not fit, JSON
 * metadata, then the tile data as the caller laid it out. Directories are varint-encoded
 * (count, delta tile ids, run lengths, lengths, offsets with 0 for "right after the previous")
 * and gzip-compressed, as the spec (protomaps/PMTiles spec/v3) describes.
 */
import { gzipSync } from 'node:zlib';
import { Compression, type Entry, TileType } from 'pmtiles';

export { Compression, type Entry, TileType };

const HEADER_BYTES = 127;
/** The header and root directory must fit in the first 16 KiB (readers fetch that in one go). */
const ROOT_LIMIT = 16_384 - HEADER_BYTES;

export interface PmtilesLayout {
  tileType: TileType;
  tileCompression?: Compression;
  /** gzip directories and metadata (default true); false writes them uncompressed. */
  gzip?: boolean;
  minZoom: number;
  maxZoom: number;
  /** West, south, east, north in degrees. */
  bounds: [number, number, number, number];
  /** Longitude, latitude, zoom; default the middle of `bounds` at `maxZoom`. */
  center?: [number, number, number];
  metadata?: Record<string, unknown>;
}

function varint(value: number, out: number[]): void {
  let n = value;
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

/** One directory, serialized (not yet compressed). */
export function serializeDirectory(entries: readonly Entry[]): Buffer {
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

/** The root directory and the leaf directories' bytes, the root small enough to sit after the header. */
function directories(
  entries: readonly Entry[],
  pack: (b: Buffer) => Buffer,
): { root: Buffer; leaves: Buffer } {
  const root = pack(serializeDirectory(entries));
  if (root.length <= ROOT_LIMIT) return { root, leaves: Buffer.alloc(0) };
  for (let leafSize = 4096; ; leafSize *= 2) {
    const rootEntries: Entry[] = [];
    const leaves: Buffer[] = [];
    let offset = 0;
    for (let i = 0; i < entries.length; i += leafSize) {
      const leaf = pack(serializeDirectory(entries.slice(i, i + leafSize)));
      rootEntries.push({ tileId: entries[i]!.tileId, offset, length: leaf.length, runLength: 0 });
      leaves.push(leaf);
      offset += leaf.length;
    }
    const packedRoot = pack(serializeDirectory(rootEntries));
    if (packedRoot.length <= ROOT_LIMIT) return { root: packedRoot, leaves: Buffer.concat(leaves) };
  }
}

/**
 * Everything of an archive before its tile data: header, root directory, metadata and leaf
 * directories. `entries` are sorted by tile id; their offsets are into the tile data, which is
 * `dataLength` bytes and follows these bytes in the file.
 */
export function pmtilesPrefix(entries: readonly Entry[], dataLength: number, layout: PmtilesLayout): Buffer {
  const gzip = layout.gzip ?? true;
  const pack = (b: Buffer) => (gzip ? gzipSync(b) : b);
  const { root, leaves } = directories(entries, pack);
  const metadata = pack(Buffer.from(JSON.stringify(layout.metadata ?? {})));
  const [west, south, east, north] = layout.bounds;
  const [centerLon, centerLat, centerZoom] = layout.center ?? [
    (west + east) / 2,
    (south + north) / 2,
    layout.maxZoom,
  ];
  const rootOffset = HEADER_BYTES;
  const metadataOffset = rootOffset + root.length;
  const leavesOffset = metadataOffset + metadata.length;
  const dataOffset = leavesOffset + leaves.length;
  const header = Buffer.alloc(HEADER_BYTES);
  header.write('PMTiles', 0, 'ascii');
  header[7] = 3;
  const u64 = (at: number, v: number) => header.writeBigUInt64LE(BigInt(v), at);
  u64(8, rootOffset);
  u64(16, root.length);
  u64(24, metadataOffset);
  u64(32, metadata.length);
  u64(40, leavesOffset);
  u64(48, leaves.length);
  u64(56, dataOffset);
  u64(64, dataLength);
  u64(
    72,
    entries.reduce((n, e) => n + e.runLength, 0),
  );
  u64(80, entries.length);
  u64(88, new Set(entries.map((e) => e.offset)).size);
  header[96] = 1; // clustered: tile data in tile id order
  header[97] = gzip ? Compression.Gzip : Compression.None;
  header[98] = layout.tileCompression ?? Compression.None;
  header[99] = layout.tileType;
  header[100] = layout.minZoom;
  header[101] = layout.maxZoom;
  const e7 = (at: number, degrees: number) => header.writeInt32LE(Math.round(degrees * 1e7), at);
  e7(102, west);
  e7(106, south);
  e7(110, east);
  e7(114, north);
  header[118] = centerZoom;
  e7(119, centerLon);
  e7(123, centerLat);
  return Buffer.concat([header, root, metadata, leaves]);
}

/** Directory entries for tiles whose data lies back to back at `offsets`; a repeated offset extends a run. */
export function entriesFor(
  tiles: ReadonlyArray<{ tileId: number; offset: number; length: number }>,
): Entry[] {
  const sorted = [...tiles].sort((a, b) => a.tileId - b.tileId);
  const entries: Entry[] = [];
  for (const t of sorted) {
    const last = entries[entries.length - 1];
    if (last && last.offset === t.offset && last.tileId + last.runLength === t.tileId) {
      last.runLength++;
      continue;
    }
    entries.push({ tileId: t.tileId, offset: t.offset, length: t.length, runLength: 1 });
  }
  return entries;
}
