import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HEALTH_SLOTS, type HealthRow, linkValues, sampleValues } from '../../src/device-health/columns.js';
import { HealthService } from '../../src/device-health/health-service.js';
import { HealthWriter } from '../../src/device-health/health-writer.js';
import { deleteHealthOlderThan, migrateDeviceHealth } from '../../src/device-health/module.js';
import { healthHistoryRoutes, healthLatestRoutes } from '../../src/device-health/routes.js';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { weatherRoutes } from '../../src/weather/routes.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { DAY, HOUR, iso, memoryDb, T0 } from '../store/fixtures.js';

const NODE = '!0000abcd';
let db: Database;
let writer: HealthWriter;
let app: Hono;
let service: HealthService;

beforeEach(() => {
  db = memoryDb();
  migrateDeviceHealth(db);
  writer = new HealthWriter(db);
  service = new HealthService(db);
  app = new Hono();
  app.route('/api/v1/nodes/:node_id/device-health', healthHistoryRoutes(service));
  app.route('/api/v1/device-health', healthLatestRoutes(service));
  app.route('/api/v1/weather', weatherRoutes(new WeatherService({ db })));
  app.onError(createErrorHandler());
  app.notFound(notFound);
});
afterEach(() => closeDatabase(db));

/** Status, Link, content type and JSON body of a request to the routes. */
async function get(path: string) {
  const res = await app.request(path);
  const [link, type] = [res.headers.get('link'), res.headers.get('content-type')];
  // biome-ignore lint/suspicious/noExplicitAny: response bodies of several shapes
  const body: any = await res.json();
  return { status: res.status, link, type, body };
}

function history(params: Record<string, string>, node = NODE): string {
  return `/api/v1/nodes/${encodeURIComponent(node)}/device-health?${new URLSearchParams(params)}`;
}

function device(
  ts: number,
  fields: { batteryLevel?: number; voltage?: number; uptimeSeconds?: number },
): HealthRow {
  return { nodeId: NODE, ts, values: sampleValues({ nodeId: NODE, at: ts, ...fields }) };
}

