/**
 * Traceroutes and links over HTTP (README "Traceroute and neighbours"):
 * - POST `/api/v1/nodes/{node_id}/traceroute` (bearer, role `admin` or `operator`; optional body
 *   `{ "channel": 0–7 }`) → 202, the traceroute with `status: "pending"` and `Location`. Checked in
 *   order: token (401), role (403), node id and body (400), the hub's own node (400), unknown node
 *   (404), the firmware's one-per-30-s limit (429 + Retry-After), the radio (503). A refused
 *   request stores and sends nothing.
 * - GET `/api/v1/traceroutes?node_id=…` (newest first, cursor-paged) and `/api/v1/traceroutes/{id}`.
 * - GET `/api/v1/links?node_id=…&since=…`: the latest of each link per (from, to, source).
 * Reads are open like `/api/v1/nodes` (the hub serves the mesh's picture to its LAN).
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { bodyProblem, limitBody, readJsonBody } from '../auth/request-body.js';
import type { AuthEnv } from '../auth/require-auth.js';
import type { MeshLink } from '../domain/mesh.js';
import { nodeIdFromNum } from '../domain/node.js';
import { AUTH_PROBLEMS, COMMON_PROBLEMS, HEADERS, pagedListResponses, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { cursorCodec, nextPageHeaders, readCursor } from '../http/paging.js';
import { ProblemError, validationProblem } from '../http/problem.js';
import type { NodeRepository } from '../store/nodes-repository.js';
import type { RouteHop } from './mesh-decode.js';
import {
  type LinkJson,
  linkListSchema,
  linkQuerySchema,
  nodeIdPathSchema,
  type RouteHopJson,
  TRACEROUTE_PAGE,
  type TracerouteJson,
  tracerouteIdPathSchema,
  tracerouteListSchema,
  tracerouteQuerySchema,
  tracerouteRequestSchema,
  tracerouteSchema,
} from './schemas.js';
import type { TopologyRepository, Traceroute } from './topology-repository.js';

export const OPERATOR_ROLE = 'operator';
/** Who may send a traceroute. */
export const TRACEROUTE_ROLES = ['admin', OPERATOR_ROLE] as const;
const MAX_BODY_BYTES = 1024;

const iso = (ms: number) => new Date(ms).toISOString();

function hopsJson(hops: readonly RouteHop[]): RouteHopJson[] {
  return hops.map((h) => (h.snr === undefined ? { node_id: h.nodeId } : { node_id: h.nodeId, snr: h.snr }));
}

export function tracerouteJson(t: Traceroute): TracerouteJson {
  return {
    id: t.id,
    node_id: t.nodeId,
    origin_id: t.originId,
    status: t.status,
    source: t.source,
    requested_at: iso(t.requestedAt),
    ...(t.answeredAt === undefined ? {} : { answered_at: iso(t.answeredAt) }),
    route: hopsJson(t.route),
    route_back: hopsJson(t.routeBack),
    ...(t.error === undefined ? {} : { error: t.error }),
  };
}

export function linkJson(l: MeshLink): LinkJson {
  return {
    from: l.from,
    to: l.to,
    ...(l.snr === undefined ? {} : { snr: l.snr }),
    last_heard: iso(l.lastHeard),
    source: l.source,
  };
}

const tracerouteAuth = {
  401: AUTH_PROBLEMS.unauthorized,
  403: problem('The token carries neither role admin nor operator.', {
    'WWW-Authenticate': HEADERS.wwwAuthenticate,
  }),
};

export const tracerouteRequestOperations = describeRoutes('/api/v1/nodes/{node_id}/traceroute', [
  {
    method: 'post',
    path: '/',
    operationId: 'requestTraceroute',
    tag: 'topology',
    summary: 'Send a traceroute to a node (role admin or operator)',
    description:
      'Sent through the airtime-paced queue with want_response; at most one per 30 s (the firmware’s limit for a client). Checked in order: token, role, node id and body, the hub’s own node, unknown node, the 30-s limit, the radio. A refused request stores and sends nothing.',
    security: 'bearer',
    params: { path: nodeIdPathSchema },
    body: { schema: tracerouteRequestSchema, required: false },
    responses: {
      202: {
        description: 'Accepted: the traceroute with `status: "pending"`.',
        body: tracerouteSchema,
        headers: { Location: HEADERS.location },
      },
      400: COMMON_PROBLEMS.badInput,
      ...tracerouteAuth,
      404: problem('No node with this id is known to the hub.'),
      413: COMMON_PROBLEMS.tooLarge,
      415: COMMON_PROBLEMS.notJson,
      429: problem('A traceroute went out less than 30 s ago.', { 'Retry-After': HEADERS.retryAfter }),
      503: problem('The radio is not connected, or the identity provider cannot be reached.', {
        'Retry-After': HEADERS.retryAfter,
      }),
    },
  },
]);

