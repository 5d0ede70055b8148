/**
 * The upstream's operational routes and its few metrics:
 * - `GET /health`: `{ status }` to anyone (liveness: `ok`, or `degraded`, still 200, when
 *   PostgreSQL does not answer within HEALTH_DB_TIMEOUT_MS: every process shares the database,
 *   so taking one out of a load balancer would not help). With the metrics token as a bearer
 *   token, also `version, role: "upstream", uptime_s, database, sites, downlink_connections`.
 * - `GET /metrics`: Prometheus text from this process's registry (prefix `meshhub_upstream_`),
 *   only with `Authorization: Bearer <UPSTREAM_METRICS_TOKEN>` (Prometheus' `authorization`
 *   setting); 401 without it, 404 when no token is set. README "The upstream's reads".
 * - `GET /api/version`: `{ version, role: "upstream", public_read }`: the hub's answer, plus what
 *   the web UI needs before it opens the live stream (sign in first, or read anonymously).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { Hono } from 'hono';
import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { z } from 'zod';
import { bearerToken } from '../../../src/auth/jwt-verifier.js';
import { bearerChallenge } from '../../../src/auth/require-auth.js';
import type { Secret } from '../../../src/config/secret.js';
import { accessMetrics } from '../../../src/http/access-metrics.js';
import { AUTH_PROBLEMS, type OperationSpec, problem } from '../../../src/http/openapi.js';
import { describeRoutes } from '../../../src/http/openapi-route.js';
import { ProblemError } from '../../../src/http/problem.js';
import { httpDurationHistogram } from '../../../src/metrics.js';
import { SYNC_API } from '../../protocol.js';

export const HEALTH_DB_TIMEOUT_MS = 2_000;

export class UpstreamMetrics {
  readonly registry = new Registry();
  private sitesSource: (() => Promise<{ active: number; revoked: number }>) | undefined;
  private downlinkSource: () => number = () => 0;
  private historySource: () => { listening: boolean; queries: number; refills: number } = () => ({
    listening: false,
    queries: 0,
    refills: 0,
  });

  readonly httpDuration = httpDurationHistogram(this.registry, 'meshhub_upstream_');

  readonly syncBatches = new Counter({
    name: 'meshhub_upstream_sync_batches_total',
    help: 'Batches POSTed by sites to this process, by answer status (200: applied or acknowledged again)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const self = this;
    new Gauge({
      name: 'meshhub_upstream_sites',
      help: 'Registered sites, by state (active, revoked)',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        if (!self.sitesSource) return;
        this.reset();
        try {
          const counts = await within(self.sitesSource(), HEALTH_DB_TIMEOUT_MS);
          this.set({ state: 'active' }, counts.active);
          this.set({ state: 'revoked' }, counts.revoked);
        } catch {
          // PostgreSQL down: leave the gauge empty rather than fail the whole scrape.
        }
      },
    });
    new Gauge({
      name: 'meshhub_upstream_downlink_connections',
      help: 'Site downlink WebSockets open on this process',
      registers: [this.registry],
      collect() {
        this.set(self.downlinkSource());
      },
    });
    new Gauge({
      name: 'meshhub_upstream_history_listening',
      help: 'History answers follow the batches of every process by notification (1), or every history request asks PostgreSQL (0: UPSTREAM_HISTORY_LISTEN=false, or its connection down)',
      registers: [this.registry],
      collect() {
        this.set(self.historySource().listening ? 1 : 0);
      },
    });
    new Counter({
      name: 'meshhub_upstream_history_queries_total',
      help: 'PostgreSQL queries of the history cache: cause="request", a request of hourly or daily means that needed one (the others came from the cache alone); cause="refill", a notified change loaded again for a series asked for within the last minute',
      labelNames: ['cause'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const source = self.historySource();
        this.inc({ cause: 'request' }, source.queries);
        this.inc({ cause: 'refill' }, source.refills);
      },
    });
    if (options.defaultMetrics !== false)
      collectDefaultMetrics({ register: this.registry, prefix: 'meshhub_upstream_' });
  }

  /** Where scrape-time gauges read from. */
  watch(sources: {
    sites: () => Promise<{ active: number; revoked: number }>;
    downlinks: () => number;
    history?: () => { listening: boolean; queries: number; refills: number };
  }): void {
    this.sitesSource = sources.sites;
    this.downlinkSource = sources.downlinks;
    if (sources.history) this.historySource = sources.history;
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Times every request by route pattern (never the raw path), as the hub does; counts the sites' batch posts. */
export function upstreamAccessMetrics(metrics: UpstreamMetrics): MiddlewareHandler {
  const batches = `${SYNC_API}/batches`;
  const timed = accessMetrics({ metrics });
  return async function upstreamAccessMetricsMiddleware(c, next) {
    await timed(c, next);
    if (c.req.method === 'POST' && c.req.path === batches)
      metrics.syncBatches.inc({ status: String(c.res.status) });
  };
}

/** Resolves with the value, or rejects after `ms` (a PostgreSQL that does not answer). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What anyone may see of /health: liveness. */
export interface UpstreamLiveness {
  status: 'ok' | 'degraded';
}

export interface UpstreamHealth extends UpstreamLiveness {
  version: string;
  role: 'upstream';
  uptime_s: number;
  database: 'ok' | 'unreachable';
  /** Registered sites that are not revoked; null when the database does not answer. */
  sites: number | null;
  downlink_connections: number;
}

/** `/health`'s answer: the liveness alone, or everything with the metrics token. */
const upstreamHealthSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  version: z.string().optional(),
  role: z.literal('upstream').optional(),
  uptime_s: z.number().int().optional(),
  database: z.enum(['ok', 'unreachable']).optional(),
  sites: z.number().int().nullable().optional(),
  downlink_connections: z.number().int().optional(),
}) satisfies z.ZodType<UpstreamLiveness | UpstreamHealth>;

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const upstreamOperationalOperations: OperationSpec[] = describeRoutes('', [
  {
    method: 'get',
    path: '/health',
    operationId: 'getHealth',
    tag: 'operations',
    summary:
      '`{ status }` to anyone; with the metrics token as a bearer token, also the version, database, sites and downlinks',
    responses: {
      200: { description: 'ok, or degraded when PostgreSQL does not answer.', body: upstreamHealthSchema },
    },
  },
  {
    method: 'get',
    path: '/api/version',
    operationId: 'getVersion',
    tag: 'operations',
    summary: 'The upstream’s version, its role, and whether anyone may read without signing in',
    responses: {
      200: {
        description: 'The version.',
        body: z.object({ version: z.string(), role: z.literal('upstream'), public_read: z.boolean() }),
      },
    },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    tag: 'operations',
    summary: 'Prometheus metrics, with `Authorization: Bearer <UPSTREAM_METRICS_TOKEN>`',
    responses: {
      200: { description: 'Prometheus text exposition format.', contentType: 'text/plain' },
      401: AUTH_PROBLEMS.unauthorized,
      404: problem('Metrics are off: UPSTREAM_METRICS_TOKEN is not set.'),
    },
  },
]);

