/**
 * `/api/v1/weather` (spec "Endpoints"): GET /latest and GET /history.
 *
 * Bodies are exactly `{ "data": [...] }`. History pages with `limit` (1..10000, default 1000)
 * and, while more rows remain, a `Link: <…&cursor=…>; rel="next"` header repeating the request's
 * parameters (DESIGN.md "Decisions"). Every bad parameter is a 400 problem naming the field;
 * unknown parameters are ignored; an unknown node is a 200 with `data: []`.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { ProblemError, validationProblem } from '../http/problem.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import {
  DEFAULT_HISTORY_LIMIT,
  HISTORY_INTERVALS,
  type HistoryInterval,
  MAX_HISTORY_LIMIT,
  type WeatherService,
} from './weather-service.js';

const JSON_TYPE = { 'content-type': 'application/json' };

const required = (what: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'is required' : `must be ${what}`;

const nodeId = z
  .string({ error: required('a node id') })
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters');

const dateTime = z.iso
  .datetime({
    offset: true,
    error: (issue) =>
      issue.input === undefined
        ? 'is required'
        : 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z',
  })
  .transform((value) => Date.parse(value));

const historyQuery = z.object({
  node_id: nodeId,
  start: dateTime,
  end: dateTime,
  interval: z
    .enum(HISTORY_INTERVALS as [HistoryInterval, ...HistoryInterval[]], {
      error: `must be one of ${HISTORY_INTERVALS.join(', ')}`,
    })
    .default('raw'),
  limit: z
    .string()
    .regex(/^[0-9]{1,6}$/, `must be an integer from 1 to ${MAX_HISTORY_LIMIT}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(1, `must be an integer from 1 to ${MAX_HISTORY_LIMIT}`)
        .max(MAX_HISTORY_LIMIT, `must be an integer from 1 to ${MAX_HISTORY_LIMIT}`),
    )
    .optional(),
  cursor: z.string().optional(),
});

const latestQuery = z.object({ node_id: nodeId.optional() });

function fieldProblem(field: string, message: string): ProblemError {
  return new ProblemError(400, `invalid ${field}`, { errors: [{ field, message }] });
}

export function weatherRoutes(service: WeatherService): Hono {
  const app = new Hono();

  app.get('/latest', (c) => {
    // The hot path (dashboards poll it): no query at all needs no validation.
    if (!c.req.url.includes('?')) return c.body(service.latestJson(), 200, JSON_TYPE);
    const parsed = latestQuery.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    return c.body(service.latestJson(parsed.data.node_id), 200, JSON_TYPE);
  });

  app.get('/history', (c) => {
    const raw = c.req.query();
    const parsed = historyQuery.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const { node_id, start, end, interval } = parsed.data;
    const limit = parsed.data.limit ?? DEFAULT_HISTORY_LIMIT;
    if (!(end > start)) throw fieldProblem('end', 'must be after start');

    let after: number | undefined;
    if (parsed.data.cursor !== undefined) {
      const cursor = decodeCursor(parsed.data.cursor);
      if (!cursor.ok) throw fieldProblem('cursor', cursor.reason);
      if (cursor.interval !== interval) {
        throw fieldProblem('cursor', `belongs to interval=${cursor.interval}, not interval=${interval}`);
      }
      after = cursor.after;
    }

    const page = service.history({
      nodeId: node_id,
      start,
      end,
      interval,
      limit,
      ...(after === undefined ? {} : { after }),
    });
    if (page.nextAfter === undefined) return c.body(page.body, 200, JSON_TYPE);
    const next = new URLSearchParams({
      node_id,
      start: raw.start!,
      end: raw.end!,
      interval,
      limit: String(limit),
      cursor: encodeCursor(interval, page.nextAfter),
    });
    return c.body(page.body, 200, { ...JSON_TYPE, link: `<${c.req.path}?${next}>; rel="next"` });
  });

  return app;
}
