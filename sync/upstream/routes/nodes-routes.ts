/**
 * `GET /api/v1/nodes` on the upstream: the hub's node records (src/nodes/routes.ts: snake_case,
 * unknown fields left out, `last_heard` ISO 8601 UTC) with the `site_id` that knows them. A node
 * heard by two sites is listed once per site; ordered by node_id then site_id. `site` keeps one
 * site's nodes (a 400 naming `site` when it is not a site id; an unknown site answers `[]`).
 * Positions are exact for a verified caller and coarsened for an anonymous one (read-access.ts,
 * mounted in front in server.ts; without it every caller counts as anonymous).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { AUTH_PROBLEMS, COMMON_PROBLEMS, type OperationSpec } from '../../../src/http/openapi.js';
import { describeRoutes } from '../../../src/http/openapi-route.js';
import { validationProblem } from '../../../src/http/problem.js';
import { nodeSchema } from '../../../src/nodes/schemas.js';
import { nodesFor, type ReadEnv } from '../read-access.js';
import type { PgWeatherReads } from '../weather/pg-reads.js';
import { siteParam } from './weather-routes.js';

export const upstreamNodesQuerySchema = z.object({ site: siteParam.optional() });

/** A node record of the upstream: the hub's, with the site that knows it. */
export const upstreamNodeSchema = nodeSchema.extend({ site_id: z.string() });

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const upstreamNodesOperations: OperationSpec[] = describeRoutes('/api/v1/nodes', [
  {
    method: 'get',
    path: '/',
    operationId: 'listNodes',
    tag: 'nodes',
    summary: 'The nodes every site has heard of, once per site, ordered by node_id then site_id',
    description: 'Positions are exact for a signed-in caller and coarsened for an anonymous one.',
    security: 'optional-bearer',
    params: { query: upstreamNodesQuerySchema },
    responses: {
      200: { description: 'The nodes.', body: z.object({ data: z.array(upstreamNodeSchema) }) },
      400: COMMON_PROBLEMS.badInput,
      401: AUTH_PROBLEMS.unauthorized,
    },
  },
]);

export function upstreamNodesRoutes(queries: PgWeatherReads): Hono<ReadEnv> {
  const app = new Hono<ReadEnv>();
  app.get('/', async (c) => {
    const parsed = upstreamNodesQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    const { site } = parsed.data;
    const nodes = await queries.nodes(site === undefined ? {} : { siteId: site });
    return c.json({ data: nodesFor(c, nodes) });
  });
  return app;
}
