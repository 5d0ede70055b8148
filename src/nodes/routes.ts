/**
 * `/api/v1/nodes`: the mesh nodes the hub has heard of, for the map dashboard. The spec leaves the
 * node record "not shown"; ours carries what NodeInfo, Position and DeviceMetrics tell, in the
 * API's snake_case, with unknown fields omitted and `last_heard` as ISO 8601 UTC (schemas.ts).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { MeshNode } from '../domain/node.js';
import { COMMON_PROBLEMS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { cursorCodec, limitReader, nextPageHeaders, readCursor } from '../http/paging.js';
import { ProblemError, validationProblem } from '../http/problem.js';
import { CURSOR_DESCRIPTION, limitParam, type PageLimits } from '../http/schemas.js';
import { MAX_LISTED_NODES, type NodeRepository } from '../store/nodes-repository.js';
import type { NodeJson } from './schemas.js';
import { NODE_ID_PATTERN, nodeListSchema, nodePathSchema, nodeSchema } from './schemas.js';

export type { NodeJson };

export function nodeJson(node: MeshNode): NodeJson {
  const out: NodeJson = { node_id: node.nodeId };
  if (node.shortName !== undefined) out.short_name = node.shortName;
  if (node.longName !== undefined) out.long_name = node.longName;
  if (node.hwModel !== undefined) out.hw_model = node.hwModel;
  if (node.latitude !== undefined) out.latitude = node.latitude;
  if (node.longitude !== undefined) out.longitude = node.longitude;
  if (node.altitude !== undefined) out.altitude = node.altitude;
  if (node.lastHeard !== undefined) {
    const heard = new Date(node.lastHeard);
    if (!Number.isNaN(heard.getTime())) out.last_heard = heard.toISOString();
  }
  if (node.batteryLevel !== undefined) out.battery_level = node.batteryLevel;
  if (node.snr !== undefined) out.snr = node.snr;
  if (node.previousIds && node.previousIds.length > 0) out.previous_ids = [...node.previousIds];
  return out;
}

/**
 * Pages of `/api/v1/nodes`: by default one page holds every node up to MAX_LISTED_NODES (what the
 * dashboard reads), a smaller `limit` pages a large mesh (a regional MQTT feed) in node_id order.
 */
export const NODES_PAGE: PageLimits = { default: MAX_LISTED_NODES, max: MAX_LISTED_NODES };

export const nodeListQuerySchema = z.object({
  limit: limitParam(NODES_PAGE).optional(),
  cursor: z.string().optional().meta({ description: CURSOR_DESCRIPTION }),
});

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const nodesOperations = describeRoutes('/api/v1/nodes', [
  {
    method: 'get',
    path: '/',
    operationId: 'listNodes',
    tag: 'nodes',
    summary: 'Every node the hub has heard of, ordered by node_id, in pages',
    params: { query: nodeListQuerySchema },
    responses: {
      200: {
        description:
          'The nodes; unknown fields left out. When more follow, `Link: <…>; rel="next"` leads to the next page.',
        body: nodeListSchema,
      },
      400: COMMON_PROBLEMS.badInput,
    },
  },
  {
    method: 'get',
    path: '/{node_id}',
    operationId: 'getNode',
    tag: 'nodes',
    summary: 'One node; an old id of a renumbered node answers the node under its id now',
    params: { path: nodePathSchema },
    responses: {
      200: {
        description:
          'The node. Asked by an old id (firmware 2.8 renumbered it), the answer is the node under its new node_id, with the old id in previous_ids and a Content-Location naming it.',
        body: nodeSchema,
      },
      400: COMMON_PROBLEMS.badInput,
      404: problem('No node has or had this id.'),
    },
  },
]);

const readLimit = limitReader(NODES_PAGE);
/** A page ends at a node id; the next starts after it. */
const nodeCursor = cursorCodec(z.strictObject({ a: z.string().regex(NODE_ID_PATTERN) }));

export function nodesRoutes(repo: NodeRepository): Hono {
  const app = new Hono();
  app.get('/', (c) => {
    const limit = readLimit(c.req.query('limit'));
    const token = c.req.query('cursor');
    const after =
      token === undefined ? undefined : readCursor(nodeCursor, token, 'is not a cursor of this list').a;
    const page = repo.page(limit, after);
    const next = page.more ? nodeCursor.encode({ a: page.nodes.at(-1)!.nodeId }) : undefined;
    const headers = nextPageHeaders(c.req.path, { limit: String(limit) }, next);
    return c.json({ data: page.nodes.map(nodeJson) }, 200, headers);
  });
  app.get('/:node_id', (c) => {
    const parsed = nodePathSchema.safeParse({ node_id: c.req.param('node_id') });
    if (!parsed.success) throw validationProblem(parsed.error);
    const asked = parsed.data.node_id;
    const nodeId = repo.resolve(asked);
    const node = repo.get(nodeId);
    if (!node) throw new ProblemError(404, `no node ${asked}`);
    // 200, not a redirect: a client asking by an old id gets the node at once and sees its new id.
    if (nodeId !== asked) c.header('Content-Location', `/api/v1/nodes/${nodeId}`);
    return c.json(nodeJson(node));
  });
  return app;
}