export const tracerouteOperations = describeRoutes('/api/v1/traceroutes', [
  {
    method: 'get',
    path: '/',
    operationId: 'listTraceroutes',
    tag: 'topology',
    summary: 'Traceroutes the hub sent or heard, newest first',
    params: { query: tracerouteQuerySchema },
    responses: pagedListResponses(tracerouteListSchema),
  },
  {
    method: 'get',
    path: '/{id}',
    operationId: 'getTraceroute',
    tag: 'topology',
    summary: 'One traceroute',
    params: { path: tracerouteIdPathSchema },
    responses: {
      200: { description: 'The traceroute.', body: tracerouteSchema },
      400: COMMON_PROBLEMS.badInput,
      404: problem('No such traceroute (or it is older than TOPOLOGY_RETENTION_DAYS).'),
    },
  },
]);

export const linkOperations = describeRoutes('/api/v1/links', [
  {
    method: 'get',
    path: '/',
    operationId: 'listLinks',
    tag: 'topology',
    summary: 'Links between nodes: the latest per (from, to, source), newest first',
    params: { query: linkQuerySchema },
    responses: {
      200: { description: 'The links (at most 10,000).', body: linkListSchema },
      400: COMMON_PROBLEMS.badInput,
    },
  },
]);

export interface TopologyRoutesDeps {
  repo: () => TopologyRepository;
  nodes: NodeRepository;
  /** The hub's own node number, once the radio said. */
  myNodeNum: () => number | undefined;
  request: (nodeId: string, channel: number) => Traceroute;
  requireRole: MiddlewareHandler<AuthEnv>;
}

function parse<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationProblem(parsed.error, prefix);
  return parsed.data;
}

/** The optional body: none (or empty) is `{}`; anything else must be the JSON object documented. */
async function readRequestBody(c: Context): Promise<{ channel?: number }> {
  const hasBody =
    c.req.header('content-type') !== undefined ||
    (c.req.header('content-length') ?? '0') !== '0' ||
    c.req.header('transfer-encoding') !== undefined;
  if (!hasBody) return {};
  const parsed = tracerouteRequestSchema.safeParse(await readJsonBody(c));
  if (!parsed.success) throw bodyProblem(parsed.error);
  return parsed.data;
}

export function tracerouteRequestRoutes(deps: TopologyRoutesDeps): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.post('/', deps.requireRole, limitBody(MAX_BODY_BYTES), async (c) => {
    const { node_id: nodeId } = parse(nodeIdPathSchema, { node_id: c.req.param('node_id') });
    const body = await readRequestBody(c);
    const mine = deps.myNodeNum();
    if (mine !== undefined && nodeIdFromNum(mine) === nodeId) {
      throw new ProblemError(400, 'this is the hub’s own radio; trace a node of the mesh', {
        errors: [{ field: 'node_id', message: 'is the hub’s own node' }],
      });
    }
    if (!deps.nodes.get(nodeId)) throw new ProblemError(404, `no node ${nodeId} is known to this hub`);
    const trace = deps.request(nodeId, body.channel ?? 0);
    c.header('location', `/api/v1/traceroutes/${trace.id}`);
    return c.json(tracerouteJson(trace), 202);
  });
  return app;
}

const positionSchema = z.object({ seq: z.int().min(1) });
const cursors = cursorCodec(positionSchema);

export function tracerouteRoutes(deps: Pick<TopologyRoutesDeps, 'repo'>): Hono {
  const app = new Hono();
  app.get('/', (c) => {
    const query = parse(tracerouteQuerySchema, c.req.query());
    const limit = query.limit ?? TRACEROUTE_PAGE.default;
    const before =
      query.cursor === undefined
        ? undefined
        : readCursor(cursors, query.cursor, 'is not a cursor this list issued').seq;
    const rows = deps
      .repo()
      .list(
        { ...(query.node_id ? { nodeId: query.node_id } : {}), ...(before ? { before } : {}) },
        limit + 1,
      );
    const page = rows.slice(0, limit);
    const next = rows.length > limit ? cursors.encode({ seq: page.at(-1)!.seq! }) : undefined;
    const params: Record<string, string> = {};
    if (query.node_id) params.node_id = query.node_id;
    if (query.limit !== undefined) params.limit = String(query.limit);
    return c.json(
      { data: page.map(tracerouteJson) },
      200,
      nextPageHeaders('/api/v1/traceroutes', params, next),
    );
  });
  app.get('/:id', (c) => {
    const { id } = parse(tracerouteIdPathSchema, { id: c.req.param('id') });
    const trace = deps.repo().get(id);
    if (!trace) throw new ProblemError(404, `no traceroute ${id}`);
    return c.json(tracerouteJson(trace));
  });
  return app;
}

export function linkRoutes(deps: Pick<TopologyRoutesDeps, 'repo'>): Hono {
  const app = new Hono();
  app.get('/', (c) => {
    const query = parse(linkQuerySchema, c.req.query());
    const links = deps.repo().links({
      ...(query.node_id ? { nodeId: query.node_id } : {}),
      ...(query.since ? { since: Date.parse(query.since) } : {}),
    });
    return c.json({ data: links.map(linkJson) });
  });
  return app;
}
