/**
 * `GET /api/v1/sites`: every registered site and how its sync stands, ordered by site_id:
 * `{ data: [{ site_id, name, last_contact_at, last_batch_at, lag_s, acked_seq, node_count,
 * revoked }] }`. Times are ISO 8601 UTC with Z (null: never); `lag_s` is the seconds from the
 * newest record the site sent (its own clock) to now, null before its first record.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { SiteJson } from '../../../src/domain/site.js';
import { AUTH_PROBLEMS, type OperationSpec } from '../../../src/http/openapi.js';
import { describeRoutes } from '../../../src/http/openapi-route.js';
import type { PgWeatherReads } from '../weather/pg-reads.js';

const when = z.string().nullable().meta({ description: 'ISO 8601 UTC with Z; null: never.' });

/** One site as `GET /api/v1/sites` (and the live stream's `sites` event) writes it. */
export const siteSchema = z.object({
  site_id: z.string(),
  name: z.string().nullable(),
  last_contact_at: when,
  last_batch_at: when,
  lag_s: z
    .number()
    .int()
    .nullable()
    .meta({ description: 'Seconds from the newest record the site sent to now.' }),
  acked_seq: z.number().int(),
  node_count: z.number().int(),
  revoked: z.boolean(),
  stopped_at: when.meta({
    description:
      'When the site last closed its downlink saying it is stopping (a clean stop): offline from then until a later contact. Null: never.',
  }),
}) satisfies z.ZodType<SiteJson>;

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const sitesOperations: OperationSpec[] = describeRoutes('/api/v1/sites', [
  {
    method: 'get',
    path: '/',
    operationId: 'listSites',
    tag: 'sites',
    summary: 'Every registered site and how its sync stands, ordered by site_id',
    security: 'optional-bearer',
    responses: {
      200: { description: 'The sites.', body: z.object({ data: z.array(siteSchema) }) },
      401: AUTH_PROBLEMS.unauthorized,
    },
  },
]);

export function sitesRoutes(queries: PgWeatherReads): Hono {
  const app = new Hono();
  app.get('/', async (c) => c.json({ data: await queries.sites() }));
  return app;
}
