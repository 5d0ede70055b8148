import fc from 'fast-check';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { weatherRoutes } from '../../src/weather/routes.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { DAY, HOUR, iso, memoryDb, reading, T0 } from '../store/fixtures.js';

let db: Database;
let writer: ReadingWriter;
let service: WeatherService;
let app: Hono;

beforeEach(() => {
  db = memoryDb();
  writer = new ReadingWriter(db);
  service = new WeatherService({ db });
  app = new Hono();
  app.route('/api/v1/weather', weatherRoutes(service));
  app.onError(createErrorHandler());
  app.notFound(notFound);
});
afterEach(() => closeDatabase(db));

type ApiReading = Record<string, string | number>;
type Body = { data: ApiReading[]; errors?: Array<{ field: string; message: string }> };

async function getJson(
  path: string,
): Promise<{ status: number; type: string | null; link: string | null; body: Body }> {
  const res = await app.request(path);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    link: res.headers.get('link'),
    body: (await res.json()) as Body,
  };
}

function history(params: Record<string, string>): string {
  return `/api/v1/weather/history?${new URLSearchParams(params)}`;
}

describe('GET /api/v1/weather/latest', () => {
  beforeEach(() => {
    writer.write([
      reading('!b', T0 + 2_000, { temperatureC: 20, windDirection: 359.6 }),
      reading('!a', T0 + 5_000, { humidityPercent: 40 }),
      reading('!a', T0 + 1_000, { temperatureC: 12.5, pressurePa: 101_000, humidityPercent: 10 }),
      reading('!b', T0 + 3_000, { temperatureC: 0 }),
    ]);
    service.invalidate();
  });

  it('answers every node, ordered by node_id, each field its newest value and timestamp the newest', async () => {
    const res = await getJson('/api/v1/weather/latest');
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/json');
    expect(res.body).toEqual({
      data: [
        {
          node_id: '!a',
          timestamp: iso(T0 + 5_000),
          temperature_c: 12.5,
          humidity_percent: 40,
          pressure_pa: 101_000,
        },
        // 0 °C is a value; wind direction is a whole number of degrees in [0, 360).
        { node_id: '!b', timestamp: iso(T0 + 3_000), temperature_c: 0, wind_direction: 0 },
      ],
    });
    expect(res.body.data[0]!.timestamp).toBe('2025-05-01T00:00:05.000Z');
  });

  it('answers one node, and an empty list for an unknown one', async () => {
    expect((await getJson('/api/v1/weather/latest?node_id=!b')).body.data.map((r) => r.node_id)).toEqual([
      '!b',
    ]);
    const unknown = await getJson('/api/v1/weather/latest?node_id=!nobody');
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ data: [] });
  });

  it('serves the cached body until invalidated', async () => {
    expect((await getJson('/api/v1/weather/latest')).body.data).toHaveLength(2);
    writer.write([reading('!c', T0, { temperatureC: 1 })]);
    expect((await getJson('/api/v1/weather/latest')).body.data).toHaveLength(2);
    service.invalidate();
    expect((await getJson('/api/v1/weather/latest')).body.data.map((r) => r.node_id)).toEqual([
      '!a',
      '!b',
      '!c',
    ]);
  });

  it('ignores unknown query parameters', async () => {
    expect((await getJson('/api/v1/weather/latest?foo=bar')).body.data).toHaveLength(2);
  });
});

