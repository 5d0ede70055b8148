/**
 * `/api/v1/packets` in zod: the list's query and the packet row it answers. Plain zod: the web UI
 * takes its types from here.
 */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam } from '../http/schemas.js';
import { dateTimeParam } from '../weather/schemas.js';

export const PACKET_PAGE_LIMITS = { default: 100, max: 10_000 };

const nodeParam = z
  .string()
  .regex(/^![0-9a-fA-F]{8}$/, 'must be a node id like !a1b2c3d4')
  .transform((id) => id.toLowerCase());

/** An optional query parameter and what it does. */
function param<T extends z.ZodType>(schema: T, description: string) {
  return schema.optional().meta({ description });
}

/** Unknown parameters are ignored (stripped), as a browser's extra parameters should be. */
export const packetQuerySchema = z.object({
  from: param(nodeParam, 'Only packets from this node (`!xxxxxxxx`).'),
  to: param(nodeParam, 'Only packets to this node (`!ffffffff`: broadcasts).'),
  node: param(nodeParam, 'Only packets from or to this node.'),
  port: param(
    z.string().regex(/^[A-Za-z0-9_]{1,40}$/, 'must be a port name like TEXT_MESSAGE_APP or a number'),
    'A port name (`TEXT_MESSAGE_APP`, any case) or its number (`38`).',
  ),
  via: param(
    z.enum(['radio', 'mqtt'], { error: 'must be radio or mqtt' }),
    'How the hub heard it: its own radio, or an MQTT gateway.',
  ),
  gateway: param(
    z.string().regex(/^[\x21-\x7e]{1,64}$/, 'must be a gateway id like !a1b2c3d4'),
    'Only packets an MQTT gateway brought (`!xxxxxxxx`).',
  ),
  duplicate: param(
    z.enum(['true', 'false'], { error: 'must be true or false' }),
    'true: only repeat sightings; false: only first ones.',
  ),
  since: param(dateTimeParam, 'Heard at or after (ISO 8601).'),
  until: param(dateTimeParam, 'Heard before (ISO 8601).'),
  format: param(
    z.enum(['json', 'csv'], { error: 'must be json or csv' }),
    'csv: the page as CSV (as `Accept: text/csv`).',
  ),
  limit: limitParam(PACKET_PAGE_LIMITS).optional(),
  cursor: param(z.string(), CURSOR_DESCRIPTION),
});

/** One sighting of a packet as the log holds it; never its contents. Unknown facts are left out. */
export const packetSchema = z.object({
  id: z.int().meta({ description: 'The log row: grows with every sighting.' }),
  time: z.iso.datetime().meta({ description: 'When the hub heard it (its own clock), ISO 8601 UTC.' }),
  from: z.string(),
  to: z.string().meta({ description: '`!ffffffff` is a broadcast.' }),
  packet_id: z.int(),
  port: z.string().meta({
    description: 'The port name, or its number as text when the protobufs do not know it (`"38"`).',
  }),
  portnum: z.int(),
  channel: z.int().meta({ description: 'The channel index on the radio; the channel hash on MQTT.' }),
  hops_taken: z
    .int()
    .optional()
    .meta({ description: 'hop_start − hop_limit, when the sender said hop_start.' }),
  hops_left: z.int(),
  hop_start: z.int().optional(),
  snr: z.number().optional(),
  rssi: z.int().optional(),
  via: z.enum(['radio', 'mqtt']),
  gateway: z.string().optional().meta({ description: 'The MQTT gateway that brought it.' }),
  payload_bytes: z.int(),
  duplicate: z.boolean().meta({ description: 'A repeat sighting of a packet already heard.' }),
  want_ack: z.boolean(),
  want_response: z.boolean(),
  request_id: z.int().meta({ description: 'The packet this one answers (0: none).' }),
  reply_id: z.int().meta({ description: 'The text this one replies to (0: none).' }),
  via_mqtt: z.boolean().meta({ description: 'The packet crossed an MQTT bridge on its way.' }),
});

export type PacketJson = z.output<typeof packetSchema>;

export const packetListSchema = z.object({ data: z.array(packetSchema) });

/** The columns of the CSV export, in order (the JSON names). */
export const PACKET_CSV_COLUMNS = Object.keys(packetSchema.shape) as Array<keyof PacketJson>;
