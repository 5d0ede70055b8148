/**
 * Assembles the hub's Hono app: request ids, latency metrics, the `Host` check (host-check.ts),
 * the operational routes
 * (/health, /api/version, /metrics) and whatever route groups the hub mounts.
 * Errors become RFC 9457 problem details in the one onError.
 */
import { Hono } from 'hono';
import type { Logger } from '../log.js';
import type { HubMetrics } from '../metrics.js';
import { accessMetrics } from './access-metrics.js';
import { createErrorHandler, notFound } from './error-handler.js';
import type { HealthReport } from './health.js';
import { HostAllowlist, hostCheck } from './host-check.js';
import { describeRoutes } from './openapi-route.js';
import { requestId } from './request-id.js';
import type { RouteMount } from './routes.js';
import { healthReportSchema, versionSchema } from './schemas.js';

export type { RouteMount };

export interface HttpAppOptions {
  log: Logger;
  metrics: HubMetrics;
  version: string;
  health: () => HealthReport;
  routes: RouteMount[];
  /** The names the app answers to (HTTP_ALLOWED_HOSTS and the machine's own); default: the machine's own. */
  allowedHosts?: HostAllowlist;
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const operationalOperations = describeRoutes('', [
  {
    method: 'get',
    path: '/health',
    operationId: 'getHealth',
    tag: 'operations',
    summary: 'Every actor’s state and the radio link',
    responses: {
      200: { description: 'ok or degraded.', body: healthReportSchema },
      503: { description: 'down: a required actor is not running.', body: healthReportSchema },
    },
  },
  {
    method: 'get',
    path: '/api/version',
    operationId: 'getVersion',
    tag: 'operations',
    summary: 'The hub’s version (the VERSION file)',
    responses: { 200: { description: 'The version.', body: versionSchema } },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    tag: 'operations',
    summary: 'Prometheus metrics',
    responses: { 200: { description: 'Prometheus text exposition format.', contentType: 'text/plain' } },
  },
]);

export function createHttpApp(options: HttpAppOptions): Hono {
  const app = new Hono();
  app.use(requestId());
  app.use(accessMetrics({ metrics: options.metrics, log: options.log }));
  // Before any route: a name the hub does not answer to (DNS rebinding) reads nothing.
  app.use(hostCheck(options.allowedHosts ?? new HostAllowlist()));

  app.get('/health', (c) => {
    const report = options.health();
    return c.json(report, report.status === 'down' ? 503 : 200);
  });
  app.get('/api/version', (c) => c.json({ version: options.version }));
  app.get('/metrics', async (c) => {
    const { contentType, body } = await options.metrics.render();
    return c.body(body, 200, { 'content-type': contentType });
  });

  for (const { path, app: routes } of options.routes) app.route(path, routes);

  app.onError(createErrorHandler(options.log));
  app.notFound(notFound);
  return app;
}
