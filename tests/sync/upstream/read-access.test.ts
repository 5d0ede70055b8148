/**
 * Who may read the upstream (README "The upstream's reads"), over real HTTP on a real
 * PostgreSQL: every read route answers 401 problem details without a valid bearer token and 200
 * with a signed-in user's; the live stream also takes a single-use ticket; with
 * UPSTREAM_PUBLIC_READ=true anonymous callers read node positions rounded to 0.01° (no
 * altitude), on the API and on the live stream, while signed-in callers get them exact;
 * /metrics needs UPSTREAM_METRICS_TOKEN and /health tells anonymous callers only liveness.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { createUpstream, type UpstreamServer } from '../../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { postSignedBatch } from '../helpers/batches.js';
import { liveEvents, signedIn } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
type Json = any;

const skip = await skipWithoutPostgres();
const T0 = Date.UTC(2026, 10, 20, 8, 0, 0);
const NODE = '!0000000a';
const METRICS_TOKEN = 'prometheus-scrapes-with-this-secret-0123456789';
const EXACT = { latitude: 47.376_887, longitude: 8.541_694, altitude: 412 };
const COARSE = { latitude: 47.38, longitude: 8.54 };
const START = new Date(T0 - 86_400_000).toISOString();
const END = new Date(T0 + 86_400_000).toISOString();

const READ_ROUTES = [
  '/api/v1/nodes',
  '/api/v1/nodes?site=north',
  '/api/v1/sites',
  '/api/v1/weather/latest',
  `/api/v1/weather/history?${new URLSearchParams({ node_id: NODE, start: START, end: END })}`,
];

function nodeBody(lastHeard: number, position: { latitude: number; longitude: number; altitude: number }) {
  return {
    node_num: 10,
    node_id: NODE,
    short_name: 'A',
    long_name: 'Alice in the field',
    hw_model: 'HELTEC_V3',
    ...position,
    last_heard: lastHeard,
    battery_level: 80,
    snr: 6.5,
    updated_at: lastHeard,
  };
}

describe.skipIf(skip)('the upstream’s reads', () => {
  let schema: TestSchema;
  let dir: string;
  let closed: UpstreamServer;
  let open: UpstreamServer;
  let site: LocalIssuer;
  let authorization: string;
  let seq = 1;

  const url = (upstream: UpstreamServer, path: string) => `http://127.0.0.1:${upstream.port}${path}`;

  async function get(upstream: UpstreamServer, path: string, headers: Record<string, string> = {}) {
    const res = await fetch(url(upstream, path), { headers });
    const text = await res.text();
    const json = res.headers.get('content-type')?.includes('json') && text ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, body: json as Json, text };
  }

  /** A batch from site north through `upstream`'s sync endpoint (so its live stream hears it). */
  async function push(upstream: UpstreamServer, records: unknown[]): Promise<void> {
    const first = seq;
    const numbered = records.map((r) => ({ ...(r as object), seq: seq++ }));
    const batch = {
      protocol: 1,
      site_id: 'north',
      first_seq: first,
      last_seq: seq - 1,
      records: numbered,
      dropped: [],
      sent_at: Date.now(),
    };
    const res = await postSignedBatch(url(upstream, ''), site, batch);
    expect(res.status, await res.text()).toBe(200);
  }

  beforeAll(async () => {
    schema = await createTestSchema('reads');
    dir = mkdtempSync(join(tmpdir(), 'meshhub-upstream-reads-'));
    const settings = (extra: Record<string, string>) =>
      loadUpstreamSettings({
        UPSTREAM_DATABASE_URL: schema.url,
        HTTP_PORT: '0',
        // Both processes share the signing key, as processes behind one load balancer must.
        DATA_DIR: join(dir, 'up'),
        WEB_ROOT: join(dir, 'no-web'),
        UPSTREAM_HISTORY_LISTEN: 'false',
        ...extra,
      });
    closed = await createUpstream(settings({ UPSTREAM_METRICS_TOKEN: METRICS_TOKEN }), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    await closed.start();
    open = await createUpstream(settings({ UPSTREAM_PUBLIC_READ: 'true' }), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
    });
    await open.start();
    site = await LocalIssuer.open(join(dir, 'site'));
    await new SiteRegistry(closed.pool).add({ siteId: 'north', publicJwks: site.jwks() });
    authorization = await signedIn(closed);
    await push(closed, [
      { kind: 'node', at: T0, body: nodeBody(T0, EXACT) },
      {
        kind: 'readings',
        at: T0,
        body: { rows: [[NODE, T0, 20.5, 50, null, null, null, null, null, null]] },
      },
    ]);
  });

  afterAll(async () => {
    await closed?.stop();
    await open?.stop();
    await schema?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('by default (UPSTREAM_PUBLIC_READ unset)', () => {
    it.each([...READ_ROUTES, '/api/v1/live'])('GET %s without a token is a 401 problem', async (path) => {
      const res = await get(closed, path);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
      expect(res.body).toMatchObject({ status: 401, title: 'Unauthorized' });
      expect(res.text).not.toContain('47.3');
    });

    it.each([...READ_ROUTES, '/api/v1/live'])(
      'GET %s with a token that is not valid is a 401',
      async (path) => {
        const res = await get(closed, path, { authorization: `${authorization.slice(0, -4)}AAAA` });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
      },
    );

    it.each(READ_ROUTES)('GET %s with a signed-in user’s token is a 200', async (path) => {
      const res = await get(closed, path, { authorization });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeGreaterThan(0);
    });

    it('gives a signed-in user exact positions', async () => {
      const res = await get(closed, '/api/v1/nodes', { authorization });
      expect(res.body.data).toEqual([expect.objectContaining({ node_id: NODE, site_id: 'north', ...EXACT })]);
    });

    it('opens the live stream with a token, or once with a ticket that only a token gets', async () => {
      const withHeader = await liveEvents(url(closed, '/api/v1/live'), { authorization });
      await withHeader.next('hello');
      await withHeader.close();

      expect((await fetch(url(closed, '/api/v1/live/tickets'), { method: 'POST' })).status).toBe(401);
      const issued = await fetch(url(closed, '/api/v1/live/tickets'), {
        method: 'POST',
        headers: { authorization },
      });
      expect(issued.status).toBe(201);
      expect(issued.headers.get('cache-control')).toBe('no-store');
      const { ticket, expires_in } = (await issued.json()) as { ticket: string; expires_in: number };
      expect(expires_in).toBe(30);
      // A ticket is not a bearer token anywhere else.
      expect((await get(closed, '/api/v1/nodes', { authorization: `Bearer ${ticket}` })).status).toBe(401);

      const live = await liveEvents(url(closed, `/api/v1/live?ticket=${ticket}`));
      expect(await live.next('hello')).toMatchObject({ mode: 'upstream' });
      await live.close();
      const again = await get(closed, `/api/v1/live?ticket=${ticket}`);
      expect(again.status).toBe(401);
      expect(again.body.detail).toBe('the live ticket is unknown, used or expired');
      expect((await get(closed, '/api/v1/live?ticket=made-up')).status).toBe(401);
    });

    it('says in /api/version that reading needs a sign-in', async () => {
      const res = await get(closed, '/api/version');
      expect(res.body).toEqual({ version: expect.any(String), role: 'upstream', public_read: false });
    });
  });

  describe('with UPSTREAM_PUBLIC_READ=true', () => {
    it('lets anonymous callers read, with positions rounded to 0.01° and no altitude', async () => {
      for (const path of READ_ROUTES) expect((await get(open, path)).status).toBe(200);
      const res = await get(open, '/api/v1/nodes');
      expect(res.body.data).toEqual([
        {
          node_id: NODE,
          site_id: 'north',
          short_name: 'A',
          long_name: 'Alice in the field',
          hw_model: 'HELTEC_V3',
          ...COARSE,
          last_heard: new Date(T0).toISOString(),
          battery_level: 80,
          snr: 6.5,
        },
      ]);
      expect(res.text).not.toContain('47.376');
      expect((await get(open, '/api/version')).body.public_read).toBe(true);
    });

    it('gives signed-in callers exact positions, and still refuses a bad token', async () => {
      const res = await get(open, '/api/v1/nodes', { authorization });
      expect(res.body.data).toEqual([expect.objectContaining(EXACT)]);
      expect((await get(open, '/api/v1/nodes', { authorization: 'Bearer nope.nope.nope' })).status).toBe(401);
    });

    it('streams coarsened nodes to anonymous callers and exact ones to signed-in callers', async () => {
      const anonymous = await liveEvents(url(open, '/api/v1/live'));
      const signed = await liveEvents(url(open, '/api/v1/live'), { authorization });
      try {
        await anonymous.next('hello');
        await signed.next('hello');
        const moved = { latitude: 47.401_234, longitude: 8.555_55, altitude: 430 };
        await push(open, [{ kind: 'node', at: T0 + 60_000, body: nodeBody(T0 + 60_000, moved) }]);
        const exact = (await signed.next('node')) as Json;
        expect(exact).toMatchObject(moved);
        const coarse = (await anonymous.next('node')) as Json;
        expect(coarse).toMatchObject({ node_id: NODE, latitude: 47.4, longitude: 8.56 });
        expect(coarse).not.toHaveProperty('altitude');
      } finally {
        await anonymous.close();
        await signed.close();
      }
    });
  });

  describe('/metrics and /health', () => {
    it('refuses /metrics without UPSTREAM_METRICS_TOKEN as a bearer token', async () => {
      const none = await get(closed, '/metrics');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
      expect(none.text).not.toContain('meshhub_upstream_');
      expect((await get(closed, '/metrics', { authorization })).status).toBe(401);
      expect((await get(closed, '/metrics', { authorization: `Bearer ${METRICS_TOKEN}x` })).status).toBe(401);
      const scraped = await get(closed, '/metrics', { authorization: `Bearer ${METRICS_TOKEN}` });
      expect(scraped.status).toBe(200);
      expect(scraped.text).toContain('meshhub_upstream_sites{state="active"} 1');
    });

    it('serves no /metrics at all while UPSTREAM_METRICS_TOKEN is unset', async () => {
      const res = await get(open, '/metrics');
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('meshhub_upstream_');
    });

    it('tells anonymous callers of /health only whether the upstream is up', async () => {
      expect((await get(closed, '/health')).body).toEqual({ status: 'ok' });
      expect((await get(closed, '/health', { authorization })).body).toEqual({ status: 'ok' });
      const detail = await get(closed, '/health', { authorization: `Bearer ${METRICS_TOKEN}` });
      expect(detail.body).toMatchObject({ status: 'ok', role: 'upstream', database: 'ok', sites: 1 });
    });
  });
});
