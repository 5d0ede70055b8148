/**
 * The hub's PMTiles v3 writer (what `meshhub tiles extract` writes), read back by the `pmtiles`
 * library through the hub's own tile archive: a directory too big for the first 16 KiB is split
 * into leaf directories, and every tile is still found at its address.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zxyToTileId } from 'pmtiles';
import { afterAll, describe, expect, it } from 'vitest';
import { openPmtiles } from '../../src/ui-server/pmtiles-archive.js';
import { entriesFor, pmtilesPrefix, TileType } from '../../src/ui-server/pmtiles-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'meshhub-pmtiles-writer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the PMTiles writer', () => {
  it.each([true, false])(
    'puts a large directory into leaves (gzip %s) and every tile stays readable',
    async (gzip) => {
      // Every tile of zoom 0 to 7: 21 845 entries, far more than a 16 KiB root holds uncompressed.
      const tiles: Array<{ z: number; x: number; y: number; tileId: number; data: Buffer }> = [];
      for (let z = 0; z <= 7; z++) {
        for (let x = 0; x < 2 ** z; x++) {
          for (let y = 0; y < 2 ** z; y++) {
            const data = Buffer.alloc(4);
            data.writeUInt32BE(tiles.length);
            tiles.push({ z, x, y, tileId: zxyToTileId(z, x, y), data });
          }
        }
      }
      tiles.sort((a, b) => a.tileId - b.tileId);
      const placed = tiles.map((t, i) => ({ tileId: t.tileId, offset: i * 4, length: 4 }));
      const prefix = pmtilesPrefix(entriesFor(placed), tiles.length * 4, {
        tileType: TileType.Png,
        gzip,
        minZoom: 0,
        maxZoom: 7,
        bounds: [-180, -85, 180, 85],
        metadata: { name: 'grid' },
      });
      const path = join(dir, `grid-${gzip}.pmtiles`);
      writeFileSync(path, Buffer.concat([prefix, ...tiles.map((t) => t.data)]));
      if (!gzip) expect(Number(prefix.readBigUInt64LE(48))).toBeGreaterThan(0); // leaf directories' length
      expect(Number(prefix.readBigUInt64LE(16))).toBeLessThanOrEqual(16_384 - 127); // root length

      const archive = await openPmtiles(path);
      try {
        expect(archive.info).toMatchObject({ minZoom: 0, maxZoom: 7, name: 'grid' });
        for (const t of tiles.filter((_, i) => i % 97 === 0 || i === tiles.length - 1)) {
          const found = await archive.tile(t.z, t.x, t.y);
          expect(found && Buffer.from(found).equals(t.data), `${t.z}/${t.x}/${t.y}`).toBe(true);
        }
      } finally {
        await archive.close();
      }
    },
  );
});
