/** Settings of the web UI. */
import { z } from 'zod';
import { DEFAULT_MAP_TILES, parseMapTiles } from './map-tiles-setting.js';

export const webUiSettings = z.object({
  /** Web map background: an online tile URL template, or a local raster .pmtiles/.mbtiles file the hub serves. */
  MAP_TILES: z
    .string()
    .default(DEFAULT_MAP_TILES)
    .transform((v, ctx) => {
      const tiles = parseMapTiles(v);
      if (typeof tiles === 'string') {
        ctx.addIssue({ code: 'custom', message: tiles });
        return z.NEVER;
      }
      return tiles;
    }),
  /** Folder of the built web app (default: dist/web of this installation). */
  WEB_ROOT: z.string().min(1).optional(),
});
