/** Settings of the web UI. */
import { z } from 'zod';
import { parsedBy } from '../config/fields.js';
import { DEFAULT_MAP_TILES, parseMapTiles } from './map-tiles-setting.js';

export const webUiSettings = z.object({
  /** Web map background: an online tile URL template, a local raster .pmtiles/.mbtiles file the hub serves, or off (the built-in world layer only). */
  MAP_TILES: z.string().default(DEFAULT_MAP_TILES).transform(parsedBy(parseMapTiles)),
  /** Folder of the built web app (default: dist/web of this installation). */
  WEB_ROOT: z.string().min(1).optional(),
});
