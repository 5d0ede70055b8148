/**
 * The upstream's read API on a real PostgreSQL, fed by the real BatchApplier (and once by a
 * signed batch over HTTP): /api/v1/sites, /weather/latest, /weather/history and /nodes answer
 * as a hub does for the same readings — the same figures for raw, 1h and 1d, computed by the
 * hub's own WeatherService over the hub's SQLite — with a `site` dimension: a node heard by two
 * sites is listed twice, history defaults to the site that heard the node last, and its cursor
 * stays on that site. Bad parameters are 400 problems, never a 500.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import type { Reading } from '../../../src/domain/reading.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { WeatherService } from '../../../src/weather/weather-service.js';
import type { SyncRecord } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import type { UpstreamServer } from '../../../sync/upstream/main.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { batchSequence, postSignedBatch } from '../helpers/batches.js';
import { nodeBody } from '../helpers/records.js';
import { signedIn, startScratchUpstream } from './helpers.js';

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
type Json = any;

const skip = await skipWithoutPostgres();

const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 9, 1); // 2026-10-01T00:00:00Z
const A = '!0000000a'; // heard by north and south
const B = '!0000000b'; // south only
const C = '!0000000c'; // north only
const iso = (ms: number) => new Date(ms).toISOString();

/** Readings with awkward figures: means that do not terminate, wind around north, gaps in fields. */
function series(nodeId: string, from: number, count: number, stepMs: number, seed: number): Reading[] {
  return Array.from({ length: count }, (_, i) => {
    const r: Reading = {
      nodeId,
      timestamp: from + i * stepMs + ((i * 7919) % 1000),
      temperatureC: 10 + ((i * 7 + seed) % 13) / 3,
      pressurePa: 101_325 + i * 3.3,
      windDirection: (350 + i * 37 + seed) % 360,
      windSpeedMs: ((i + seed) % 9) * 0.7,
    };
    if (i % 2 === 0) r.humidityPercent = 40 + (i % 5) * 1.1;
    if (i % 3 === 0) r.pm25Ugm3 = 3 + i / 7;
    if (i % 4 === 1) r.gasResistanceKohm = 120.5 + i;
    return r;
  });
}

function readingRecord(seq: number, r: Reading): SyncRecord {
  return {
    seq,
    kind: 'reading',
    at: r.timestamp,
    body: {
      node_id: r.nodeId,
      ts: r.timestamp,
      temperature_c: r.temperatureC ?? null,
      humidity_percent: r.humidityPercent ?? null,
      pressure_pa: r.pressurePa ?? null,
      wind_speed_ms: r.windSpeedMs ?? null,
      wind_direction: r.windDirection ?? null,
      pm25_ugm3: r.pm25Ugm3 ?? null,
      pm10_ugm3: r.pm10Ugm3 ?? null,
      gas_resistance_kohm: r.gasResistanceKohm ?? null,
    },
  };
}

function nodeRecord(
  seq: number,
  nodeId: string,
  lastHeard: number,
  extra: { short?: string; long?: string; lat?: number; lon?: number } = {},
): SyncRecord {
  return {
    seq,
    kind: 'node',
    at: lastHeard,
    body: nodeBody(nodeId, lastHeard, {
      short_name: extra.short ?? null,
      long_name: extra.long ?? null,
      hw_model: extra.short ? 'HELTEC_V3' : null,
      latitude: extra.lat ?? null,
      longitude: extra.lon ?? null,
      battery_level: extra.short ? 87 : null,
      snr: extra.short ? 6.25 : null,
    }),
  };
}

/** Per-site sequence numbers, so every batch follows the last. */
const { batchOf, nextSeq } = batchSequence();

