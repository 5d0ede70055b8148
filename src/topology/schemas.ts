/**
 * `/api/v1/nodes/{node_id}/traceroute`, `/api/v1/traceroutes` and `/api/v1/links` in zod (the
 * web app imports the types from here).
 */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam, type PageLimits } from '../http/schemas.js';
import { NODE_ID_HINT, NODE_ID_PATTERN } from '../messaging/schemas.js';

export const TRACEROUTE_PAGE: PageLimits = { default: 50, max: 500 };
export const TRACEROUTE_STATUSES = ['pending', 'answered', 'no_answer', 'refused'] as const;
export type TracerouteStatus = (typeof TRACEROUTE_STATUSES)[number];
/** `hub`: the hub asked; `heard`: another node's traceroute, heard over the radio or MQTT. */
export const TRACEROUTE_SOURCES = ['hub', 'heard'] as const;
export const LINK_SOURCES = ['neighborinfo', 'traceroute'] as const;

/** UUID version 7 (the message ids' form): sorts by creation. */
export const TRACEROUTE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const nodeId = z.string().regex(NODE_ID_PATTERN, NODE_ID_HINT);

export const routeHopSchema = z.object({
  node_id: z.string(),
  snr: z
    .number()
    .optional()
    .meta({ description: 'dB at which this node heard the one before it; absent when unknown.' }),
});

export const tracerouteSchema = z.object({
  id: z.string(),
  node_id: z.string().meta({ description: 'The node traced (the target).' }),
  origin_id: z
    .string()
    .meta({ description: 'The node that asked: the hub’s radio, or another node for `heard`.' }),
  status: z.enum(TRACEROUTE_STATUSES),
  source: z.enum(TRACEROUTE_SOURCES),
  requested_at: z.iso.datetime(),
  answered_at: z.iso.datetime().optional(),
  route: z.array(routeHopSchema).meta({ description: 'Hops out, ending at the target.' }),
  route_back: z.array(routeHopSchema).meta({ description: 'Hops back, ending at the origin.' }),
  error: z
    .string()
    .optional()
    .meta({ description: 'Why there is no route: the routing error or the timeout.' }),
});

export const tracerouteListSchema = z.object({ data: z.array(tracerouteSchema) });

export const tracerouteRequestSchema = z
  .object({
    channel: z.int().min(0).max(7).optional().meta({ description: 'Channel index to send on (default 0).' }),
  })
  .strict();

export const nodeIdPathSchema = z.object({ node_id: nodeId });
export const tracerouteIdPathSchema = z.object({
  id: z.string().regex(TRACEROUTE_ID_PATTERN, 'must be a traceroute id (a UUID, lower case)'),
});

export const tracerouteQuerySchema = z.object({
  node_id: nodeId.optional().meta({ description: 'Only traceroutes to this node.' }),
  limit: limitParam(TRACEROUTE_PAGE).optional(),
  cursor: z.string().optional().meta({ description: CURSOR_DESCRIPTION }),
});

export const linkSchema = z.object({
  from: z.string().meta({ description: 'The node that heard `to`.' }),
  to: z.string(),
  snr: z.number().optional().meta({ description: 'dB of `to` as `from` heard it.' }),
  last_heard: z.iso.datetime(),
  source: z.enum(LINK_SOURCES),
});

export const linkListSchema = z.object({ data: z.array(linkSchema) });

export const linkQuerySchema = z.object({
  node_id: nodeId.optional().meta({ description: 'Only links from or to this node.' }),
  since: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'Only links heard at or after this time.' }),
});

export type RouteHopJson = z.output<typeof routeHopSchema>;
export type TracerouteJson = z.output<typeof tracerouteSchema>;
export type LinkJson = z.output<typeof linkSchema>;
