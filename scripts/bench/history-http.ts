/**
 * Issue 17, "The ingest path against its goal": a year of history at `interval=1h` (8,761
 * buckets, `limit=10000`) from outside. One node's year of 5-minute readings is written through
 * ReadingWriter into a database file, `meshhub start` (dist/hub/cli.js, RADIO=none) serves it, and
 * this process asks `GET /api/v1/weather/history` over HTTP on loopback (keep-alive, median of
 * RUNS after WARMUP). Baseline: the raw SQL GROUP BY over the same rows (history.ts's), on the same
 * file, in this process, median of as many runs. Target: ours ≤ 10% of the baseline's time.
 */
import { Agent } from 'node:http';
import { join } from 'node:path';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { baselineSql, END, NODE, seed } from './history.js';
import { get, historyQuery } from './lib/http.js';
import { startHub, tempData } from './lib/hub-process.js';
import { type BenchResult, compare, median } from './report.js';

const RUNS = 21;
const WARMUP = 5;
const HOUR = 3_600_000;
/** 365 days back from the end of the data, not on an hour: 8,761 hourly buckets. */
const FROM = END - 365 * 86_400_000 - HOUR / 2;

export async function run(): Promise<BenchResult[]> {
  const data = tempData('history-http');
  try {
    const file = join(data.dir, 'meshhub.sqlite');
    const seeded = openDatabase(file);
    const rows = seed(seeded);
    closeDatabase(seeded);

    const hub = await startHub({ how: 'cli', dataDir: data.dir });
    const db = openDatabase(file, { migrate: false });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const statement = db.prepare(baselineSql(HOUR)).raw(true);
      const query = historyQuery(NODE, FROM, END, '1h');
      const url = `${hub.url}/api/v1/weather/history?${query}`;
      const t = performance.now();
      const first = await get(agent, url);
      const cold = performance.now() - t;
      const buckets = (JSON.parse(first.body.toString('utf8')) as { data: unknown[] }).data.length;
      const expected = statement.all(NODE, Math.floor(FROM / HOUR) * HOUR, END).length;
      if (first.status !== 200 || buckets !== expected)
        throw new Error(`history answered ${first.status} with ${buckets} buckets, expected ${expected}`);
      const base: number[] = [];
      const ours: number[] = [];
      // Alternating, so both sides see the same moments of a shared machine.
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const t0 = performance.now();
        statement.all(NODE, Math.floor(FROM / HOUR) * HOUR, END);
        const b = performance.now() - t0;
        const t1 = performance.now();
        const res = await get(agent, url);
        const o = performance.now() - t1;
        if (res.status !== 200 || res.body.length !== first.body.length) throw new Error('history changed');
        if (i >= WARMUP) {
          base.push(b);
          ours.push(o);
        }
      }
      return [
        compare(
          `history 1h from outside: 1 node, a year of 5-min data (${rows} rows → ${buckets} buckets)`,
          { label: 'SQL GROUP BY over raw rows (in the bench process)', value: median(base), unit: 'ms' },
          { label: 'GET /history from meshhub start over HTTP', value: median(ours), unit: 'ms' },
          { atMost: 0.1, text: '≤ 10% of baseline time' },
          `median of ${RUNS} after ${WARMUP}, alternating; first request ${cold.toFixed(1)} ms; ` +
            `body ${(first.body.length / 1e6).toFixed(2)} MB`,
        ),
      ];
    } finally {
      agent.destroy();
      closeDatabase(db);
      await hub.stop();
    }
  } finally {
    data.cleanup();
  }
}
