/**
 * `/api/v1/packets`: the packet log, newest first, with filters, the shared cursor
 * (src/http/paging.ts) and CSV; `/api/v1/packets/stream`, its live tail (Server-Sent Events).
 *
 * Who may read: anyone who may read `GET /api/v1/nodes` (no sign-in on the hub's LAN): the log
 * tells who was heard, when and how, which the node list and the live stream already show; it
 * never holds what a packet said (only its size).
 *
 * The live tail is its own stream rather than an event of `/api/v1/live`: every open dashboard
 * holds the live stream, and the packet rate on a busy MQTT feed would reach all of them; this
 * stream costs only while someone has the packet page open. Each `packet` event is one row as the
 * list answers it; a page that filters applies its filters itself.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Portnums } from '@meshtastic/protobufs';
import { Hono } from 'hono';
import { z } from 'zod';
import { nodeIdFromNum, nodeNumFromId } from '../domain/node.js';
import { HEADERS, pagedListResponses, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { cursorCodec, nextPageHeaders, readCursor } from '../http/paging.js';
import { fieldProblem, validationProblem } from '../http/problem.js';
import { LiveBroadcaster, type LiveStreamLimits, SSE_HEADERS } from '../live/live-broadcaster.js';
import { clientAddress } from '../live/live-routes.js';
import {
  PACKET_CSV_COLUMNS,
  PACKET_PAGE_LIMITS,
  type PacketJson,
  packetListSchema,
  packetQuerySchema,
} from './schemas.js';
import {
  PACKET_FLAGS,
  type PacketFilter,
  type PacketLogStore,
  type PacketRow,
  type PacketSighting,
  sightingRow,
} from './store.js';

/** The highest port number (PortNum.MAX). */
const MAX_PORTNUM = Portnums.PortNum.MAX;

/** The port's name, or its number as text when the protobufs do not know it. */
export function portName(portnum: number): string {
  return Portnums.PortNum[portnum] ?? String(portnum);
}

/** A port parameter (a name in any case, or a number) as its number; a 400 naming `port` when neither. */
export function portOf(value: string): number {
  if (/^[0-9]+$/.test(value)) {
    const n = Number(value);
    if (n <= MAX_PORTNUM) return n;
  } else {
    const n = (Portnums.PortNum as unknown as Record<string, number | undefined>)[value.toUpperCase()];
    if (typeof n === 'number') return n;
  }
  throw fieldProblem(
    'port',
    `must be a port name like TEXT_MESSAGE_APP or a number from 0 to ${MAX_PORTNUM}`,
  );
}

export function packetJson(row: PacketRow): PacketJson {
  const out: PacketJson = {
    id: row.id,
    time: new Date(row.ts).toISOString(),
    from: nodeIdFromNum(row.from_num),
    to: nodeIdFromNum(row.to_num),
    packet_id: row.packet_id,
    port: portName(row.portnum),
    portnum: row.portnum,
    channel: row.channel,
    hops_left: row.hop_limit,
    via: row.flags & PACKET_FLAGS.mqtt ? 'mqtt' : 'radio',
    payload_bytes: row.payload_bytes,
    duplicate: (row.flags & PACKET_FLAGS.duplicate) !== 0,
    want_ack: (row.flags & PACKET_FLAGS.wantAck) !== 0,
    want_response: (row.flags & PACKET_FLAGS.wantResponse) !== 0,
    request_id: row.request_id,
    reply_id: row.reply_id,
    via_mqtt: (row.flags & PACKET_FLAGS.viaMqtt) !== 0,
  };
  if (row.hop_start !== null) {
    out.hop_start = row.hop_start;
    if (row.hop_start >= row.hop_limit) out.hops_taken = row.hop_start - row.hop_limit;
  }
  if (row.snr !== null) out.snr = row.snr;
  if (row.rssi !== null) out.rssi = row.rssi;
  if (row.gateway !== null) out.gateway = row.gateway;
  return out;
}

