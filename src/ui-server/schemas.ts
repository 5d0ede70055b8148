/**
 * `/api/v1/map` in zod: the TileJSON 3.0.0 document the web map reads, and the tile address.
 * Plain zod: the web UI takes its types from here.
 */
import { z } from 'zod';

export const tileJsonSchema = z
  .object({
    tilejson: z.literal('3.0.0'),
    tiles: z.array(z.string()).meta({
      description: 'URL templates with {z}/{x}/{y}: online tiles, or this hub’s own (/api/v1/map/tiles/…).',
    }),
    scheme: z.literal('xyz'),
    minzoom: z.int().min(0),
    maxzoom: z.int().min(0),
    attribution: z.string().meta({ description: 'Plain text.' }),
    bounds: z.tuple([z.number(), z.number(), z.number(), z.number()]).optional(),
    center: z.tuple([z.number(), z.number(), z.number()]).optional(),
    name: z.string().optional(),
  })
  .meta({ description: 'TileJSON 3.0.0 (https://github.com/mapbox/tilejson-spec).' });

export type TileJson = z.output<typeof tileJsonSchema>;

const coordinate = z.string().regex(/^\d{1,10}$/);

export const tilePathSchema = z.object({
  z: coordinate,
  x: coordinate,
  y: z
    .string()
    .regex(/^\d{1,10}(\.([Pp][Nn][Gg]|[Jj][Pp][Ee]?[Gg]|[Ww][Ee][Bb][Pp]))?$/)
    .meta({ description: 'An image extension is allowed: 12.png.' }),
});
