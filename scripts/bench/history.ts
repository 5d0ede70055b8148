/**
 * History reads: one node, one year of 5-minute readings (~105k rows written through
 * ReadingWriter). Ours: GET /api/v1/weather/history?interval=1h (and 1d), all in one page
 * (limit=10000), over real HTTP on loopback, median of N requests — it reads the rollup tables.
 * Baseline: the plain SQL a hub without rollups would run, a GROUP BY over the raw rows computing
 * the same means (wind direction's circular mean included), median of N runs, in process with no
 * HTTP at all. Target: ours ≤ 10% of the baseline's time, for each interval.
 */
import { Agent } from 'node:http';
import { Hono } from 'hono';
import type { Reading } from '../../src/domain/reading.js';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { weatherRoutes } from '../../src/weather/routes.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { get, historyQuery, serveOnLoopback } from './lib/http.js';
import { prng, tempDir } from './lib/readings.js';
import { type BenchResult, compare, median } from './report.js';

export const NODE = '!0a0b0c0d';
export const START = Date.UTC(2024, 0, 1);
export const END = Date.UTC(2025, 0, 1);
const STEP = 5 * 60_000;
const RUNS = 15;
const WARMUP = 3;

export function seed(db: Database): number {
  const writer = new ReadingWriter(db);
  const rand = prng(7);
  let batch: Reading[] = [];
  let rows = 0;
  for (let ts = START; ts < END; ts += STEP) {
    batch.push({
      nodeId: NODE,
      timestamp: ts,
      temperatureC: Math.round((5 + 20 * rand()) * 100) / 100,
      humidityPercent: Math.round((30 + 60 * rand()) * 10) / 10,
      pressurePa: Math.round(95_000 + 8_000 * rand()),
      windSpeedMs: Math.round(150 * rand()) / 10,
      windDirection: Math.floor(360 * rand()),
      pm25Ugm3: Math.round(40 * rand()),
      pm10Ugm3: Math.round(60 * rand()),
      gasResistanceKohm: Math.round(5_000 * rand()) / 10,
    });
    if (batch.length === 2000) {
      rows += writer.write(batch).length;
      batch = [];
    }
  }
  rows += writer.write(batch).length;
  return rows;
}

export function baselineSql(bucketMs: number): string {
  return `
    SELECT (ts / ${bucketMs}) * ${bucketMs} AS bucket,
      avg(temperature_c), avg(humidity_percent), avg(pressure_pa), avg(wind_speed_ms),
      (cast(round(degrees(atan2(sum(sin(radians(wind_direction))), sum(cos(radians(wind_direction)))))) AS INTEGER) + 360) % 360,
      avg(pm25_ugm3), avg(pm10_ugm3), avg(gas_resistance_kohm)
    FROM readings WHERE node_id = ? AND ts >= ? AND ts < ?
    GROUP BY ts / ${bucketMs} ORDER BY bucket`;
}

/**
 * Median time to the last byte of the response, with node:http as the client (the client's JSON
 * parse is not the server's work, so it is checked once, outside the timing).
 */
async function timeRequests(
  url: string,
  expected: number,
  beforeEach: () => void,
): Promise<{ cold: number; warm: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const t = performance.now();
    const check = await get(agent, url);
    const cold = performance.now() - t;
    const buckets = (JSON.parse(check.body.toString('utf8')) as { data: unknown[] }).data.length;
    if (check.status !== 200 || buckets !== expected) {
      throw new Error(`history answered ${check.status} with ${buckets} buckets, expected ${expected}`);
    }
    const times: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      beforeEach();
      const t0 = performance.now();
      const res = await get(agent, url);
      const ms = performance.now() - t0;
      if (res.status !== 200 || res.body.length !== check.body.length)
        throw new Error(`history answered ${res.status}`);
      if (i >= WARMUP) times.push(ms);
    }
    return { cold, warm: median(times) };
  } finally {
    agent.destroy();
  }
}

function timeBaseline(db: Database, bucketMs: number): { ms: number; buckets: number } {
  const statement = db.prepare(baselineSql(bucketMs)).raw(true);
  const times: number[] = [];
  let buckets = 0;
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const t0 = performance.now();
    buckets = statement.all(NODE, START, END).length;
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  return { ms: median(times), buckets };
}

export async function run(): Promise<BenchResult[]> {
  const tmp = tempDir('history');
  const db = openDatabase(tmp.file('history.db'));
  try {
    const rows = seed(db);
    const app = new Hono();
    const service = new WeatherService({ db });
    app.route('/api/v1/weather', weatherRoutes(service));
    app.onError(createErrorHandler());
    app.notFound(notFound);
    const server = await serveOnLoopback(app);
    try {
      const results: BenchResult[] = [];
      for (const [interval, bucketMs] of [
        ['1h', 3_600_000],
        ['1d', 86_400_000],
      ] as const) {
        const base = timeBaseline(db, bucketMs);
        const query = historyQuery(NODE, START, END, interval);
        // As on a live hub: a reading lands in the newest bucket between any two requests.
        const newest: Reading = { nodeId: NODE, timestamp: END - STEP, temperatureC: 20 };
        const ours = await timeRequests(`${server.url}/api/v1/weather/history?${query}`, base.buckets, () =>
          service.invalidate([newest]),
        );
        results.push(
          compare(
            `history ${interval}: 1 node, 1 year of 5-min data (${rows} rows → ${base.buckets} buckets)`,
            { label: 'SQL GROUP BY over raw rows (in process)', value: base.ms, unit: 'ms' },
            { label: 'GET /history over HTTP (rollups)', value: ours.warm, unit: 'ms' },
            { atMost: 0.1, text: '≤ 10% of baseline time' },
            `median of ${RUNS} after ${WARMUP} warm-up, the newest bucket invalidated before each; ` +
              `first request (empty cache): ${ours.cold.toFixed(1)} ms`,
          ),
        );
      }
      return results;
    } finally {
      await server.close();
    }
  } finally {
    closeDatabase(db);
    tmp.cleanup();
  }
}
