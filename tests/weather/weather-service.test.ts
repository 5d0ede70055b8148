import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Reading } from '../../src/domain/reading.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { BucketCache, CachedRange } from '../../src/weather/bucket-cache.js';
import type { HistoryQuery } from '../../src/weather/weather-reads.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { DAY, HOUR, iso, memoryDb, reading, T0 } from '../store/fixtures.js';

let db: Database;
let writer: ReadingWriter;
let service: WeatherService;

beforeEach(() => {
  db = memoryDb();
  writer = new ReadingWriter(db);
  service = new WeatherService({ db });
});
afterEach(() => closeDatabase(db));

const data = (body: string | Uint8Array) =>
  (JSON.parse(Buffer.from(body).toString()) as { data: Array<Record<string, unknown>> }).data;
const hourly = (q: Partial<HistoryQuery> = {}): HistoryQuery => ({
  nodeId: '!a',
  start: T0,
  end: T0 + 2 * DAY,
  interval: '1h',
  limit: 1000,
  ...q,
});

/** Stores readings and tells the service, as the hub does on `reading.stored`. */
function store(readings: Reading[]): void {
  service.invalidate(writer.write(readings));
}

describe('WeatherService history cache', () => {
  it('answers from the cache until the readings that change a bucket are announced', () => {
    store([reading('!a', T0, { temperatureC: 10 }), reading('!a', T0 + HOUR, { temperatureC: 20 })]);
    expect(data(service.history(hourly()).body).map((r) => r.temperature_c)).toEqual([10, 20]);

    // Stored, not yet announced: the cached answer stands.
    const late = writer.write([reading('!a', T0 + 1, { temperatureC: 11 })]);
    expect(data(service.history(hourly()).body).map((r) => r.temperature_c)).toEqual([10, 20]);

    service.invalidate(late);
    expect(data(service.history(hourly()).body).map((r) => r.temperature_c)).toEqual([10.5, 20]);

    store([reading('!a', T0 + 5 * HOUR, { temperatureC: 30, humidityPercent: 41 })]);
    store([reading('!a', T0 + 5 * HOUR + 1, { humidityPercent: 40 })]);
    expect(data(service.history(hourly()).body)).toEqual([
      { node_id: '!a', timestamp: iso(T0), temperature_c: 10.5 },
      { node_id: '!a', timestamp: iso(T0 + HOUR), temperature_c: 20 },
      { node_id: '!a', timestamp: iso(T0 + 5 * HOUR), temperature_c: 30, humidity_percent: 40.5 },
    ]);
  });

  it('invalidate() without readings forgets every cached bucket', () => {
    store([reading('!a', T0, { temperatureC: 10 })]);
    service.history(hourly());
    writer.write([reading('!a', T0 + 1, { temperatureC: 20 })]);
    service.invalidate();
    expect(data(service.history(hourly()).body)[0]!.temperature_c).toBe(15);
  });

  it('gives the same answers as an uncached service, whatever the order of writes and reads', () => {
    const query = fc.record({
      interval: fc.constantFrom('1h' as const, '1d' as const),
      start: fc.integer({ min: -2 * DAY, max: 4 * DAY }),
      span: fc.integer({ min: 1, max: 5 * DAY }),
      limit: fc.integer({ min: 1, max: 8 }),
      node: fc.constantFrom('!a', '!b'),
    });
    const write = fc.array(
      fc.record({
        node: fc.constantFrom('!a', '!b'),
        at: fc.integer({ min: 0, max: 3 * DAY }),
        t: fc.integer({ min: -20, max: 40 }),
      }),
      { minLength: 1, maxLength: 5 },
    );
    const step = fc.oneof(
      query.map((q) => ({ kind: 'read' as const, q })),
      write.map((w) => ({ kind: 'write' as const, w })),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
        const d = memoryDb();
        try {
          const w = new ReadingWriter(d);
          const cached = new WeatherService({ db: d, cacheBytes: 2_000 }); // small: eviction too
          for (const s of steps) {
            if (s.kind === 'write') {
              cached.invalidate(
                w.write(
                  s.w.map((x) => reading(x.node, T0 + x.at, { temperatureC: x.t, windDirection: x.t * 9 })),
                ),
              );
              continue;
            }
            // Page through with both; the fresh service has an empty cache every time.
            const q: HistoryQuery = {
              nodeId: s.q.node,
              start: T0 + s.q.start,
              end: T0 + s.q.start + s.q.span,
              interval: s.q.interval,
              limit: s.q.limit,
            };
            for (let after: number | undefined, pages = 0; pages < 20; pages++) {
              const page = { ...q, ...(after === undefined ? {} : { after }) };
              const got = cached.history(page);
              const want = new WeatherService({ db: d }).history(page);
              expect(got).toEqual(want);
              if (got.nextAfter === undefined) break;
              after = got.nextAfter;
            }
          }
        } finally {
          closeDatabase(d);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('BucketCache', () => {
  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');
  const range = (from: number, jsons: string[]) => {
    const r = new CachedRange(from, from + jsons.length * 10);
    jsons.forEach((json, i) => {
      r.append(from + i * 10, json);
    });
    return r;
  };

  it('serves any slice of a range as a {"data":[...]} body', () => {
    const r = range(0, ['{"a":1}', '{"b":"é"}', '{"c":3}']);
    expect(text(r.body(0, 3))).toBe('{"data":[{"a":1},{"b":"é"},{"c":3}]}');
    expect(text(r.body(1, 2))).toBe('{"data":[{"b":"é"}]}');
    expect(text(r.body(2, 2))).toBe('{"data":[]}');
  });

  it('evicts the least recently used ranges past its size bound', () => {
    const cache = new BucketCache(10_000);
    const big = () => range(0, ['x'.repeat(1_000)]); // 4 KiB buffers
    cache.set('a', big());
    cache.set('b', big());
    cache.get('a'); // a is now the most recent
    cache.set('c', big());
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('c')).toBeDefined();
    expect(cache.size).toBeLessThanOrEqual(10_000);
  });

  it('truncates a range at a changed bucket', () => {
    const cache = new BucketCache();
    cache.set('k', range(0, ['"a"', '"b"', '"c"', '"d"']));
    cache.truncate('k', 20);
    expect(cache.get('k')).toMatchObject({ from: 0, to: 20, starts: [0, 10] });
    expect(text(cache.get('k')!.body(0, 2))).toBe('{"data":["a","b"]}');
    cache.truncate('k', 25); // beyond the range: nothing cached there
    expect(cache.get('k')?.to).toBe(20);
    cache.get('k')!.append(20, '"z"');
    expect(text(cache.get('k')!.body(0, 3))).toBe('{"data":["a","b","z"]}');
    cache.truncate('k', 0);
    expect(cache.get('k')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
