/**
 * `GET /api/v1/sites`: every registered site and how its sync stands, ordered by site_id:
 * `{ data: [{ site_id, name, last_contact_at, last_batch_at, lag_s, acked_seq, node_count,
 * revoked }] }`. Times are ISO 8601 UTC with Z (null: never); `lag_s` is the seconds from the
 * newest record the site sent (its own clock) to now, null before its first record.
 */
import { Hono } from 'hono';
import type { PgWeatherReads } from '../weather/pg-reads.js';

export function sitesRoutes(queries: PgWeatherReads): Hono {
  const app = new Hono();
  app.get('/', async (c) => c.json({ data: await queries.sites() }));
  return app;
}
