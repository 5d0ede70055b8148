/**
 * `/api/v1/weather` (spec "Endpoints"): GET /latest and GET /history, defined once for both
 * applications over their WeatherReads (weather-reads.ts): the hub's `weatherRoutes` here, the
 * upstream's in sync/upstream/routes/weather-routes.ts (a `site` filter and a cursor that
 * remembers the site: its WeatherScope).
 *
 * Bodies are exactly `{ "data": [...] }`. History pages with `limit` (1..10000, default 1000)
 * and, while more rows remain, a `Link: <…&cursor=…>; rel="next"` header repeating the request's
 * parameters (docs/architecture.md "Decisions"). Every bad parameter is a 400 problem naming the
 * field; unknown parameters are ignored; an unknown node is a 200 with `data: []`.
 */
import { type Context, Hono } from 'hono';
import type { z } from 'zod';
import { COMMON_PROBLEMS, pagedListResponses } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { type CursorCodec, nextPageHeaders, readCursor } from '../http/paging.js';
import { fieldProblem, validationProblem } from '../http/problem.js';
import { encodeCursor, historyCursor } from './cursor.js';
import {
  DEFAULT_HISTORY_LIMIT,
  type HistoryInterval,
  historyQuerySchema,
  latestQuerySchema,
  readingListSchema,
} from './schemas.js';
import { type Body, EMPTY_BODY, type HistoryPage, type WeatherReads } from './weather-reads.js';
import type { WeatherService } from './weather-service.js';

const JSON_TYPE = { 'content-type': 'application/json' };

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const weatherOperations = describeRoutes('/api/v1/weather', [
  {
    method: 'get',
    path: '/latest',
    operationId: 'getLatestReadings',
    tag: 'weather',
    summary: 'The newest value of every metric, one Reading per node, ordered by node_id',
    description: '`timestamp` is the newest reading’s. An unknown node is an empty list.',
    params: { query: latestQuerySchema },
    responses: {
      200: { description: 'The readings.', body: readingListSchema },
      400: COMMON_PROBLEMS.badInput,
    },
  },
  {
    method: 'get',
    path: '/history',
    operationId: 'getReadingHistory',
    tag: 'weather',
    summary: 'A node’s readings in [start, end), ascending: raw, or hourly / daily means',
    params: { query: historyQuerySchema },
    responses: pagedListResponses(readingListSchema, 'One page of readings.'),
  },
]);

type LatestParams = z.output<typeof latestQuerySchema>;
type HistoryParams = z.output<typeof historyQuerySchema>;
/** What every history cursor holds: the interval it was made for and the last time of its page. */
interface CursorPosition {
  i: HistoryInterval;
  a: number;
}

/**
 * What an application adds to the shared routes: its query schemas (the hub's, or extensions of
 * them), which series a history request reads, and its cursor.
 */
export interface WeatherScope<
  L extends LatestParams,
  H extends HistoryParams,
  C extends CursorPosition,
  F,
  S,
> {
  latestQuery: z.ZodType<L>;
  historyQuery: z.ZodType<H>;
  /** The latest filter of a request (undefined: a request without any query string). */
  latestFilter(query: L | undefined): F;
  cursor: CursorCodec<C>;
  /** Checks a (valid) cursor against the request's other parameters (throws a problem), and gives its series. */
  cursorSeries(cursor: C, query: H): S;
  /** The series of a first page; null: nothing to read (an empty page). */
  series(query: H): S | null | Promise<S | null>;
  encodeCursor(interval: HistoryInterval, series: S, after: number): string;
  /** Parameters the next page's link repeats beyond the hub's. */
  linkParams?(query: H): Record<string, string>;
}

/** `fn(value)`, at once when `value` is not a promise (the hub's SQLite answers synchronously). */
function then<T, R>(value: T | Promise<T>, fn: (value: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}

export function weatherApi<L extends LatestParams, H extends HistoryParams, C extends CursorPosition, F, S>(
  reads: WeatherReads<F, S>,
  scope: WeatherScope<L, H, C, F, S>,
): Hono {
  const app = new Hono();
  const json = (c: Context, body: Body) => c.body(body as string, 200, JSON_TYPE);

  app.get('/latest', (c) => {
    // The hot path (dashboards poll it): no query at all needs no validation.
    if (!c.req.url.includes('?'))
      return then(reads.latestBody(scope.latestFilter(undefined)), (b) => json(c, b));
    const parsed = scope.latestQuery.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    return then(reads.latestBody(scope.latestFilter(parsed.data)), (b) => json(c, b));
  });

  app.get('/history', (c): Response | Promise<Response> => {
    const raw = c.req.query();
    const parsed = scope.historyQuery.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const query = parsed.data;
    const { node_id, start, end, interval } = query;
    const limit = query.limit ?? DEFAULT_HISTORY_LIMIT;
    if (!(end > start)) throw fieldProblem('end', 'must be after start');

    let after: number | undefined;
    let series: S | null | Promise<S | null>;
    if (query.cursor !== undefined) {
      const cursor = readCursor(scope.cursor, query.cursor, 'is not a cursor this API issued');
      if (cursor.i !== interval) {
        throw fieldProblem('cursor', `belongs to interval=${cursor.i}, not interval=${interval}`);
      }
      series = scope.cursorSeries(cursor, query);
      after = cursor.a;
    } else {
      series = scope.series(query);
    }

    const answer = (s: S, page: HistoryPage) => {
      const params = {
        node_id,
        start: raw.start!,
        end: raw.end!,
        interval,
        limit: String(limit),
        ...scope.linkParams?.(query),
      };
      const next = page.nextAfter === undefined ? undefined : scope.encodeCursor(interval, s, page.nextAfter);
      return c.body(page.body as string, 200, { ...JSON_TYPE, ...nextPageHeaders(c.req.path, params, next) });
    };
    return then(series, (s) => {
      if (s === null) return json(c, EMPTY_BODY);
      const page = reads.historyPage(s, {
        nodeId: node_id,
        start,
        end,
        interval,
        limit,
        ...(after === undefined ? {} : { after }),
      });
      return then(page, (p) => answer(s, p));
    });
  });

  return app;
}

/** The hub's scope: one series, `/latest` narrowed by `node_id`. */
const HUB_SCOPE: WeatherScope<LatestParams, HistoryParams, CursorPosition, string | undefined, undefined> = {
  latestQuery: latestQuerySchema,
  historyQuery: historyQuerySchema,
  latestFilter: (query) => query?.node_id,
  cursor: historyCursor,
  cursorSeries: () => undefined,
  series: () => undefined,
  encodeCursor: (interval, _series, after) => encodeCursor(interval, after),
};

export function weatherRoutes(service: WeatherService): Hono {
  return weatherApi(service, HUB_SCOPE);
}
