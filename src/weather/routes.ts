/**
 * `/api/v1/weather` (spec "Endpoints"): GET /latest and GET /history.
 *
 * Bodies are exactly `{ "data": [...] }`. History pages with `limit` (1..10000, default 1000)
 * and, while more rows remain, a `Link: <…&cursor=…>; rel="next"` header repeating the request's
 * parameters (docs/architecture.md "Decisions"). Every bad parameter is a 400 problem naming the field;
 * unknown parameters are ignored; an unknown node is a 200 with `data: []`.
 */
import { Hono } from 'hono';
import { nextPageHeaders, readCursor } from '../http/paging.js';
import { fieldProblem, validationProblem } from '../http/problem.js';
import { encodeCursor, historyCursor } from './cursor.js';
import { DEFAULT_HISTORY_LIMIT, historyQuerySchema, latestQuerySchema } from './schemas.js';
import type { WeatherService } from './weather-service.js';

const JSON_TYPE = { 'content-type': 'application/json' };

export function weatherRoutes(service: WeatherService): Hono {
  const app = new Hono();

  app.get('/latest', (c) => {
    // The hot path (dashboards poll it): no query at all needs no validation.
    if (!c.req.url.includes('?')) return c.body(service.latestJson(), 200, JSON_TYPE);
    const parsed = latestQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    return c.body(service.latestJson(parsed.data.node_id), 200, JSON_TYPE);
  });

  app.get('/history', (c) => {
    const raw = c.req.query();
    const parsed = historyQuerySchema.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const { node_id, start, end, interval } = parsed.data;
    const limit = parsed.data.limit ?? DEFAULT_HISTORY_LIMIT;
    if (!(end > start)) throw fieldProblem('end', 'must be after start');

    let after: number | undefined;
    if (parsed.data.cursor !== undefined) {
      const cursor = readCursor(historyCursor, parsed.data.cursor, 'is not a cursor this API issued');
      if (cursor.i !== interval) {
        throw fieldProblem('cursor', `belongs to interval=${cursor.i}, not interval=${interval}`);
      }
      after = cursor.a;
    }

    const page = service.history({
      nodeId: node_id,
      start,
      end,
      interval,
      limit,
      ...(after === undefined ? {} : { after }),
    });
    const params = { node_id, start: raw.start!, end: raw.end!, interval, limit: String(limit) };
    const next = page.nextAfter === undefined ? undefined : encodeCursor(interval, page.nextAfter);
    return c.body(page.body, 200, { ...JSON_TYPE, ...nextPageHeaders(c.req.path, params, next) });
  });

  return app;
}
