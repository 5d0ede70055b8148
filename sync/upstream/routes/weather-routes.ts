/**
 * `/api/v1/weather` on the upstream: the hub's routes (src/weather/routes.ts `weatherApi`: the
 * same query schemas, problems, ordering, paging with `limit` and a `Link: <…>; rel="next"`
 * cursor) over the PostgreSQL reads (../weather/pg-reads.ts), with the upstream's scope: an optional
 * `site` filter, and each Reading carries its `site_id`.
 *
 * - `/latest`: one Reading per (site, node), ordered by node_id then site_id; `site` keeps one
 *   site's, `node_id` one node's.
 * - `/history`: one site's series. With `site`, that site's; without, the site that heard the
 *   node most recently (../weather/pg-reads.ts `mostRecentSiteOf`). The cursor carries the site it was
 *   made for, so later pages stay on it even if another site hears the node meanwhile; a cursor
 *   used with a different `site` is a 400 naming `cursor`.
 * An unknown node or site is a 200 with `data: []`, as on a hub.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import { AUTH_PROBLEMS, type OperationSpec } from '../../../src/http/openapi.js';
import { cursorCodec } from '../../../src/http/paging.js';
import { fieldProblem } from '../../../src/http/problem.js';
import { type WeatherScope, weatherApi, weatherOperations } from '../../../src/weather/routes.js';
import {
  historyIntervalSchema,
  historyQuerySchema,
  latestQuerySchema,
  readingSchema,
} from '../../../src/weather/schemas.js';
import { SITE_ID_PATTERN } from '../../protocol.js';
import type { PgWeatherReads, UpstreamLatestFilter } from '../weather/pg-reads.js';

/** The `site` query parameter: a registered site's id (an unknown one answers nothing). */
export const siteParam = z
  .string({ error: 'must be a site id' })
  .regex(SITE_ID_PATTERN, 'must be a site id: lower-case letters, digits and "-", at most 63')
  .meta({ description: 'Only this site.' });

export const upstreamLatestQuerySchema = latestQuerySchema.extend({ site: siteParam.optional() });
export const upstreamHistoryQuerySchema = historyQuerySchema.extend({
  site: siteParam.optional().meta({
    description: 'The site whose series to read; default: the site that heard the node most recently.',
  }),
});

/** A Reading of the upstream: the hub's, with the site that sent it. */
export const upstreamReadingSchema = readingSchema.extend({ site_id: z.string() });
const upstreamReadingListSchema = z.object({ data: z.array(upstreamReadingSchema) });

/** What the upstream's weather operations say beyond the hub's. */
const upstreamSide: Record<string, { query: z.ZodObject; summary: string }> = {
  getLatestReadings: {
    query: upstreamLatestQuerySchema,
    summary:
      'The newest value of every metric, one Reading per (site, node), ordered by node_id then site_id',
  },
  getReadingHistory: {
    query: upstreamHistoryQuerySchema,
    summary: 'One site’s readings of a node in [start, end), ascending: raw, or hourly / daily means',
  },
};

/**
 * The OpenAPI operations of the routes below (src/http/openapi-route.ts): the hub's
 * (`weatherOperations`) with the upstream's queries (`site`), Readings with their `site_id`, and
 * read access in front.
 */
export const upstreamWeatherOperations: OperationSpec[] = weatherOperations.map((op) => ({
  ...op,
  security: 'optional-bearer',
  summary: upstreamSide[op.operationId]!.summary,
  params: { query: upstreamSide[op.operationId]!.query },
  responses: {
    ...op.responses,
    200: { ...op.responses[200]!, body: upstreamReadingListSchema },
    401: AUTH_PROBLEMS.unauthorized,
  },
}));

/** The history cursor: the previous page's last time (`a`), its interval (`i`) and site (`s`). */
const upstreamCursorPosition = z.strictObject({
  v: z.literal(1),
  i: historyIntervalSchema,
  s: z.string().regex(SITE_ID_PATTERN),
  a: z.int(),
});
export const upstreamHistoryCursor = cursorCodec(upstreamCursorPosition);

/** The upstream's additions to the shared routes: a `site` filter, one series per site. */
function upstreamScope(
  queries: PgWeatherReads,
): WeatherScope<
  z.output<typeof upstreamLatestQuerySchema>,
  z.output<typeof upstreamHistoryQuerySchema>,
  z.output<typeof upstreamCursorPosition>,
  UpstreamLatestFilter,
  string
> {
  return {
    latestQuery: upstreamLatestQuerySchema,
    historyQuery: upstreamHistoryQuerySchema,
    latestFilter: (query) => ({
      ...(query?.site === undefined ? {} : { siteId: query.site }),
      ...(query?.node_id === undefined ? {} : { nodeId: query.node_id }),
    }),
    cursor: upstreamHistoryCursor,
    cursorSeries: (cursor, query) => {
      if (query.site !== undefined && cursor.s !== query.site) {
        throw fieldProblem('cursor', `belongs to site=${cursor.s}, not site=${query.site}`);
      }
      return cursor.s;
    },
    series: async (query) => query.site ?? (await queries.mostRecentSiteOf(query.node_id)) ?? null,
    encodeCursor: (interval, siteId, after) =>
      upstreamHistoryCursor.encode({ v: 1, i: interval, s: siteId, a: after }),
    linkParams: (query): Record<string, string> => (query.site === undefined ? {} : { site: query.site }),
  };
}

export function upstreamWeatherRoutes(queries: PgWeatherReads): Hono {
  return weatherApi(queries, upstreamScope(queries));
}