describe('GET /api/v1/weather/history?interval=raw', () => {
  const MINUTE = 60_000;

  beforeEach(() => {
    // 25 readings a minute apart, plus one of another node in the same window.
    writer.write([
      ...Array.from({ length: 25 }, (_, i) =>
        reading('!a', T0 + i * MINUTE, { temperatureC: i, windDirection: 10 * i }),
      ),
      reading('!b', T0 + MINUTE, { temperatureC: 99 }),
    ]);
  });

  it('answers readings in [start, end), ascending, with absent metrics omitted', async () => {
    const res = await getJson(
      history({ node_id: '!a', start: iso(T0 + 2 * MINUTE), end: iso(T0 + 5 * MINUTE) }),
    );
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/json');
    expect(res.link).toBeNull();
    expect(res.body).toEqual({
      data: [2, 3, 4].map((i) => ({
        node_id: '!a',
        timestamp: iso(T0 + i * MINUTE),
        temperature_c: i,
        wind_direction: 10 * i,
      })),
    });
  });

  it('accepts start and end with any offset', async () => {
    // 2025-05-01T02:02:00+02:00 is 00:02Z.
    const res = await getJson(
      history({ node_id: '!a', start: '2025-05-01T02:02:00+02:00', end: '2025-04-30T20:04:00.000-04:00' }),
    );
    expect(res.body.data.map((r) => r.temperature_c)).toEqual([2, 3]);
  });

  it('pages with limit and a Link rel="next" cursor, repeating the parameters, until the end', async () => {
    const seen: number[] = [];
    let path: string | null = history({ node_id: '!a', start: iso(T0), end: iso(T0 + DAY), limit: '10' });
    const links: string[] = [];
    while (path) {
      const res = await getJson(path);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['data']);
      seen.push(...res.body.data.map((r) => r.temperature_c as number));
      if (!res.link) break;
      links.push(res.link);
      const m = /^<([^>]+)>; rel="next"$/.exec(res.link);
      expect(m).not.toBeNull();
      path = m![1]!;
    }
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(links).toHaveLength(2);
    const next = new URL(links[0]!.slice(1, links[0]!.indexOf('>')), 'http://hub');
    expect(next.pathname).toBe('/api/v1/weather/history');
    expect(Object.fromEntries(next.searchParams)).toEqual({
      node_id: '!a',
      start: iso(T0),
      end: iso(T0 + DAY),
      interval: 'raw',
      limit: '10',
      cursor: expect.stringMatching(/^[A-Za-z0-9_-]+$/),
    });
  });

  it('gives no Link when the page holds exactly the rest', async () => {
    const res = await getJson(history({ node_id: '!a', start: iso(T0), end: iso(T0 + DAY), limit: '25' }));
    expect(res.body.data).toHaveLength(25);
    expect(res.link).toBeNull();
  });

  it('answers an unknown node with an empty list', async () => {
    const res = await getJson(history({ node_id: '!nobody', start: iso(T0), end: iso(T0 + DAY) }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });
});

describe('GET /api/v1/weather/history?interval=1h|1d', () => {
  beforeEach(() => {
    writer.write([
      reading('!a', T0 + 10 * 60_000, {
        temperatureC: 10,
        humidityPercent: 40,
        windDirection: 350,
        windSpeedMs: 2,
      }),
      reading('!a', T0 + 50 * 60_000, { temperatureC: 20, windDirection: 10, windSpeedMs: 4 }),
      reading('!a', T0 + HOUR - 1, { temperatureC: 0 }),
      reading('!a', T0 + HOUR, { temperatureC: 30, pm25Ugm3: 5 }),
      reading('!a', T0 + 3 * HOUR + 1, { temperatureC: 1.1 }),
      reading('!a', T0 + 3 * HOUR + 2, { temperatureC: 1.2 }),
      reading('!a', T0 + DAY + 5, { temperatureC: 50, windDirection: 90 }),
      reading('!a', T0 + DAY + 6, { windDirection: 270 }),
    ]);
  });

  it('answers one object per UTC hour with each field the mean and wind direction the circular mean', async () => {
    const res = await getJson(
      history({ node_id: '!a', start: iso(T0 + 30 * 60_000), end: iso(T0 + 2 * DAY), interval: '1h' }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        // The bucket holding start is included whole: buckets start in [floor(start), end).
        {
          node_id: '!a',
          timestamp: iso(T0),
          temperature_c: 10,
          humidity_percent: 40,
          wind_speed_ms: 3,
          wind_direction: 0, // 350° and 10° average to north, not to 180°
        },
        { node_id: '!a', timestamp: iso(T0 + HOUR), temperature_c: 30, pm25_ugm3: 5 },
        { node_id: '!a', timestamp: iso(T0 + 3 * HOUR), temperature_c: 1.15 },
        // 90° and 270° cancel out: no mean direction exists, so none is given.
        { node_id: '!a', timestamp: iso(T0 + DAY), temperature_c: 50 },
      ],
    });
  });

  it('answers one object per UTC day', async () => {
    const res = await getJson(
      history({ node_id: '!a', start: iso(T0), end: iso(T0 + 2 * DAY), interval: '1d' }),
    );
    expect(res.body.data).toEqual([
      {
        node_id: '!a',
        timestamp: '2025-05-01T00:00:00.000Z',
        temperature_c: expect.closeTo((10 + 20 + 0 + 30 + 1.1 + 1.2) / 6, 6),
        humidity_percent: 40,
        wind_speed_ms: 3,
        wind_direction: 0,
        pm25_ugm3: 5,
      },
      { node_id: '!a', timestamp: '2025-05-02T00:00:00.000Z', temperature_c: 50 },
    ]);
  });

  it('leaves out buckets that start at or after end', async () => {
    const res = await getJson(
      history({ node_id: '!a', start: iso(T0), end: iso(T0 + HOUR), interval: '1h' }),
    );
    expect(res.body.data.map((r) => r.timestamp)).toEqual([iso(T0)]);
    const days = await getJson(
      history({ node_id: '!a', start: iso(T0 + 1), end: iso(T0 + DAY), interval: '1d' }),
    );
    expect(days.body.data.map((r) => r.timestamp)).toEqual([iso(T0)]);
  });

  it('pages buckets too, with a cursor bound to the interval', async () => {
    const first = await getJson(
      history({ node_id: '!a', start: iso(T0), end: iso(T0 + 2 * DAY), interval: '1h', limit: '3' }),
    );
    expect(first.body.data.map((r) => r.timestamp)).toEqual([iso(T0), iso(T0 + HOUR), iso(T0 + 3 * HOUR)]);
    const next = first.link!.slice(1, first.link!.indexOf('>'));
    const second = await getJson(next);
    expect(second.body.data.map((r) => r.timestamp)).toEqual([iso(T0 + DAY)]);
    expect(second.link).toBeNull();

    // The same cursor on interval=raw is refused.
    const raw = await getJson(next.replace('interval=1h', 'interval=raw'));
    expect(raw.status).toBe(400);
    expect(raw.body.errors).toEqual([{ field: 'cursor', message: expect.stringContaining('interval=1h') }]);
  });

  it('reads buckets from the rollup tables, not from raw rows', async () => {
    db.prepare('DELETE FROM readings').run(); // as after retention
    const res = await getJson(
      history({ node_id: '!a', start: iso(T0), end: iso(T0 + 2 * DAY), interval: '1d' }),
    );
    expect(res.body.data).toHaveLength(2);
  });
});

