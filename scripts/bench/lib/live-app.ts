/** A LiveBroadcaster behind a bare Hono app, without the hub around it (the web bench, the live stream's tests). */
import { Hono } from 'hono';
import { ProblemError } from '../../../src/http/problem.js';
import type { LiveBroadcaster } from '../../../src/live/live-broadcaster.js';

/**
 * GET /live opens a stream of `live` with nothing replayed first; a stream the broadcaster refuses
 * (too many clients) is answered with its problem details.
 */
export function liveApp(live: LiveBroadcaster): Hono {
  const app = new Hono();
  app.get('/live', (c) => {
    try {
      const outgoing = (c.env as { outgoing: { destroy(): void } }).outgoing;
      return c.body(
        live.open(
          () => [],
          () => outgoing.destroy(),
        ),
        200,
        { 'content-type': 'text/event-stream' },
      );
    } catch (error) {
      if (error instanceof ProblemError)
        return c.json(error.toBody(), error.status as 503, error.extras.headers);
      throw error;
    }
  });
  return app;
}