/** One CSV cell (RFC 4180); a text cell a spreadsheet would run as a formula gets a leading apostrophe. */
function csvCell(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function packetsCsv(rows: readonly PacketJson[]): string {
  const lines = [PACKET_CSV_COLUMNS.join(',')];
  for (const row of rows) lines.push(PACKET_CSV_COLUMNS.map((k) => csvCell(row[k])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

const packetCursor = cursorCodec(z.object({ b: z.int().min(1) }));

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const packetsOperations = describeRoutes('/api/v1/packets', [
  {
    method: 'get',
    path: '/',
    operationId: 'listPackets',
    tag: 'nodes',
    summary: 'The packet log: every sighting of a decoded packet, newest first (never its contents)',
    description:
      'CSV with `Accept: text/csv` or `format=csv` (the same columns as the JSON fields). Filters combine with AND; an empty log, or a log switched off (PACKET_LOG=false), is an empty list.',
    params: { query: packetQuerySchema },
    responses: {
      ...pagedListResponses(packetListSchema, 'One page of packets.'),
      200: {
        description: 'One page of packets.',
        content: { 'application/json': packetListSchema, 'text/csv': undefined },
        headers: { Link: HEADERS.link },
      },
    },
  },
  {
    method: 'get',
    path: '/stream',
    operationId: 'streamPackets',
    tag: 'nodes',
    summary: 'The packet log live (Server-Sent Events): a `packet` event per row written',
    description: 'Each `packet` event’s data is one packet as the list answers it; `ping` every 15 s.',
    responses: {
      200: { description: 'The event stream.', contentType: 'text/event-stream' },
      429: problem('Too many streams from this address.', { 'Retry-After': HEADERS.retryAfter }),
      503: problem('Too many streams are open.', { 'Retry-After': HEADERS.retryAfter }),
    },
  },
]);

export interface PacketRoutes {
  app: Hono;
  /** Sends the sightings just written (the first numbered `firstId`) to every open stream. */
  broadcast(sightings: readonly PacketSighting[], firstId: number): void;
  /** Ends every open stream (the hub stops). */
  closeAll(): void;
}

function wantsCsv(format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept);
}

export function packetsRoutes(
  store: () => PacketLogStore | undefined,
  limits?: Partial<LiveStreamLimits>,
): PacketRoutes {
  const live = new LiveBroadcaster(limits);
  const app = new Hono();

  app.get('/', (c) => {
    const raw = c.req.query();
    const parsed = packetQuerySchema.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const q = parsed.data;
    const filter: PacketFilter = {};
    if (q.from !== undefined) filter.from = nodeNumFromId(q.from)!;
    if (q.to !== undefined) filter.to = nodeNumFromId(q.to)!;
    if (q.node !== undefined) filter.node = nodeNumFromId(q.node)!;
    if (q.port !== undefined) filter.portnum = portOf(q.port);
    if (q.via !== undefined) filter.via = q.via;
    if (q.gateway !== undefined) filter.gateway = q.gateway;
    if (q.duplicate !== undefined) filter.duplicate = q.duplicate === 'true';
    if (q.since !== undefined) filter.since = q.since;
    if (q.until !== undefined) filter.until = q.until;
    if (q.since !== undefined && q.until !== undefined && !(q.until > q.since))
      throw fieldProblem('until', 'must be after since');
    if (q.cursor !== undefined)
      filter.before = readCursor(packetCursor, q.cursor, 'is not a cursor this API issued').b;
    const limit = q.limit ?? PACKET_PAGE_LIMITS.default;

    const rows = store()?.page(filter, limit + 1) ?? [];
    const more = rows.length > limit;
    const page = (more ? rows.slice(0, limit) : rows).map(packetJson);
    const params = Object.fromEntries(Object.entries(raw).filter(([k]) => k !== 'cursor'));
    const next = more ? packetCursor.encode({ b: page[page.length - 1]!.id }) : undefined;
    const link = nextPageHeaders(c.req.path, params, next);
    if (wantsCsv(q.format, c.req.header('accept'))) {
      return c.body(packetsCsv(page), 200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': 'attachment; filename="meshhub-packets.csv"',
        ...link,
      });
    }
    return c.json({ data: page }, 200, link);
  });

  app.get('/stream', (c) => {
    // @hono/node-server hands over the ServerResponse: a stuck client's socket is destroyed outright.
    const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const outgoing = env?.outgoing;
    const abort = outgoing ? () => outgoing.destroy() : undefined;
    return c.body(
      live.open(() => [], abort, clientAddress(env?.incoming)),
      200,
      SSE_HEADERS,
    );
  });

  return {
    app,
    broadcast(sightings, firstId) {
      // Serialising costs real CPU at ingest rates: only when someone is listening.
      if (live.clientCount === 0) return;
      sightings.forEach((s, i) => {
        live.broadcast('packet', JSON.stringify(packetJson(sightingRow(s, firstId + i))));
      });
    },
    closeAll: () => live.closeAll(),
  };
}
