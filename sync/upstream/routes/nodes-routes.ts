/**
 * `GET /api/v1/nodes` on the upstream: the hub's node records (src/nodes/routes.ts: snake_case,
 * unknown fields left out, `last_heard` ISO 8601 UTC) with the `site_id` that knows them. A node
 * heard by two sites is listed once per site; ordered by node_id then site_id. `site` keeps one
 * site's nodes (a 400 naming `site` when it is not a site id; an unknown site answers `[]`).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { validationProblem } from '../../../src/http/problem.js';
import type { UpstreamReadQueries } from '../read-queries.js';
import { siteParam } from './weather-routes.js';

export const upstreamNodesQuerySchema = z.object({ site: siteParam.optional() });

export function upstreamNodesRoutes(queries: UpstreamReadQueries): Hono {
  const app = new Hono();
  app.get('/', async (c) => {
    const parsed = upstreamNodesQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    const { site } = parsed.data;
    return c.json({ data: await queries.nodes(site === undefined ? {} : { siteId: site }) });
  });
  return app;
}
