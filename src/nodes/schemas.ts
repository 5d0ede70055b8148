/**
 * `/api/v1/nodes` in zod. The spec leaves the node record "not shown"; ours carries what
 * NodeInfo, Position and DeviceMetrics tell, in the API's snake_case, unknown fields omitted.
 */
import { z } from 'zod';

export const nodeSchema = z.object({
  node_id: z.string().meta({ description: '"!" and 8 lower-case hex digits of the node number.' }),
  short_name: z.string().optional(),
  long_name: z.string().optional(),
  hw_model: z.string().optional(),
  latitude: z.number().optional(),
  longitude: z.number().optional(),
  altitude: z.number().optional().meta({ description: 'Metres.' }),
  last_heard: z.iso.datetime().optional(),
  battery_level: z.number().optional().meta({ description: 'Percent; 101 means powered (Meshtastic).' }),
  snr: z.number().optional().meta({ description: 'dB, of the last packet heard.' }),
  previous_ids: z.array(z.string()).optional().meta({
    description:
      'The ids the node had before firmware 2.8 renumbered it (same public key), oldest first; their history is under node_id now.',
  }),
});

/** A node id in a path: "!" and 8 lower-case hex digits. */
export const NODE_ID_PATTERN = /^![0-9a-f]{8}$/;

export const nodePathSchema = z.object({
  node_id: z
    .string()
    .regex(NODE_ID_PATTERN, 'must be a node id: "!" and 8 lower-case hex digits, e.g. !a1b2c3d4')
    .meta({ description: 'The node id; an old id of a renumbered node answers the node under its id now.' }),
});

export const nodeListSchema = z.object({ data: z.array(nodeSchema) });

export type NodeJson = z.output<typeof nodeSchema>;