describe('GET /api/v1/nodes/{node_id}/device-health', () => {
  it('answers raw samples ascending, each with only the fields it carried (0 % battery included)', async () => {
    writer.write([
      device(T0 + 2_000, { batteryLevel: 0, voltage: 3.3 }),
      device(T0 + 1_000, { batteryLevel: 55, uptimeSeconds: 10 }),
      { nodeId: NODE, ts: T0 + 3_000, values: linkValues(-6.5, -112) },
    ]);
    const res = await get(history({ start: iso(T0), end: iso(T0 + HOUR) }));
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/json');
    expect(res.body.data).toEqual([
      { node_id: NODE, timestamp: iso(T0 + 1_000), battery_level: 55, uptime_seconds: 10 },
      { node_id: NODE, timestamp: iso(T0 + 2_000), battery_level: 0, voltage: 3.3 },
      { node_id: NODE, timestamp: iso(T0 + 3_000), snr: -6.5, rssi: -112 },
    ]);
  });

  it('hourly and daily means follow the weather readings’ rule exactly', async () => {
    const values = [12.5, 0, 99, 47.25, 3, 64];
    const times = values.map((_, i) => T0 + i * 25 * 60_000 + (i > 3 ? DAY : 0));
    writer.write(values.map((v, i) => device(times[i]!, { batteryLevel: v })));
    new ReadingWriter(db).write(
      values.map((v, i) => ({ nodeId: NODE, timestamp: times[i]!, temperatureC: v })),
    );
    for (const interval of ['1h', '1d']) {
      const range = { start: iso(T0), end: iso(T0 + 3 * DAY), interval };
      const health = await get(history(range));
      const weather = await get(
        `/api/v1/weather/history?${new URLSearchParams({ ...range, node_id: NODE })}`,
      );
      expect(health.status).toBe(200);
      expect(health.body.data.length).toBeGreaterThan(1);
      expect(health.body.data.map((b: Record<string, unknown>) => [b.timestamp, b.battery_level])).toEqual(
        weather.body.data.map((b: Record<string, unknown>) => [b.timestamp, b.temperature_c]),
      );
    }
    const daily = await get(history({ start: iso(T0), end: iso(T0 + 3 * DAY), interval: '1d' }));
    expect(daily.body.data[0]).toEqual({ node_id: NODE, timestamp: iso(T0), battery_level: 39.6875 });
  });

  it('counts a replayed sample once in the rollups and fills only the fields a row lacked', async () => {
    writer.write([device(T0, { batteryLevel: 40 })]);
    writer.write([device(T0, { batteryLevel: 90, voltage: 3.9 }), device(T0, { batteryLevel: 40 })]);
    const hourly = await get(history({ start: iso(T0), end: iso(T0 + HOUR), interval: '1h' }));
    expect(hourly.body.data).toEqual([
      { node_id: NODE, timestamp: iso(T0), battery_level: 40, voltage: 3.9 },
    ]);
  });

  it('a bucket read before a new sample in it shows the new mean once the sample is stored', async () => {
    const range = { start: iso(T0), end: iso(T0 + DAY), interval: '1h' };
    writer.write([device(T0, { batteryLevel: 40 })]);
    expect((await get(history(range))).body.data[0].battery_level).toBe(40);
    const late = [device(T0 + 60_000, { batteryLevel: 60 })];
    writer.write(late);
    service.stored(late);
    expect((await get(history(range))).body.data[0].battery_level).toBe(50);
  });

  it('pages with limit and a Link cursor, and the pages add up to the whole', async () => {
    writer.write(Array.from({ length: 7 }, (_, i) => device(T0 + i * HOUR, { batteryLevel: i })));
    for (const interval of ['raw', '1h']) {
      const seen: number[] = [];
      let path: string | undefined = history({ start: iso(T0), end: iso(T0 + DAY), interval, limit: '3' });
      let pages = 0;
      while (path) {
        const res = await get(path);
        expect(res.status).toBe(200);
        expect(res.body.data.length).toBeLessThanOrEqual(3);
        seen.push(...res.body.data.map((s: { battery_level: number }) => s.battery_level));
        pages++;
        path = res.link ? /<([^>]+)>/.exec(res.link)![1] : undefined;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);
    }
  });

  it('an unknown node is an empty list', async () => {
    const res = await get(history({ start: iso(T0), end: iso(T0 + DAY) }, '!ffff0000'));
    expect(res).toMatchObject({ status: 200, body: { data: [] } });
  });

  it.each([
    [{ start: iso(T0), end: iso(T0 + DAY) }, 'not-a-node', 'node_id'],
    [{ end: iso(T0 + DAY) }, NODE, 'start'],
    [{ start: 'yesterday', end: iso(T0 + DAY) }, NODE, 'start'],
    [{ start: iso(T0), end: iso(T0) }, NODE, 'end'],
    [{ start: iso(T0), end: iso(T0 + DAY), interval: '5m' }, NODE, 'interval'],
    [{ start: iso(T0), end: iso(T0 + DAY), limit: '0' }, NODE, 'limit'],
    [{ start: iso(T0), end: iso(T0 + DAY), limit: '10001' }, NODE, 'limit'],
    [{ start: iso(T0), end: iso(T0 + DAY), cursor: 'bogus' }, NODE, 'cursor'],
  ])('answers 400 naming the field for %j on %s', async (params, node, field) => {
    writer.write([device(T0, { batteryLevel: 1 })]);
    const before = db.prepare('SELECT count(*) FROM device_health').pluck().get();
    const res = await get(history(params as Record<string, string>, node));
    expect(res.status).toBe(400);
    expect(res.type).toContain('application/problem+json');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(db.prepare('SELECT count(*) FROM device_health').pluck().get()).toBe(before);
  });

  it('refuses a cursor of another interval', async () => {
    writer.write(Array.from({ length: 3 }, (_, i) => device(T0 + i * HOUR, { batteryLevel: i })));
    const first = await get(history({ start: iso(T0), end: iso(T0 + DAY), interval: '1h', limit: '1' }));
    const cursor = new URL(/<([^>]+)>/.exec(first.link!)![1]!, 'http://x').searchParams.get('cursor')!;
    const res = await get(history({ start: iso(T0), end: iso(T0 + DAY), interval: 'raw', cursor }));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toBe('cursor');
  });
});

