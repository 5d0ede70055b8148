/**
 * The upstream process on a real PostgreSQL and a real socket: it migrates on start (also when
 * two processes start together), answers /health, /api/version and /metrics, serves the web UI
 * with the SPA fallback, answers an upgrade to an unknown path with an HTTP 404 problem (never a
 * silent close), turns a PostgreSQL that does not answer into 503 / degraded (never a 500), and
 * stops cleanly.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../../src/config/secret.js';
import { SYNC_API } from '../../../sync/protocol.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { PG_MIGRATIONS } from '../../../sync/upstream/db/schema.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { healthRoutes, UpstreamMetrics } from '../../../sync/upstream/routes/health-routes.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { signedIn } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
type Json = any;

const skip = await skipWithoutPostgres();
const METRICS_TOKEN = 'server-start-metrics-token-0123456789abcdef';
const OPERATOR = { authorization: `Bearer ${METRICS_TOKEN}` };
/** Nothing listens here: connections are refused at once. */
const DEAD_DATABASE = 'postgres://meshhub:meshhub@127.0.0.1:1/nothing';

/** Sends a raw upgrade request and returns everything the server writes before it closes. */
function rawUpgrade(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString()));
    socket.on('end', () => resolve(text));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
  });
}

describe.skipIf(skip)('the upstream process', () => {
  let schema: TestSchema;
  let dataDir: string;
  let webRoot: string;
  let upstream: UpstreamServer;
  let base: string;

  function settingsFor(url: string, extra: Record<string, string> = {}) {
    return loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: url,
      HTTP_PORT: '0',
      DATA_DIR: dataDir,
      WEB_ROOT: webRoot,
      UPSTREAM_METRICS_TOKEN: METRICS_TOKEN,
      ...extra,
    });
  }

  beforeAll(async () => {
    schema = await createTestSchema('srv');
    dataDir = mkdtempSync(join(tmpdir(), 'meshhub-upstream-srv-'));
    webRoot = join(dataDir, 'web');
    mkdirSync(join(webRoot, 'assets'), { recursive: true });
    writeFileSync(join(webRoot, 'index.html'), '<!doctype html><title>meshhub upstream</title>');
    writeFileSync(join(webRoot, 'assets', 'app-1234.js'), 'console.log("upstream")');
    upstream = await createUpstream(settingsFor(schema.url), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    await upstream.start();
    base = `http://127.0.0.1:${upstream.port}`;
  });

  afterAll(async () => {
    await upstream?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts on port 0 with its schema migrated and this month’s partitions made', async () => {
    expect(upstream.port).toBeGreaterThan(0);
    const version = await upstream.pool.query('SELECT max(version) AS v FROM upstream_migrations');
    expect(Number(version.rows[0].v)).toBe(PG_MIGRATIONS.length);
    const partitions = await upstream.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace
       WHERE p.relname = 'readings' AND n.nspname = $1`,
      [schema.schema],
    );
    const now = new Date();
    const month = `readings_y${now.getUTCFullYear()}m${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    expect(partitions.rows.map((r) => r.name)).toContain(month);
  });

  it('a second process on the same database starts too (migrations run once)', async () => {
    const second = await createUpstream(settingsFor(schema.url), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    try {
      await second.start();
      const res = await fetch(`http://127.0.0.1:${second.port}/health`);
      expect(((await res.json()) as Json).status).toBe('ok');
      const ledger = await upstream.pool.query('SELECT count(*) AS n FROM upstream_migrations');
      expect(Number(ledger.rows[0].n)).toBe(PG_MIGRATIONS.length);
    } finally {
      await second.stop();
    }
  });

  it('GET /health says ok, the role, the version and the registered sites', async () => {
    await upstream.pool.query(
      `INSERT INTO sites (site_id, public_jwks, created_at) VALUES ('h1', '{"keys":[]}', 1), ('h2', '{"keys":[]}', 1)`,
    );
    await upstream.pool.query(`UPDATE sites SET revoked_at = 2 WHERE site_id = 'h2'`);
    const res = await fetch(`${base}/health`, { headers: OPERATOR });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Json;
    expect(body).toMatchObject({
      status: 'ok',
      role: 'upstream',
      database: 'ok',
      sites: 1,
      downlink_connections: 0,
    });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    const version = await (await fetch(`${base}/api/version`)).json();
    expect(version).toEqual({ version: body.version, role: 'upstream', public_read: false });
  });

  it('GET /metrics serves the Prometheus text with sites, batches and request latency', async () => {
    const sites = await fetch(`${base}/api/v1/sites`, {
      headers: { authorization: await signedIn(upstream) },
    });
    expect(sites.status).toBe(200);
    const res = await fetch(`${base}/metrics`, { headers: OPERATOR });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toContain('meshhub_upstream_sites{state="active"} 1');
    expect(text).toContain('meshhub_upstream_sites{state="revoked"} 1');
    expect(text).toContain('meshhub_upstream_downlink_connections 0');
    expect(text).toContain('# TYPE meshhub_upstream_sync_batches_total counter');
    expect(text).toMatch(
      /meshhub_upstream_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/sites",status="200"\} 1/,
    );
  });

  it('answers an upgrade to any path but the downlink with an HTTP 404 problem', async () => {
    const answer = await rawUpgrade(upstream.port, '/api/v1/live/socket');
    expect(answer).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(answer).toContain('content-type: application/problem+json');
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'nothing here upgrades a connection at /api/v1/live/socket',
    });
  });

  it('routes an upgrade of the downlink path to the downlink (an unsigned one is refused with 401)', async () => {
    const answer = await rawUpgrade(upstream.port, `${SYNC_API}/downlink`);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain('urn:meshhub:sync:unknown_site');
  });

  it('serves the web app, index.html for browser routes, and API 404s as problems', async () => {
    const index = await fetch(`${base}/`);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('meshhub upstream');
    const route = await fetch(`${base}/sites/north`);
    expect(route.status).toBe(200);
    expect(route.headers.get('content-type')).toContain('text/html');
    const asset = await fetch(`${base}/assets/app-1234.js`);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    const missingAsset = await fetch(`${base}/assets/old-0000.js`);
    expect(missingAsset.status).toBe(404);
    const api = await fetch(`${base}/api/v1/nothing`, { headers: { 'x-request-id': 'req-42' } });
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toBe('application/problem+json');
    expect(api.headers.get('x-request-id')).toBe('req-42');
    expect(await api.json()).toMatchObject({ status: 404, request_id: 'req-42' });
  });

  it('answers 503 with Retry-After, not 500, when PostgreSQL does not answer', async () => {
    // Anonymous reads (UPSTREAM_PUBLIC_READ) reach the database; the others are refused before.
    const dead = await createUpstream(settingsFor(DEAD_DATABASE, { UPSTREAM_PUBLIC_READ: 'true' }), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    try {
      for (const path of ['/api/v1/sites', '/api/v1/nodes', '/api/v1/weather/latest']) {
        const res = await dead.app.request(path);
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(await res.json()).toMatchObject({
          status: 503,
          detail: 'the database is not answering; try again shortly',
        });
      }
      const health = await dead.app.request('/health', { headers: OPERATOR });
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'degraded', database: 'unreachable', sites: null });
    } finally {
      await dead.stop();
    }
  });

  it('/health alone reports degraded for a database that does not answer', async () => {
    const pool = openPool(DEAD_DATABASE, { max: 1 });
    const app = new Hono().route(
      '/',
      healthRoutes({
        pool,
        metrics: new UpstreamMetrics({ defaultMetrics: false }),
        version: '1.2.3',
        startedAt: Date.now(),
        downlinkConnections: () => 3,
        metricsToken: new Secret(METRICS_TOKEN),
      }),
    );
    try {
      expect(await (await app.request('/health')).json()).toEqual({ status: 'degraded' });
      const body = await (await app.request('/health', { headers: OPERATOR })).json();
      expect(body).toMatchObject({
        status: 'degraded',
        version: '1.2.3',
        role: 'upstream',
        database: 'unreachable',
        sites: null,
        downlink_connections: 3,
      });
    } finally {
      await pool.end();
    }
  });

  it('refuses to start on a port in use, and stops twice without harm', async () => {
    const clash = await createUpstream(settingsFor(schema.url, { HTTP_PORT: String(upstream.port) }), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    await expect(clash.start()).rejects.toThrow(
      `HTTP_PORT ${upstream.port} on 127.0.0.1 is in use by another program: stop it or set HTTP_PORT`,
    );
    await clash.stop();
    await clash.stop();
  });
});
