/**
 * The upstream's OpenAPI document: a valid OpenAPI 3.0 document, with billing and without; served
 * at /api/v1/openapi.json by a running upstream (real PostgreSQL, real HTTP) to anyone; and every
 * route the upstream serves is in it, and everything in it is served.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpMethod } from '../../../src/http/openapi.js';
import { readVersion } from '../../../src/version.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { UNSERVED_MESSAGING_PATHS, upstreamOpenApiDocument } from '../../../sync/upstream/routes/openapi.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { Conformance, operationsOf } from '../../http/openapi-conformance.js';
import { signedIn } from './helpers.js';

const skip = await skipWithoutPostgres();
const BTCPAY = {
  BTCPAY_URL: 'https://btcpay.example.org',
  BTCPAY_STORE_ID: 'store',
  BTCPAY_API_KEY: 'api-key-of-the-store',
  BTCPAY_WEBHOOK_SECRET: 'webhook-secret-of-the-store',
};

describe('the upstream OpenAPI document', () => {
  it.each([true, false])('is a valid OpenAPI 3.0 document (billing %s)', async (billing) => {
    const doc = upstreamOpenApiDocument('1.2.3', { billing });
    const result = await new Validator().validate(doc as never);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc).toMatchObject({ openapi: '3.0.3', info: { version: '1.2.3' } });
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/api/v1/billing/'))).toBe(billing);
  });
});

describe.skipIf(skip)('the upstream serves its OpenAPI document', () => {
  let schema: TestSchema;
  let dataDir: string;
  let upstream: UpstreamServer;
  let base: string;

  beforeAll(async () => {
    [schema, dataDir] = [await createTestSchema('openapi'), mkdtempSync(join(tmpdir(), 'meshhub-openapi-'))];
    // Billing on, so its routes are served and must be listed too (BTCPay is never called here).
    const env = { PLUGINS: 'billing', ...BTCPAY, UPSTREAM_DATABASE_URL: schema.url, DATA_DIR: dataDir };
    upstream = await createUpstream(loadUpstreamSettings({ ...env, HTTP_PORT: '0' }), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    await upstream.start();
    base = `http://127.0.0.1:${upstream.port}`;
  }, 60_000);

  afterAll(async () => {
    await upstream?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers GET /api/v1/openapi.json without a token', async () => {
    const res = await fetch(`${base}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(
      JSON.parse(JSON.stringify(upstreamOpenApiDocument(readVersion(), { billing: true }))),
    );
  });

  it('lists every API route the upstream serves, and serves every route it lists', async () => {
    const doc = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Parameters<
      typeof operationsOf
    >[0];
    const served = new Set(
      upstream.app.routes
        .filter((r) => r.method !== 'ALL')
        .filter((r) => /^\/(api\/|\.well-known\/|health$|metrics$)/.test(r.path))
        // The documents themselves (the upstream's and billing's own).
        .filter((r) => !/\/openapi\.json$/.test(r.path))
        // Registered with the hub's messaging routes, answered 404 upstream.
        .filter((r) => !UNSERVED_MESSAGING_PATHS.includes(r.path))
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`),
    );
    expect([...served].sort()).toEqual(operationsOf(doc).sort());
    const stream = await fetch(`${base}/api/v1/messages/stream`);
    expect(stream.status).toBe(404);
  });

  it('answers the upstream’s own read and operational routes with statuses and bodies the document lists', async () => {
    const doc = upstreamOpenApiDocument(readVersion(), { billing: true });
    const conformance = new Conformance(doc);
    const authorization = await signedIn(upstream);
    const call = async (
      method: HttpMethod,
      path: string,
      url: string,
      headers: Record<string, string> = {},
    ) => {
      const res = await fetch(`${base}${url}`, { method: method.toUpperCase(), headers });
      const answer = { status: res.status, headers: res.headers, text: await res.text() };
      conformance.check(method, path, answer);
      return answer.status;
    };
    const withToken = { authorization };
    expect(await call('get', '/api/v1/sites', '/api/v1/sites')).toBe(401);
    expect(await call('get', '/api/v1/sites', '/api/v1/sites', withToken)).toBe(200);
    expect(await call('get', '/api/v1/nodes', '/api/v1/nodes?site=north', withToken)).toBe(200);
    expect(await call('get', '/api/v1/nodes', '/api/v1/nodes?site=Not_A_Site', withToken)).toBe(400);
    expect(await call('get', '/api/v1/weather/latest', '/api/v1/weather/latest', withToken)).toBe(200);
    const history =
      '/api/v1/weather/history?node_id=!0000000a&start=2026-10-01T00:00:00Z&end=2026-10-02T00:00:00Z';
    expect(await call('get', '/api/v1/weather/history', history, withToken)).toBe(200);
    expect(await call('get', '/api/v1/weather/history', '/api/v1/weather/history', withToken)).toBe(400);
    expect(await call('get', '/health', '/health')).toBe(200);
    expect(await call('get', '/api/version', '/api/version')).toBe(200);
    expect(await call('get', '/metrics', '/metrics')).toBe(404);
    expect(await call('get', '/api/sync/v1/ping', '/api/sync/v1/ping')).toBe(401);
    expect(await call('post', '/api/v1/live/tickets', '/api/v1/live/tickets', withToken)).toBe(201);
  });
});
