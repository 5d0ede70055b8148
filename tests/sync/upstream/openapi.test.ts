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
import { readVersion } from '../../../src/version.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { UNSERVED_MESSAGING_PATHS, upstreamOpenApiDocument } from '../../../sync/upstream/routes/openapi.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { operationsOf } from '../../http/openapi-conformance.js';

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
});