export interface HealthRoutesOptions {
  pool: pg.Pool;
  metrics: UpstreamMetrics;
  version: string;
  startedAt: number;
  downlinkConnections: () => number;
  dbTimeoutMs?: number;
  /** UPSTREAM_METRICS_TOKEN: unlocks /metrics and /health's detail; unset, /metrics is off. */
  metricsToken?: Secret | undefined;
  /** UPSTREAM_PUBLIC_READ, for /api/version. */
  publicRead?: boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
function carriesToken(header: string | undefined, token: Secret | undefined): boolean {
  const sent = bearerToken(header);
  if (!token || !sent) return false;
  return timingSafeEqual(sha256(sent), sha256(token.reveal()));
}

export async function siteCounts(pool: pg.Pool): Promise<{ active: number; revoked: number }> {
  const result = await pool.query<{ active: string | number; revoked: string | number }>(
    `SELECT count(*) FILTER (WHERE revoked_at IS NULL) AS active,
            count(*) FILTER (WHERE revoked_at IS NOT NULL) AS revoked
     FROM sites`,
  );
  const row = result.rows[0];
  return { active: Number(row?.active ?? 0), revoked: Number(row?.revoked ?? 0) };
}

/** `/health`, `/metrics` and `/api/version`, to mount at `/`. */
export function healthRoutes(options: HealthRoutesOptions): Hono {
  const app = new Hono();
  app.get('/health', async (c) => {
    let sites: number | null = null;
    try {
      sites = (await within(siteCounts(options.pool), options.dbTimeoutMs ?? HEALTH_DB_TIMEOUT_MS)).active;
    } catch {
      sites = null;
    }
    const status = sites === null ? 'degraded' : 'ok';
    if (!carriesToken(c.req.header('authorization'), options.metricsToken)) {
      const liveness: UpstreamLiveness = { status };
      return c.json(liveness, 200, { 'cache-control': 'no-store' });
    }
    const body: UpstreamHealth = {
      status,
      version: options.version,
      role: 'upstream',
      uptime_s: Math.round((Date.now() - options.startedAt) / 1000),
      database: sites === null ? 'unreachable' : 'ok',
      sites,
      downlink_connections: options.downlinkConnections(),
    };
    return c.json(body, 200, { 'cache-control': 'no-store' });
  });
  app.get('/api/version', (c) =>
    c.json({ version: options.version, role: 'upstream', public_read: options.publicRead ?? false }),
  );
  app.get('/metrics', async (c) => {
    if (!options.metricsToken) throw new ProblemError(404, 'metrics are off: set UPSTREAM_METRICS_TOKEN');
    if (!carriesToken(c.req.header('authorization'), options.metricsToken)) {
      throw new ProblemError(401, 'GET /metrics needs Authorization: Bearer <UPSTREAM_METRICS_TOKEN>', {
        headers: { 'www-authenticate': bearerChallenge() },
      });
    }
    const { contentType, body } = await options.metrics.render();
    return c.body(body, 200, { 'content-type': contentType });
  });
  return app;
}
