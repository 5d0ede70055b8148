/**
 * `GET /api/v1/live`: the public live stream of the dashboard (no sign-in: it carries only what
 * `/api/v1/weather/latest`, `/api/v1/nodes` and `/health` already show to anyone on the LAN).
 *
 * Events (each `data` is one line of JSON):
 * - `hello`: `{ version, started_at, radio, plugins }`, first on every connection: a client
 *   fetches its snapshot after this, and a changed `started_at` tells it the hub restarted;
 *   `plugins` lets the web UI show a plugin's pages without probing its routes (a 404 probe
 *   would be a console error on every hub without it);
 * - `readings`: `{ data: [Reading…] }`, the readings one commit stored;
 * - `node`: a partial `/api/v1/nodes` item: only the fields one packet told (merge them);
 * - `radio`: the radio link status, as in `/health`;
 * - `ping`: every 15 s.
 *
 * At most 100 streams in all (503 past it) and LIVE_MAX_STREAMS_PER_ADDRESS per client address
 * (429 past it), so one address cannot take every slot.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono } from 'hono';
import type { HubBus } from '../domain/events.js';
import { HEADERS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import type { HubFacts } from '../module.js';
import { LiveBroadcaster, type LiveStreamLimits, SSE_HEADERS, sseEvent } from './live-broadcaster.js';
import { nodeEventData, radioEventData, readingsEventData } from './live-json.js';
import { LIVE_EVENTS_DESCRIPTION } from './schemas.js';

export interface LiveStreamOptions {
  bus: HubBus;
  /** Owner of the stream's bus listeners. */
  owner: string;
  hub: Pick<HubFacts, 'version' | 'startedAt' | 'plugins'>;
  limits?: Partial<LiveStreamLimits>;
  /** Receives the broadcaster (tests and /health read its client count). */
  onBroadcaster?: (broadcaster: LiveBroadcaster) => void;
}

/** The peer's address, an IPv4-mapped IPv6 address as plain IPv4; undefined in-process. */
export function clientAddress(incoming: IncomingMessage | undefined): string | undefined {
  const address = incoming?.socket?.remoteAddress;
  if (!address) return undefined;
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const liveOperations = describeRoutes('/api/v1/live', [
  {
    method: 'get',
    path: '/',
    operationId: 'streamLive',
    tag: 'operations',
    summary: 'Live updates for the dashboard (Server-Sent Events; no sign-in)',
    description: `${LIVE_EVENTS_DESCRIPTION}\nThe \`hello\` data is a LiveHello (components).`,
    responses: {
      200: { description: 'The event stream.', contentType: 'text/event-stream' },
      503: problem('Too many dashboards are open.', { 'Retry-After': HEADERS.retryAfter }),
    },
  },
]);

export function liveRoutes(options: LiveStreamOptions): Hono {
  const { bus, owner } = options;
  const live = new LiveBroadcaster(options.limits);
  options.onBroadcaster?.(live);
  // Serialising costs real CPU at ingest rates: only do it when someone is listening.
  bus.on(owner, 'reading.stored', ({ readings }) => {
    if (readings.length > 0 && live.clientCount > 0) live.broadcast('readings', readingsEventData(readings));
  });
  bus.on(owner, 'node.updated', (update) => {
    if (live.clientCount > 0) live.broadcast('node', nodeEventData(update));
  });
  bus.on(owner, 'radio.status', (status) => {
    if (live.clientCount > 0) live.broadcast('radio', radioEventData(status));
  });
  bus.on(owner, 'notification.fired', (firing) => {
    if (live.clientCount > 0) live.broadcast('notification', JSON.stringify(firing));
  });
  bus.on(owner, 'hub.stopping', () => live.closeAll());

  const app = new Hono();
  app.get('/', (c) => {
    // @hono/node-server hands over the ServerResponse: a stuck client's socket is destroyed outright.
    const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const outgoing = env?.outgoing;
    const stream = live.open(
      () => [
        sseEvent(
          'hello',
          JSON.stringify({
            version: options.hub.version,
            started_at: new Date(options.hub.startedAt).toISOString(),
            radio: bus.last('radio.status'),
            plugins: options.hub.plugins,
          }),
        ),
      ],
      outgoing ? () => outgoing.destroy() : undefined,
      clientAddress(env?.incoming),
    );
    return c.body(stream, 200, SSE_HEADERS);
  });
  return app;
}
