/**
 * Child process of the latest benchmark: serves, on two loopback ports, the real weather routes
 * over the database given as argv[2], and a bare Hono route answering the same JSON string. Sends
 * `{ ours, bare }` (base URLs) to the parent over IPC; exits when the parent disconnects.
 */
import { Hono } from 'hono';
import { createErrorHandler, notFound } from '../../../src/http/error-handler.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { weatherRoutes } from '../../../src/weather/routes.js';
import { WeatherService } from '../../../src/weather/weather-service.js';
import { serveForParent } from './server-child.js';

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file || !process.send) throw new Error('usage: forked with the database file as the argument');
  const db = openDatabase(file);
  const service = new WeatherService({ db });

  const ours = new Hono();
  ours.route('/api/v1/weather', weatherRoutes(service));
  ours.onError(createErrorHandler());
  ours.notFound(notFound);

  const json = service.latestJson();
  const bare = new Hono();
  bare.get('/api/v1/weather/latest', (c) => c.body(json, 200, { 'content-type': 'application/json' }));

  await serveForParent(ours, bare, () => closeDatabase(db));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