describe.skipIf(skip)('upstream read API', () => {
  let schema: TestSchema;
  let dataDir: string;
  let upstream: UpstreamServer;
  let base: string;
  /** A signed-in user's: the reads need one (read-access.test.ts). */
  let authorization: string;
  let applier: BatchApplier;
  let registry: SiteRegistry;
  /** The hub that saw exactly what site "north" saw. */
  let hubDb: Database;
  let hub: WeatherService;
  const northA = series(A, T0, 60, 47 * 60_000, 0);
  const northC = series(C, T0 + 30 * 60_000, 12, 5 * HOUR, 3);
  const southA = series(A, T0 - DAY, 20, 2 * HOUR, 5);
  const southB = series(B, T0, 10, 3 * HOUR, 1);

  async function get(path: string): Promise<{ status: number; headers: Headers; body: Json }> {
    const res = await fetch(`${base}${path}`, { headers: { authorization } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }

  async function apply(siteId: string, make: (seq: () => number) => SyncRecord[]): Promise<void> {
    const outcome = await applier.apply(siteId, batchOf(siteId, make));
    expect(outcome.kind).toBe('applied');
  }

  const withoutSite = (items: Json[]) => items.map(({ site_id: _s, ...rest }: Json) => rest);
  const hubData = (body: string | Uint8Array) => JSON.parse(Buffer.from(body).toString()).data as Json[];

  beforeAll(async () => {
    ({ schema, dataDir, upstream, base } = await startScratchUpstream('read', {
      // Every answer as of its request: these tests apply a batch through another process's
      // applier and read at once. Notified answers (the default) may lag a batch by its
      // notification's delivery time; history-notified.test.ts tests those (a CI run answered
      // here before the notification came, with the listener on).
      UPSTREAM_HISTORY_LISTEN: 'false',
    }));
    authorization = await signedIn(upstream);
    applier = new BatchApplier(upstream.pool);
    registry = new SiteRegistry(upstream.pool);
    const issuer = await LocalIssuer.open(join(dataDir, 'site-keys'));
    for (const siteId of ['north', 'south']) {
      await registry.add({ siteId, name: `Site ${siteId}`, publicJwks: issuer.jwks() });
    }

    // North: node A in two batches (sums added across batches, as the hub's writes add), node C.
    await apply('north', (seq) => [
      nodeRecord(seq(), A, T0 + 2 * DAY, { short: 'NA', long: 'North A', lat: 47.1, lon: 8.5 }),
      ...northA.slice(0, 25).map((r) => readingRecord(seq(), r)),
    ]);
    await apply('north', (seq) => [
      ...northA.slice(25).map((r) => readingRecord(seq(), r)),
      nodeRecord(seq(), C, T0 + 2 * DAY, { short: 'NC' }),
      ...northC.map((r) => readingRecord(seq(), r)),
    ]);
    // South: node A heard last (by last_heard), node B without position.
    await apply('south', (seq) => [
      nodeRecord(seq(), A, T0 + 4 * DAY, { short: 'SA' }),
      ...southA.map((r) => readingRecord(seq(), r)),
      nodeRecord(seq(), B, T0 + DAY),
      ...southB.map((r) => readingRecord(seq(), r)),
    ]);

    hubDb = openDatabase(':memory:');
    const writer = new ReadingWriter(hubDb);
    writer.write(northA.slice(0, 25));
    writer.write([...northA.slice(25), ...northC]);
    hub = new WeatherService({ db: hubDb });
  });

  afterAll(async () => {
    await upstream?.stop();
    if (hubDb) closeDatabase(hubDb);
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  describe('GET /api/v1/weather/history', () => {
    const start = T0 - DAY;
    const end = T0 + 5 * DAY;
    const query = (params: Record<string, string>) =>
      `/api/v1/weather/history?${new URLSearchParams({ node_id: A, start: iso(start), end: iso(end), ...params })}`;

    it.each(['raw', '1h', '1d'] as const)(
      'interval=%s gives the hub figures for the same readings',
      async (interval) => {
        const expected = hubData(hub.history({ nodeId: A, start, end, interval, limit: 10_000 }).body);
        const res = await get(query({ interval, site: 'north', limit: '10000' }));
        expect(res.status).toBe(200);
        expect(res.headers.get('link')).toBeNull();
        expect(res.body.data.every((r: Json) => r.site_id === 'north')).toBe(true);
        expect(withoutSite(res.body.data)).toEqual(expected);
        expect(expected.length).toBeGreaterThanOrEqual(interval === '1d' ? 2 : 20);
      },
    );

    it.each(['raw', '1h'] as const)(
      'interval=%s pages with limit and a Link cursor as the hub does',
      async (interval) => {
        // The hub's pages of 7, walked with its own `after`.
        const hubPages: Json[][] = [];
        let after: number | undefined;
        for (;;) {
          const page = hub.history({
            nodeId: A,
            start,
            end,
            interval,
            limit: 7,
            ...(after === undefined ? {} : { after }),
          });
          hubPages.push(hubData(page.body));
          if (page.nextAfter === undefined) break;
          after = page.nextAfter;
        }
        const pages: Json[][] = [];
        let next: string | undefined = query({ interval, site: 'north', limit: '7' });
        while (next) {
          const res = await get(next);
          expect(res.status).toBe(200);
          pages.push(withoutSite(res.body.data));
          const link = res.headers.get('link');
          next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
          if (next) expect(new URL(next, base).searchParams.get('site')).toBe('north');
        }
        expect(pages).toEqual(hubPages);
        expect(pages.length).toBeGreaterThan(2);
      },
    );

    it('shows a late reading another upstream process applied, in a bucket this one had cached', async () => {
      // This process caches the series (tests/sync/upstream: the server's own read queries).
      const before = await get(query({ interval: '1h', site: 'north', limit: '10000' }));
      expect(before.status).toBe(200);
      // A reading from the site's past arrives through another process's applier (the test's
      // own BatchApplier: the server hears nothing of it but what PostgreSQL holds).
      const late: Reading = { nodeId: A, timestamp: T0 + 10 * 60_000, temperatureC: 99.5 };
      await apply('north', (seq) => [readingRecord(seq(), late)]);
      new ReadingWriter(hubDb).write([late]);
      hub.invalidate([late]);
      const expected = hubData(hub.history({ nodeId: A, start, end, interval: '1h', limit: 10_000 }).body);
      const after = await get(query({ interval: '1h', site: 'north', limit: '10000' }));
      expect(withoutSite(after.body.data)).toEqual(expected);
      const bucket = (body: Json) => body.data.find((r: Json) => r.timestamp === iso(T0));
      expect(bucket(after.body).temperature_c).not.toBe(bucket(before.body).temperature_c);
      // A batch without readings leaves the cached buckets as they are, and they stay right.
      await apply('north', (seq) => [nodeRecord(seq(), C, T0 + 2 * DAY, { short: 'NC' })]);
      expect(
        withoutSite((await get(query({ interval: '1h', site: 'north', limit: '10000' }))).body.data),
      ).toEqual(expected);
    });

    it('without site reads the site that heard the node most recently', async () => {
      const res = await get(query({ interval: 'raw' }));
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBe(southA.length);
      expect(res.body.data.every((r: Json) => r.site_id === 'south')).toBe(true);
      expect(res.body.data.map((r: Json) => r.timestamp)).toEqual(southA.map((r) => iso(r.timestamp)));
    });

    it('keeps a walk on the site its cursor was made for, even when another site hears the node meanwhile', async () => {
      const D = '!0000000d';
      const north = series(D, T0, 6, HOUR, 2);
      const south = series(D, T0, 6, HOUR, 4);
      await apply('north', (seq) => [
        nodeRecord(seq(), D, T0 + DAY),
        ...north.map((r) => readingRecord(seq(), r)),
      ]);
      await apply('south', (seq) => [
        nodeRecord(seq(), D, T0 + 2 * DAY),
        ...south.map((r) => readingRecord(seq(), r)),
      ]);
      const params = new URLSearchParams({ node_id: D, start: iso(T0), end: iso(T0 + DAY), limit: '4' });
      const first = await get(`/api/v1/weather/history?${params}`);
      expect(first.body.data.map((r: Json) => r.site_id)).toEqual(['south', 'south', 'south', 'south']);
      const link = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link')!)![1]!;

      await apply('north', (seq) => [nodeRecord(seq(), D, T0 + 3 * DAY)]);
      const second = await get(link);
      expect(second.body.data.map((r: Json) => [r.site_id, r.temperature_c])).toEqual(
        south.slice(4).map((r) => ['south', r.temperatureC]),
      );
      // The next walk starts on the site that heard it last now.
      const again = await get(`/api/v1/weather/history?${params}`);
      expect(again.body.data[0].site_id).toBe('north');

      const cursor = new URL(link, base).searchParams.get('cursor')!;
      const mixed = await get(`/api/v1/weather/history?${params}&site=north&cursor=${cursor}`);
      expect(mixed.status).toBe(400);
      expect(mixed.body.errors).toEqual([
        { field: 'cursor', message: 'belongs to site=south, not site=north' },
      ]);
    });

    it('answers an unknown node or site with an empty list', async () => {
      for (const extra of [{ node_id: '!0badf00d' }, { site: 'nowhere' }] as Record<string, string>[]) {
        const res = await get(query({ ...extra }));
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: [] });
      }
    });
  });

  describe('GET /api/v1/weather/latest', () => {
    it('for one site equals the hub that saw the same readings, plus site_id', async () => {
      const res = await get('/api/v1/weather/latest?site=north');
      expect(res.status).toBe(200);
      expect(res.body.data.every((r: Json) => r.site_id === 'north')).toBe(true);
      const expected = JSON.parse(hub.latestJson()).data;
      expect(withoutSite(res.body.data).filter((r: Json) => r.node_id !== '!0000000d')).toEqual(expected);
    });

    it('lists a node heard by two sites once per site, ordered by node_id then site_id', async () => {
      const all = await get('/api/v1/weather/latest');
      expect(all.status).toBe(200);
      const pairs = all.body.data.map((r: Json) => [r.node_id, r.site_id]);
      expect(pairs.filter(([n]: string[]) => n !== '!0000000d')).toEqual([
        [A, 'north'],
        [A, 'south'],
        [B, 'south'],
        [C, 'north'],
      ]);
      const one = await get(`/api/v1/weather/latest?node_id=${encodeURIComponent(A)}`);
      expect(one.body.data.map((r: Json) => r.site_id)).toEqual(['north', 'south']);
      const last = southA.at(-1)!;
      expect(one.body.data[1]).toMatchObject({
        node_id: A,
        site_id: 'south',
        timestamp: iso(last.timestamp),
      });
    });
  });

  describe('GET /api/v1/nodes', () => {
    it('lists each site’s record of a node, the hub’s fields with site_id, unknown fields left out', async () => {
      const res = await get('/api/v1/nodes');
      expect(res.status).toBe(200);
      const listed = res.body.data.filter((n: Json) => n.node_id !== '!0000000d');
      expect(listed).toEqual([
        {
          node_id: A,
          site_id: 'north',
          short_name: 'NA',
          long_name: 'North A',
          hw_model: 'HELTEC_V3',
          latitude: 47.1,
          longitude: 8.5,
          last_heard: iso(T0 + 2 * DAY),
          battery_level: 87,
          snr: 6.25,
        },
        {
          node_id: A,
          site_id: 'south',
          short_name: 'SA',
          hw_model: 'HELTEC_V3',
          last_heard: iso(T0 + 4 * DAY),
          battery_level: 87,
          snr: 6.25,
        },
        { node_id: B, site_id: 'south', last_heard: iso(T0 + DAY) },
        {
          node_id: C,
          site_id: 'north',
          short_name: 'NC',
          hw_model: 'HELTEC_V3',
          last_heard: iso(T0 + 2 * DAY),
          battery_level: 87,
          snr: 6.25,
        },
      ]);
      const south = await get('/api/v1/nodes?site=south');
      expect(
        south.body.data.filter((n: Json) => n.node_id !== '!0000000d').map((n: Json) => n.node_id),
      ).toEqual([A, B]);
    });
  });

  describe('GET /api/v1/sites', () => {
    it('tells each site’s cursor, contact, lag and node count', async () => {
      const before = Date.now();
      const res = await get('/api/v1/sites');
      const after = Date.now();
      expect(res.status).toBe(200);
      const north = res.body.data.find((s: Json) => s.site_id === 'north');
      expect(Object.keys(north).sort()).toEqual(
        [
          'acked_seq',
          'last_batch_at',
          'last_contact_at',
          'lag_s',
          'name',
          'node_count',
          'revoked',
          'site_id',
          'stopped_at',
        ].sort(),
      );
      expect(north).toMatchObject({
        name: 'Site north',
        acked_seq: nextSeq.get('north')! - 1,
        revoked: false,
      });
      expect(north.node_count).toBeGreaterThanOrEqual(2);
      expect(Date.parse(north.last_batch_at)).toBeGreaterThan(0);
      // Direct applies are no signed request: no contact recorded.
      expect(north.last_contact_at).toBeNull();
      // The newest record north sent is one of its readings, or a node record of at most T0 + 3 d.
      const newestReading = Math.max(...northA.map((r) => r.timestamp), ...northC.map((r) => r.timestamp));
      expect(north.lag_s).toBeGreaterThanOrEqual(Math.floor((before - (T0 + 3 * DAY)) / 1000) - 1);
      expect(north.lag_s).toBeLessThanOrEqual(Math.ceil((after - newestReading) / 1000) + 1);
      expect(res.body.data.map((s: Json) => s.site_id)).toEqual(
        [...res.body.data.map((s: Json) => s.site_id)].sort(),
      );
    });

    it('shows a site that pushed a signed batch over HTTP, and a revoked one', async () => {
      const issuer = await LocalIssuer.open(join(dataDir, 'east-key'));
      await registry.add({ siteId: 'east', publicJwks: issuer.jwks() });
      const fresh = await get('/api/v1/sites');
      expect(fresh.body.data.find((s: Json) => s.site_id === 'east')).toEqual({
        site_id: 'east',
        name: null,
        last_contact_at: null,
        stopped_at: null,
        last_batch_at: null,
        lag_s: null,
        acked_seq: 0,
        node_count: 0,
        revoked: false,
      });

      const batch = batchOf('east', (seq) => [nodeRecord(seq(), '!000000ee', Date.now() - 5_000)]);
      const posted = await postSignedBatch(base, issuer, batch, 'east');
      expect(posted.status).toBe(200);

      await registry.revoke('south');
      const res = await get('/api/v1/sites');
      const east = res.body.data.find((s: Json) => s.site_id === 'east');
      expect(east).toMatchObject({ acked_seq: 1, node_count: 1, revoked: false });
      expect(typeof east.last_contact_at).toBe('string');
      expect(typeof east.last_batch_at).toBe('string');
      expect(east.lag_s).toBeGreaterThanOrEqual(4);
      expect(res.body.data.find((s: Json) => s.site_id === 'south').revoked).toBe(true);
      await registry.add({ siteId: 'south', publicJwks: issuer.jwks() });
    });
  });

  describe('bad query parameters', () => {
    const history = (params: Record<string, string>) =>
      `/api/v1/weather/history?${new URLSearchParams({ node_id: A, start: iso(T0), end: iso(T0 + DAY), ...params })}`;
    const cases: Array<[string, string, string[]]> = [
      [
        'history without node_id',
        `/api/v1/weather/history?start=${iso(T0)}&end=${iso(T0 + DAY)}`,
        ['node_id'],
      ],
      ['history with a bad start', history({ start: 'yesterday' }), ['start']],
      ['history with end before start', history({ end: iso(T0 - 1) }), ['end']],
      ['history with an unknown interval', history({ interval: '2h' }), ['interval']],
      ['history with limit 0', history({ limit: '0' }), ['limit']],
      ['history with a limit too large', history({ limit: '10001' }), ['limit']],
      ['history with a made-up cursor', history({ cursor: 'eyJ2IjoxfQ' }), ['cursor']],
      ['history with a bad site', history({ site: 'North Site' }), ['site']],
      ['latest with a bad site', '/api/v1/weather/latest?site=%E2%9C%93', ['site']],
      ['latest with an empty node_id', '/api/v1/weather/latest?node_id=', ['node_id']],
      ['nodes with a bad site', '/api/v1/nodes?site=-x', ['site']],
    ];
    it.each(cases)('%s is a 400 problem naming the field', async (_name, path, fields) => {
      const res = await get(path);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400 });
      expect(typeof res.body.request_id).toBe('string');
      expect(res.body.errors.map((e: Json) => e.field)).toEqual(fields);
    });

    it('a cursor of another interval is a 400 naming cursor', async () => {
      const first = await get(history({ site: 'north', limit: '2' }));
      const cursor = new URL(/^<([^>]+)>/.exec(first.headers.get('link')!)![1]!, base).searchParams.get(
        'cursor',
      )!;
      const res = await get(history({ site: 'north', interval: '1h', cursor }));
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([
        { field: 'cursor', message: 'belongs to interval=raw, not interval=1h' },
      ]);
    });
  });
});