describe('GET /api/v1/device-health/latest', () => {
  it('gives each node its newest value of every field, ordered by node_id', async () => {
    writer.write([
      device(T0 + 5_000, { batteryLevel: 70 }),
      device(T0 + 1_000, { batteryLevel: 99, voltage: 4.1 }),
      { nodeId: '!00000001', ts: T0, values: linkValues(4, -90) },
    ]);
    const res = await get('/api/v1/device-health/latest');
    expect(res.body.data).toEqual([
      { node_id: '!00000001', timestamp: iso(T0), snr: 4, rssi: -90 },
      { node_id: NODE, timestamp: iso(T0 + 5_000), battery_level: 70, voltage: 4.1 },
    ]);
    const one = await get(`/api/v1/device-health/latest?node_id=${encodeURIComponent(NODE)}`);
    expect(one.body.data).toHaveLength(1);
    expect((await get('/api/v1/device-health/latest?node_id=x')).status).toBe(400);
  });
});

describe('retention', () => {
  it('deletes raw samples older than the cutoff and keeps the rollups', async () => {
    writer.write([device(T0, { batteryLevel: 10 }), device(T0 + 2 * DAY, { batteryLevel: 30 })]);
    const deleted = await deleteHealthOlderThan(db, T0 + DAY);
    expect(deleted).toBe(1);
    const raw = await get(history({ start: iso(T0), end: iso(T0 + 3 * DAY) }));
    expect(raw.body.data.map((s: { battery_level: number }) => s.battery_level)).toEqual([30]);
    const daily = await get(history({ start: iso(T0), end: iso(T0 + 3 * DAY), interval: '1d' }));
    expect(daily.body.data.map((s: { battery_level: number }) => s.battery_level)).toEqual([10, 30]);
  });
});

it('a sample row has a slot for every column', () => {
  expect(sampleValues({ nodeId: NODE, at: T0 })).toHaveLength(HEALTH_SLOTS);
});

describe('a renumbered node (README "Nodes that change their number")', () => {
  const NEW = '!7e57c0de';
  it('takes its device health along: samples merged, means over both ids, the newer latest value', async () => {
    writer.write([
      device(T0 + 1_000, { batteryLevel: 80, uptimeSeconds: 100 }),
      device(T0 + 2_000, { batteryLevel: 60 }),
      { nodeId: NEW, ts: T0 + 2_000, values: sampleValues({ nodeId: NEW, at: T0 + 2_000, voltage: 3.9 }) },
      {
        nodeId: NEW,
        ts: T0 + 3_000,
        values: sampleValues({ nodeId: NEW, at: T0 + 3_000, batteryLevel: 40 }),
      },
    ]);
    expect(
      (await get(history({ start: iso(T0), end: iso(T0 + HOUR), interval: '1h' }))).body.data,
    ).toHaveLength(1);
    expect(writer.renumber(NODE, NEW)).toBe(2);
    service.moved();
    const raw = await get(history({ start: iso(T0), end: iso(T0 + HOUR) }, NEW));
    expect(raw.body.data).toEqual([
      { node_id: NEW, timestamp: iso(T0 + 1_000), battery_level: 80, uptime_seconds: 100 },
      { node_id: NEW, timestamp: iso(T0 + 2_000), battery_level: 60, voltage: 3.9 },
      { node_id: NEW, timestamp: iso(T0 + 3_000), battery_level: 40 },
    ]);
    const hourly = await get(history({ start: iso(T0), end: iso(T0 + HOUR), interval: '1h' }, NEW));
    expect(hourly.body.data[0].battery_level).toBeCloseTo(60, 9);
    expect((await get(history({ start: iso(T0), end: iso(T0 + HOUR), interval: '1h' }))).body.data).toEqual(
      [],
    );
    const latest = await get(`/api/v1/device-health/latest?node_id=${encodeURIComponent(NEW)}`);
    expect(latest.body.data[0]).toMatchObject({
      node_id: NEW,
      battery_level: 40,
      voltage: 3.9,
      uptime_seconds: 100,
    });
    expect(
      (await get('/api/v1/device-health/latest')).body.data.map((r: { node_id: string }) => r.node_id),
    ).toEqual([NEW]);
  });
});
