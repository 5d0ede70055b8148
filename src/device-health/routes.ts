/**
 * Device health over HTTP, read like the weather (no sign-in; src/weather/routes.ts):
 * `GET /api/v1/nodes/{node_id}/device-health` pages a node's samples with the weather history's
 * parameters, limits, cursor and `Link` header; `GET /api/v1/device-health/latest` is each
 * node's newest values; `GET /api/v1/radio/airtime` the hub's channel use against its budget.
 * Every bad parameter is a 400 problem naming the field; an unknown node is a 200 with `data: []`.
 */
import { type Context, Hono } from 'hono';
import { nodeIdFromNum } from '../domain/node.js';
import { COMMON_PROBLEMS, pagedListResponses } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { nextPageHeaders, readCursor } from '../http/paging.js';
import { fieldProblem, validationProblem } from '../http/problem.js';
import { encodeCursor, historyCursor } from '../weather/cursor.js';
import { DEFAULT_HISTORY_LIMIT } from '../weather/schemas.js';
import type { AirtimeTracker } from './airtime-tracker.js';
import type { HealthService } from './health-service.js';
import {
  type AirtimeJson,
  airtimeSchema,
  healthHistoryQuerySchema,
  healthLatestQuerySchema,
  healthListSchema,
  healthPathSchema,
} from './schemas.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const NODE_ID = /^![0-9a-f]{8}$/i;

export const deviceHealthOperations = [
  ...describeRoutes('/api/v1/nodes', [
    {
      method: 'get',
      path: '/{node_id}/device-health',
      operationId: 'getDeviceHealthHistory',
      tag: 'device health',
      summary: 'A node’s device health in [start, end), ascending: raw samples, or hourly / daily means',
      description:
        'Battery, voltage, channel and air utilisation, uptime (DEVICE_METRICS), LocalStats counters and noise floor, and the SNR/RSSI of packets the hub’s radio heard straight from the node. Paged like the weather history.',
      params: { path: healthPathSchema, query: healthHistoryQuerySchema },
      responses: pagedListResponses(healthListSchema, 'One page of samples.'),
    },
  ]),
  ...describeRoutes('/api/v1/device-health', [
    {
      method: 'get',
      path: '/latest',
      operationId: 'getLatestDeviceHealth',
      tag: 'device health',
      summary: 'Each node’s newest device health values, ordered by node_id',
      description: 'Each field is its own newest value; `timestamp` is the newest sample’s.',
      params: { query: healthLatestQuerySchema },
      responses: {
        200: { description: 'One object per node.', body: healthListSchema },
        400: COMMON_PROBLEMS.badInput,
      },
    },
  ]),
  ...describeRoutes('/api/v1/radio', [
    {
      method: 'get',
      path: '/airtime',
      operationId: 'getRadioAirtime',
      tag: 'device health',
      summary: 'The hub’s own airtime over the last hour against the budget its send queue paces to',
      responses: {
        200: { description: 'The budget, the use, and the radio’s own report.', body: airtimeSchema },
      },
    },
  ]),
];

/** `!xxxxxxxx` in lower case, or a 400 naming node_id. */
function nodeIdParam(value: string | undefined): string {
  if (value === undefined || !NODE_ID.test(value))
    throw fieldProblem('node_id', 'must be a node id: ! and 8 hex digits, e.g. !a1b2c3d4');
  return value.toLowerCase();
}

/** Mounted at `/api/v1/nodes/:node_id/device-health`. */
export function healthHistoryRoutes(service: HealthService): Hono {
  const app = new Hono();
  app.get('/', (c: Context) => {
    const nodeId = nodeIdParam(c.req.param('node_id'));
    const raw = c.req.query();
    const parsed = healthHistoryQuerySchema.safeParse(raw);
    if (!parsed.success) throw validationProblem(parsed.error);
    const { start, end, interval, cursor } = parsed.data;
    const limit = parsed.data.limit ?? DEFAULT_HISTORY_LIMIT;
    if (!(end > start)) throw fieldProblem('end', 'must be after start');
    let after: number | undefined;
    if (cursor !== undefined) {
      const position = readCursor(historyCursor, cursor, 'is not a cursor this API issued');
      if (position.i !== interval)
        throw fieldProblem('cursor', `belongs to interval=${position.i}, not interval=${interval}`);
      after = position.a;
    }
    const page = service.history({
      nodeId,
      start,
      end,
      interval,
      limit,
      ...(after === undefined ? {} : { after }),
    });
    const next = page.nextAfter === undefined ? undefined : encodeCursor(interval, page.nextAfter);
    const params = { start: raw.start!, end: raw.end!, interval, limit: String(limit) };
    return c.body(page.body as string, 200, { ...JSON_TYPE, ...nextPageHeaders(c.req.path, params, next) });
  });
  return app;
}

/** Mounted at `/api/v1/device-health`. */
export function healthLatestRoutes(service: HealthService): Hono {
  const app = new Hono();
  app.get('/latest', (c) => {
    const parsed = healthLatestQuerySchema.safeParse(c.req.query());
    if (!parsed.success) throw validationProblem(parsed.error);
    const nodeId = parsed.data.node_id === undefined ? undefined : nodeIdParam(parsed.data.node_id);
    return c.body(service.latestBody(nodeId), 200, JSON_TYPE);
  });
  return app;
}

export interface AirtimeSource {
  service: HealthService;
  tracker: AirtimeTracker;
  /** MESSAGE_AIRTIME_PERCENT, from the message gateway; undefined while it does not run. */
  budgetPercent(): Promise<number | undefined>;
  /** The hub's own node number, once the radio said. */
  myNodeNum(): number | undefined;
  now?: () => number;
}

/** The `/radio/airtime` body. */
export async function airtimeJson(source: AirtimeSource): Promise<AirtimeJson> {
  const budget = await source.budgetPercent();
  const used = source.tracker.used((source.now ?? Date.now)());
  const num = source.myNodeNum();
  const radio = num === undefined ? undefined : source.service.radio(nodeIdFromNum(num));
  return {
    data: {
      ...(budget === undefined ? {} : { budget_percent: budget }),
      window_seconds: 3600,
      used_percent: used.percent,
      sent_packets: used.packets,
      ...(radio
        ? {
            radio: {
              node_id: radio.nodeId,
              timestamp: new Date(radio.ts).toISOString(),
              ...(radio.channelUtilization === undefined
                ? {}
                : { channel_utilization: radio.channelUtilization }),
              ...(radio.airUtilTx === undefined ? {} : { air_util_tx: radio.airUtilTx }),
              ...(radio.noiseFloor === undefined ? {} : { noise_floor: radio.noiseFloor }),
            },
          }
        : {}),
    },
  };
}

/** Mounted at `/api/v1/radio`. */
export function airtimeRoutes(source: AirtimeSource): Hono {
  const app = new Hono();
  app.get('/airtime', async (c) => c.json(await airtimeJson(source)));
  return app;
}
