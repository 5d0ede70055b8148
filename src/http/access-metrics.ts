import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../log.js';
import type { HttpDurationHistogram } from '../metrics.js';

/**
 * Times every request into the latency histogram, labelled by the matched route pattern
 * (never the raw path, which would explode the label set), and logs it at debug level. The
 * hub's HubMetrics and the upstream's UpstreamMetrics both have the histogram.
 */
export function accessMetrics(options: {
  metrics: { httpDuration: HttpDurationHistogram };
  log?: Logger;
}): MiddlewareHandler {
  return async function accessMetricsMiddleware(c, next) {
    const start = process.hrtime.bigint();
    await next();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const route = c.req.routePath && c.req.routePath !== '/*' ? c.req.routePath : 'unmatched';
    options.metrics.httpDuration.observe(
      { method: c.req.method, route, status: String(c.res.status) },
      seconds,
    );
    if (options.log?.isLevelEnabled('debug')) {
      options.log.debug(
        {
          requestId: c.get('requestId'),
          method: c.req.method,
          path: c.req.path,
          status: c.res.status,
          ms: seconds * 1000,
        },
        'request',
      );
    }
  };
}
