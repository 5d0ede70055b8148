/**
 * What `GET /api/v1/live` says, in zod. Each Server-Sent Event's `data` is one line of JSON:
 * `hello` first on every connection, then `readings` (a readings list), `node` (the fields one
 * packet told about a node), `radio` (the radio status) and `ping`. Plain zod: the web UI takes
 * its types from here.
 */
import { z } from 'zod';
import { radioStatusSchema } from '../http/schemas.js';

export const helloEventSchema = z.object({
  version: z.string(),
  started_at: z.iso.datetime().meta({ description: 'When the hub started: a new value means it restarted.' }),
  radio: radioStatusSchema,
  plugins: z.array(z.string()).meta({
    description: 'The plugins this hub runs (PLUGINS), e.g. `billing`: the web UI shows their pages.',
  }),
});

export type HelloEvent = z.output<typeof helloEventSchema>;

export const LIVE_EVENTS_DESCRIPTION = [
  'Server-Sent Events, each `data` one line of JSON:',
  '- `hello`: `{ version, started_at, radio, plugins }`, first on every connection (fetch your snapshot after it);',
  '- `readings`: `{ data: [Reading] }`, the readings one commit stored;',
  '- `node`: a partial node record, only the fields one packet told (merge them);',
  '- `radio`: the radio link status, as in /health;',
  '- `ping`: every 15 s.',
].join('\n');