describe('every metric under its spec name', () => {
  it('in latest, raw and bucket answers alike', async () => {
    const metrics = {
      temperatureC: 1.5,
      humidityPercent: 2.5,
      pressurePa: 3.5,
      windSpeedMs: 4.5,
      windDirection: 45,
      pm25Ugm3: 6.5,
      pm10Ugm3: 7.5,
      gasResistanceKohm: 8.5,
    };
    writer.write([reading('!a', T0, metrics)]);
    const expected = {
      node_id: '!a',
      timestamp: iso(T0),
      temperature_c: 1.5,
      humidity_percent: 2.5,
      pressure_pa: 3.5,
      wind_speed_ms: 4.5,
      wind_direction: 45,
      pm25_ugm3: 6.5,
      pm10_ugm3: 7.5,
      gas_resistance_kohm: 8.5,
    };
    expect((await getJson('/api/v1/weather/latest')).body.data).toEqual([expected]);
    for (const interval of ['raw', '1h', '1d']) {
      const res = await getJson(history({ node_id: '!a', start: iso(T0), end: iso(T0 + 1), interval }));
      expect(res.body.data).toEqual([expected]);
    }
  });
});

describe('GET /api/v1/weather/history: bad input', () => {
  const ok = { node_id: '!a', start: iso(T0), end: iso(T0 + DAY) };
  const cursorOf = (payload: unknown) => Buffer.from(JSON.stringify(payload)).toString('base64url');

  const ISO = 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z';
  const LIMIT = 'must be an integer from 1 to 10000';
  const CURSOR = 'is not a cursor this API issued';
  // [case, query, field, the exact message the client gets]
  const cases: Array<[string, Record<string, string>, string, string]> = [
    ['no node_id', { start: ok.start, end: ok.end }, 'node_id', 'is required'],
    ['empty node_id', { ...ok, node_id: '' }, 'node_id', 'must not be empty'],
    ['overlong node_id', { ...ok, node_id: 'x'.repeat(129) }, 'node_id', 'must be at most 128 characters'],
    ['no start', { node_id: '!a', end: ok.end }, 'start', 'is required'],
    ['no end', { node_id: '!a', start: ok.start }, 'end', 'is required'],
    ['start as a date only', { ...ok, start: '2025-05-01' }, 'start', ISO],
    ['start without an offset', { ...ok, start: '2025-05-01T00:00:00' }, 'start', ISO],
    ['start in epoch ms', { ...ok, start: String(T0) }, 'start', ISO],
    ['start as words', { ...ok, start: 'yesterday' }, 'start', ISO],
    ['start on a day that does not exist', { ...ok, start: '2025-02-30T00:00:00Z' }, 'start', ISO],
    ['end not ISO 8601', { ...ok, end: 'Thu, 01 May 2025 00:00:00 GMT' }, 'end', ISO],
    ['end before start', { ...ok, end: iso(T0 - 1) }, 'end', 'must be after start'],
    ['end equal to start', { ...ok, end: ok.start }, 'end', 'must be after start'],
    ['unknown interval', { ...ok, interval: '5m' }, 'interval', 'must be one of raw, 1h, 1d'],
    ['empty interval', { ...ok, interval: '' }, 'interval', 'must be one of raw, 1h, 1d'],
    ['limit 0', { ...ok, limit: '0' }, 'limit', LIMIT],
    ['limit above 10000', { ...ok, limit: '10001' }, 'limit', LIMIT],
    ['negative limit', { ...ok, limit: '-1' }, 'limit', LIMIT],
    ['fractional limit', { ...ok, limit: '1.5' }, 'limit', LIMIT],
    ['limit as words', { ...ok, limit: 'ten' }, 'limit', LIMIT],
    ['limit in exponent form', { ...ok, limit: '1e3' }, 'limit', LIMIT],
    ['malformed cursor', { ...ok, cursor: 'not a cursor!' }, 'cursor', CURSOR],
    ['cursor of garbage', { ...ok, cursor: Buffer.from('garbage').toString('base64url') }, 'cursor', CURSOR],
    ['cursor with a bad position', { ...ok, cursor: cursorOf({ v: 1, i: 'raw', a: 'x' }) }, 'cursor', CURSOR],
    [
      'cursor of another interval',
      { ...ok, cursor: cursorOf({ v: 1, i: '1d', a: T0 }) },
      'cursor',
      'belongs to interval=1d, not interval=raw',
    ],
  ];

  it.each(cases)('%s → 400 naming the field', async (_name, params, field, message) => {
    const res = await app.request(history(params));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: `invalid ${field}`,
      errors: [{ field, message }],
    });
  });

  it('names every bad field at once', async () => {
    const res = await app.request(history({ start: 'x', interval: 'weekly', limit: '0' }));
    const body = (await res.json()) as { errors: Array<{ field: string }> };
    expect(body.errors.map((e) => e.field).sort()).toEqual(['end', 'interval', 'limit', 'node_id', 'start']);
  });

  it('latest with an empty node_id → 400 naming node_id', async () => {
    const res = await app.request('/api/v1/weather/latest?node_id=');
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(((await res.json()) as { errors: Array<{ field: string }> }).errors[0]!.field).toBe('node_id');
  });

  it('ignores unknown parameters', async () => {
    const res = await app.request(history({ ...ok, colour: 'blue' }));
    expect(res.status).toBe(200);
  });

  it('never answers random query strings with a 5xx', async () => {
    writer.write([reading('!a', T0, { temperatureC: 1 })]);
    const key = fc.constantFrom('node_id', 'start', 'end', 'interval', 'limit', 'cursor', 'x');
    const value = fc.oneof(
      fc.string(),
      fc.constantFrom(
        'raw',
        '1h',
        '1d',
        '!a',
        iso(T0),
        iso(T0 + DAY),
        '0',
        '10000',
        '-0',
        '1e309',
        '%',
        '%ZZ',
        '\u0000',
      ),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.integer().map(String),
      fc.base64String(),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(key, value), { maxLength: 8 }), fc.string(), async (pairs, junk) => {
        const query = new URLSearchParams(pairs).toString() + (junk ? `&${junk}` : '');
        const res = await app.request(`/api/v1/weather/history?${query}`);
        expect(res.status).toBeLessThan(500);
        const type = res.headers.get('content-type');
        expect(type === 'application/json' || type === 'application/problem+json').toBe(true);
        await res.json(); // always a JSON body
      }),
      { numRuns: 400 },
    );
  });
});
