/**
 * Issue 27, "A node page with a year of device health answers like the weather history": one
 * node, one year of 5-minute device health samples (battery, voltage, channel and air
 * utilisation, uptime, SNR, RSSI; ~105k rows written through HealthWriter in batches). Ours: the
 * node page's three queries, `GET /api/v1/nodes/{id}/device-health` with `interval=1d` over the
 * year, `1h` over the last week and `raw` over the last day, all in one page, over real HTTP on
 * loopback, median of N requests. Baseline: the plain SQL a hub without rollups would run: a
 * GROUP BY over the raw rows computing the same means (1d, 1h), and the raw rows themselves
 * (raw), in process, no HTTP. Target: the weather history's for a year of means (1d, and 1h as
 * the weather bench asks), ours ≤ 10% of the baseline; the week and the day read too few rows for
 * any rollup to beat their SQL tenfold, so they must answer within PAGE_BUDGET_MS, the ratio
 * printed beside.
 */
import { Agent } from 'node:http';
import { Hono } from 'hono';
import { HEALTH_COLUMNS, type HealthRow, sampleValues } from '../../src/device-health/columns.js';
import { HealthService } from '../../src/device-health/health-service.js';
import { HealthWriter } from '../../src/device-health/health-writer.js';
import { migrateDeviceHealth } from '../../src/device-health/module.js';
import { healthHistoryRoutes } from '../../src/device-health/routes.js';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { get, serveOnLoopback } from './lib/http.js';
import { prng, tempDir } from './lib/readings.js';
import { absolute, type BenchResult, compare, median } from './report.js';

const NODE = '!0a0b0c0d';
const START = Date.UTC(2024, 0, 1);
const END = Date.UTC(2025, 0, 1);
const STEP = 5 * 60_000;
const DAY = 86_400_000;
const RUNS = 15;
const WARMUP = 3;
/** What one of the node page's small queries may take over HTTP on a Pi-class machine. */
const PAGE_BUDGET_MS = 25;

function seed(db: Database): number {
  migrateDeviceHealth(db);
  const writer = new HealthWriter(db);
  const rand = prng(27);
  let batch: HealthRow[] = [];
  let rows = 0;
  for (let ts = START; ts < END; ts += STEP) {
    const values = sampleValues({
      nodeId: NODE,
      at: ts,
      batteryLevel: Math.round(100 * rand()),
      voltage: Math.round((3.3 + rand()) * 1000) / 1000,
      channelUtilization: Math.round(20 * rand() * 100) / 100,
      airUtilTx: Math.round(3 * rand() * 100) / 100,
      uptimeSeconds: Math.floor((ts - START) / 1000),
    });
    values[5] = Math.round((-20 + 30 * rand()) * 4) / 4;
    values[6] = Math.round(-130 + 60 * rand());
    batch.push({ nodeId: NODE, ts, values });
    if (batch.length === 2000) {
      rows += writer.write(batch);
      batch = [];
    }
  }
  return rows + writer.write(batch);
}

function baselineSql(bucketMs: number | undefined): string {
  if (bucketMs === undefined)
    return `SELECT ts, ${HEALTH_COLUMNS.join(', ')} FROM device_health WHERE node_id = ? AND ts >= ? AND ts < ? ORDER BY ts`;
  return `SELECT (ts / ${bucketMs}) * ${bucketMs} AS bucket, ${HEALTH_COLUMNS.map((c) => `avg(${c})`).join(', ')}
    FROM device_health WHERE node_id = ? AND ts >= ? AND ts < ? GROUP BY ts / ${bucketMs} ORDER BY bucket`;
}

export async function run(): Promise<BenchResult[]> {
  const tmp = tempDir('device-health-history');
  const db = openDatabase(tmp.file('health.db'));
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const rows = seed(db);
    const app = new Hono();
    app.route('/api/v1/nodes/:node_id/device-health', healthHistoryRoutes(new HealthService(db)));
    app.onError(createErrorHandler());
    app.notFound(notFound);
    const server = await serveOnLoopback(app);
    try {
      const results: BenchResult[] = [];
      // The year's means against the weather history's goal; the week and the day read so few
      // rows that no rollup can beat the SQL by 10x (HTTP alone costs more): those must answer
      // within a node page's budget, their ratio to the SQL printed beside.
      const cases = [
        { name: 'a year at 1d', interval: '1d', bucketMs: DAY, from: START, ratio: true },
        { name: 'a year at 1h', interval: '1h', bucketMs: 3_600_000, from: START, ratio: true },
        { name: 'a week at 1h', interval: '1h', bucketMs: 3_600_000, from: END - 7 * DAY, ratio: false },
        { name: 'a day raw', interval: 'raw', bucketMs: undefined, from: END - DAY, ratio: false },
      ];
      for (const c of cases) {
        const statement = db.prepare(baselineSql(c.bucketMs)).raw(true);
        const query = new URLSearchParams({
          start: new Date(c.from).toISOString(),
          end: new Date(END).toISOString(),
          interval: c.interval,
          limit: '10000',
        });
        const url = `${server.url}/api/v1/nodes/${encodeURIComponent(NODE)}/device-health?${query}`;
        const first = await get(agent, url);
        const count = (JSON.parse(first.body.toString('utf8')) as { data: unknown[] }).data.length;
        const expected = statement.all(NODE, c.from, END).length;
        if (first.status !== 200 || count !== expected)
          throw new Error(`device health answered ${first.status} with ${count} rows, expected ${expected}`);
        const base: number[] = [];
        const ours: number[] = [];
        for (let i = 0; i < WARMUP + RUNS; i++) {
          const t0 = performance.now();
          statement.all(NODE, c.from, END);
          const b = performance.now() - t0;
          const t1 = performance.now();
          const res = await get(agent, url);
          const o = performance.now() - t1;
          if (res.status !== 200 || res.body.length !== first.body.length)
            throw new Error('device health changed');
          if (i >= WARMUP) {
            base.push(b);
            ours.push(o);
          }
        }
        const name = `device health ${c.name}: 1 node, a year of 5-min samples (${rows} rows → ${count} ${c.interval === 'raw' ? 'rows' : 'buckets'})`;
        const ourTime = { label: 'GET /device-health over HTTP', value: median(ours), unit: 'ms' };
        const sql = {
          label: c.bucketMs ? 'SQL GROUP BY over raw rows' : 'SQL SELECT of the raw rows',
          value: median(base),
          unit: 'ms',
        };
        const notes = `median of ${RUNS} after ${WARMUP}, alternating; ${sql.label}: ${sql.value.toFixed(2)} ms (ratio ${((ourTime.value / sql.value) * 100).toFixed(0)}%)`;
        results.push(
          c.ratio
            ? compare(name, sql, ourTime, { atMost: 0.1, text: '≤ 10% of baseline time' }, notes)
            : {
                ...absolute(name, ourTime, { atMost: PAGE_BUDGET_MS, text: `≤ ${PAGE_BUDGET_MS} ms` }),
                notes,
              },
        );
      }
      return results;
    } finally {
      await server.close();
    }
  } finally {
    agent.destroy();
    closeDatabase(db);
    tmp.cleanup();
  }
}
