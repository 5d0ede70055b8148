/**
 * `GET /api/v1/live` on the upstream: the hub's dashboard stream (src/live/live-routes.ts), same
 * broadcaster and event names, so the same web UI runs against it. Events:
 * - `hello`: `{ version, started_at, radio, plugins: [], mode: "upstream" }` first on every
 *   connection. The upstream has no radio; `radio` is there because the hub's hello has it (a
 *   linked "connected, none") and `mode` tells the web UI to show sites instead;
 * - `sites`: `{ data: [Site…] }` as `GET /api/v1/sites` answers, right after `hello`, so the
 *   header shows the sites without a second request (when PostgreSQL answers in time);
 * - `readings`: `{ data: [Reading…] }` and `node` (a `/api/v1/nodes` item), each with its
 *   `site_id`, as this process applies a batch (`publishReadings`, `publishNode`). Batches that
 *   another upstream process applied never reach this stream: the web UI fetches its snapshot
 *   again every 30 s in upstream mode;
 * - `ping`: every 15 s.
 *
 * Who may open it is read-access.ts's business (mounted in front, in server.ts): a verified
 * caller's stream carries exact node positions, an anonymous one's (UPSTREAM_PUBLIC_READ=true)
 * the coarsened ones, from a broadcaster of its own. Without that middleware the stream is the
 * anonymous one.
 */
import type { ServerResponse } from 'node:http';
import { Hono } from 'hono';
import { AUTH_PROBLEMS, HEADERS, type OperationSpec, problem } from '../../../src/http/openapi.js';
import { describeRoutes } from '../../../src/http/openapi-route.js';
import { LiveBroadcaster, type LiveStreamLimits, sseEvent } from '../../../src/live/live-broadcaster.js';
import type { HelloEvent } from '../../../src/live/schemas.js';
import { streamTicketSchema } from '../../../src/messaging/schemas.js';
import { coarsenNode, type ReadEnv } from '../read-access.js';
import type { UpstreamNodeJson } from '../weather/pg-reads.js';

/**
 * The OpenAPI operations of the stream below and of its ticket route (mounted together at
 * /api/v1/live in parts.ts; src/http/openapi-route.ts).
 */
export const upstreamLiveOperations: OperationSpec[] = describeRoutes('/api/v1/live', [
  {
    method: 'get',
    path: '/',
    operationId: 'streamLive',
    tag: 'operations',
    summary: 'Live updates for the dashboard (Server-Sent Events)',
    description:
      '`hello` first (with `mode: "upstream"`), then `sites`, `readings` and `node` (each with its `site_id`) as this process applies batches, and `ping` every 15 s. A bearer token or `?ticket=` unless UPSTREAM_PUBLIC_READ.',
    security: 'optional-bearer',
    responses: {
      200: { description: 'The event stream.', contentType: 'text/event-stream' },
      401: AUTH_PROBLEMS.unauthorized,
      503: problem('Too many dashboards are open.', { 'Retry-After': HEADERS.retryAfter }),
    },
  },
  {
    method: 'post',
    path: '/tickets',
    operationId: 'issueLiveTicket',
    tag: 'operations',
    summary: 'A single-use ticket to open the stream without a token in the URL (EventSource)',
    security: 'bearer',
    responses: {
      201: { description: 'Valid for a short while, once.', body: streamTicketSchema },
      401: AUTH_PROBLEMS.unauthorized,
    },
  },
]);

/** The hub's hello, and the role that sends it (absent on a hub: the web UI reads that as `hub`). */
export type UpstreamHelloEvent = HelloEvent & { mode: 'upstream' };

export interface UpstreamLiveDeps {
  version: string;
  /** When this process started (ms): a new value tells a page the upstream restarted. */
  startedAt: number;
  /** The sites as `GET /api/v1/sites` lists them. */
  listSites: () => Promise<unknown[]>;
  limits?: Partial<LiveStreamLimits>;
  /** How long a new stream waits for the sites before it goes on without them. */
  sitesTimeoutMs?: number;
}

/** What @hono/node-server passes as the environment: the response, to drop a stuck client. */
export type LiveBindings = { outgoing?: ServerResponse };
type LiveEnv = { Bindings: LiveBindings } & ReadEnv;

export interface UpstreamLive {
  /** Mount at `/api/v1/live`. */
  app: Hono<LiveEnv>;
  /** Readings one batch stored, in the API's JSON (each with `site_id`). */
  publishReadings(readings: unknown[]): void;
  /** A node item as `/api/v1/nodes` writes it (with `site_id`); anonymous streams get it coarsened. */
  publishNode(node: UpstreamNodeJson): void;
  /** Ends every stream (the upstream is stopping). */
  closeAll(): void;
  /** Open streams (for /health and the tests). */
  readonly clientCount: number;
}

const SITES_TIMEOUT_MS = 2_000;

/** Settles with the sites, or undefined when they fail or take longer than `ms`. */
async function sitesWithin(listSites: () => Promise<unknown[]>, ms: number): Promise<unknown[] | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      listSites().catch(() => undefined),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function upstreamLiveRoutes(deps: UpstreamLiveDeps): UpstreamLive {
  // Signed-in streams and anonymous ones: the same events, node positions at two precisions.
  const exact = new LiveBroadcaster(deps.limits);
  const anonymous = new LiveBroadcaster(deps.limits);
  const both = [exact, anonymous];
  const clientCount = () => exact.clientCount + anonymous.clientCount;
  const hello: UpstreamHelloEvent = {
    version: deps.version,
    started_at: new Date(deps.startedAt).toISOString(),
    radio: { state: 'connected', transport: 'none', simulated: false },
    plugins: [],
    mode: 'upstream',
  };
  const helloChunk = sseEvent('hello', JSON.stringify(hello));

  const app = new Hono<LiveEnv>();
  app.get('/', async (c) => {
    const live = c.get('readPrecision') === 'exact' ? exact : anonymous;
    const sites = await sitesWithin(deps.listSites, deps.sitesTimeoutMs ?? SITES_TIMEOUT_MS);
    // @hono/node-server hands over the ServerResponse: a stuck client's socket is destroyed outright.
    const outgoing = c.env?.outgoing;
    const stream = live.open(
      () => [helloChunk, ...(sites ? [sseEvent('sites', JSON.stringify({ data: sites }))] : [])],
      outgoing ? () => outgoing.destroy() : undefined,
    );
    return c.body(stream, 200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // nginx and similar proxies buffer responses unless told not to.
      'x-accel-buffering': 'no',
    });
  });

  return {
    app,
    publishReadings(readings) {
      // Serialising costs real CPU at batch rates: only do it when someone is listening.
      if (readings.length === 0 || clientCount() === 0) return;
      const data = JSON.stringify({ data: readings });
      for (const live of both) if (live.clientCount > 0) live.broadcast('readings', data);
    },
    publishNode(node) {
      if (exact.clientCount > 0) exact.broadcast('node', JSON.stringify(node));
      if (anonymous.clientCount > 0) anonymous.broadcast('node', JSON.stringify(coarsenNode(node)));
    },
    closeAll: () => {
      for (const live of both) live.closeAll();
    },
    get clientCount() {
      return clientCount();
    },
  };
}
