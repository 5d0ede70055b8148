/**
 * `/api/v1/weather` on the upstream: GET /latest and GET /history as on a hub
 * (src/weather/routes.ts: the same query schemas, problems, ordering, paging with `limit` and a
 * `Link: <…>; rel="next"` cursor), plus an optional `site` filter, and each Reading carries its
 * `site_id`.
 *
 * - `/latest`: one Reading per (site, node), ordered by node_id then site_id; `site` keeps one
 *   site's, `node_id` one node's.
 * - `/history`: one site's series. With `site`, that site's; without, the site that heard the
 *   node most recently (read-queries.ts `mostRecentSiteOf`). The cursor carries the site it was
 *   made for, so later pages stay on it even if another site hears the node meanwhile; a cursor
 *   used with a different `site` is a 400 naming `cursor`.
 * An unknown node or site is a 200 with `data: []`, as on a hub.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { cursorCodec, nextPageHeaders, readCursor } from '../../../src/http/paging.js';
import { fieldProblem, validationProblem } from '../../../src/http/problem.js';
import {
  DEFAULT_HISTORY_LIMIT,
  historyIntervalSchema,
  historyQuerySchema,
  latestQuerySchema,
} from '../../../src/weather/schemas.js';
import { SITE_ID_PATTERN } from '../../protocol.js';
import type { UpstreamReadQueries } from '../read-queries.js';

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

/** The history cursor: the previous page's last time (`a`), its interval (`i`) and site (`s`). */
export const upstreamHistoryCursor = cursorCodec(
  z.strictObject({
    v: z.literal(1),
    i: historyIntervalSchema,
    s: z.string().regex(SITE_ID_PATTERN),
    a: z.int(),
  }),
);

export function upstreamWeatherRoutes(queries: UpstreamReadQueries): Hono {
  const app = new Hono();

  app.get('/latest', async (c) => {
    const parsed = upstreamLatestQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    const { node_id, site } = parsed.data;
    const data = await queries.latest({
      ...(site === undefined ? {} : { siteId: site }),
      ...(node_id === undefined ? {} : { nodeId: node_id }),
    });
    return c.json({ data });
  });

  app.get('/history', async (c) => {
    const raw = c.req.query();
    const parsed = upstreamHistoryQuerySchema.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const { node_id, start, end, interval, site } = parsed.data;
    const limit = parsed.data.limit ?? DEFAULT_HISTORY_LIMIT;
    if (!(end > start)) throw fieldProblem('end', 'must be after start');

    let after: number | undefined;
    let siteId = site;
    if (parsed.data.cursor !== undefined) {
      const cursor = readCursor(upstreamHistoryCursor, parsed.data.cursor, 'is not a cursor this API issued');
      if (cursor.i !== interval) {
        throw fieldProblem('cursor', `belongs to interval=${cursor.i}, not interval=${interval}`);
      }
      if (site !== undefined && cursor.s !== site) {
        throw fieldProblem('cursor', `belongs to site=${cursor.s}, not site=${site}`);
      }
      siteId = cursor.s;
      after = cursor.a;
    }
    siteId ??= await queries.mostRecentSiteOf(node_id);
    if (siteId === undefined) return c.json({ data: [] });

    const page = await queries.historyBody({
      siteId,
      nodeId: node_id,
      start,
      end,
      interval,
      limit,
      ...(after === undefined ? {} : { after }),
    });
    const params: Record<string, string> = {
      node_id,
      start: raw.start!,
      end: raw.end!,
      interval,
      limit: String(limit),
      ...(site === undefined ? {} : { site }),
    };
    const next =
      page.nextAfter === undefined
        ? undefined
        : upstreamHistoryCursor.encode({ v: 1, i: interval, s: siteId, a: page.nextAfter });
    return c.body(page.body as Uint8Array<ArrayBuffer>, 200, {
      'content-type': 'application/json',
      ...nextPageHeaders(c.req.path, params, next),
    });
  });

  return app;
}
