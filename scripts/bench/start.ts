/**
 * Issue 17, start to healthy with a 1 GB database: `meshhub start` (dist/hub/cli.js, RADIO=none)
 * from spawn to the first `GET /health` answering 200, on a database of about 1 GB (raw rows of
 * 500 nodes, their hourly and daily rollups and latest rows, written by SQL in the bench; kept
 * between runs in the OS temp folder as meshhub-bench-start-1g-v<schema>.sqlite, delete it to
 * regenerate). Baseline: a bare process that loads better-sqlite3, Hono and @hono/node-server,
 * opens the same file and answers /health with a query, from spawn to its first 200. Median of
 * 3 starts each, alternating. Target: ours ≤ 2 s.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { freePort, root, sleep, startHub, tempData } from './lib/hub-process.js';
import { type BenchResult, compare, median } from './report.js';

const TARGET_BYTES = Number(process.env.START_BENCH_BYTES ?? 1e9);
const ROUNDS = 3;
const NODES = 500;

/** Fills a fresh database with raw rows by SQL until it is about TARGET_BYTES, then its rollups. */
function generate(file: string): void {
  const partial = `${file}.partial`;
  rmSync(partial, { force: true });
  const db = openDatabase(partial);
  try {
    const start = Date.UTC(2024, 0, 1);
    // One node at a time: 5-minute readings, every metric, a few decimals, as sensors send them.
    const insert = db.prepare(`
      WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1)
      INSERT INTO readings (node_id, ts, temperature_c, humidity_percent, pressure_pa, wind_speed_ms,
        wind_direction, pm25_ugm3, pm10_ugm3, gas_resistance_kohm)
      SELECT ?, ? + i * 300000, round(5 + (abs(random()) % 2000) / 100.0, 2), round(30 + (abs(random()) % 600) / 10.0, 1),
        95000 + abs(random()) % 8000, (abs(random()) % 150) / 10.0, abs(random()) % 360, abs(random()) % 40,
        abs(random()) % 60, (abs(random()) % 5000) / 10.0
      FROM k`);
    const perNode = 105_408; // a year
    for (let n = 0; n < NODES; n++) {
      const node = `!${(0x3000_0000 + n).toString(16)}`;
      db.transaction(() => insert.run(perNode, node, start + n * 1000))();
      const size = statSync(partial).size;
      if (size >= TARGET_BYTES * 0.85) break;
    }
    const sums = (bucket: number) => `
      SELECT node_id, (ts / ${bucket}) * ${bucket},
        coalesce(sum(temperature_c), 0), count(temperature_c), coalesce(sum(humidity_percent), 0), count(humidity_percent),
        coalesce(sum(pressure_pa), 0), count(pressure_pa), coalesce(sum(wind_speed_ms), 0), count(wind_speed_ms),
        coalesce(sum(pm25_ugm3), 0), count(pm25_ugm3), coalesce(sum(pm10_ugm3), 0), count(pm10_ugm3),
        coalesce(sum(gas_resistance_kohm), 0), count(gas_resistance_kohm),
        coalesce(sum(sin(radians(wind_direction))), 0), coalesce(sum(cos(radians(wind_direction))), 0), count(wind_direction)
      FROM readings GROUP BY node_id, ts / ${bucket}`;
    const cols = `node_id, bucket_start, temperature_c_sum, temperature_c_count, humidity_percent_sum, humidity_percent_count,
      pressure_pa_sum, pressure_pa_count, wind_speed_ms_sum, wind_speed_ms_count, pm25_ugm3_sum, pm25_ugm3_count,
      pm10_ugm3_sum, pm10_ugm3_count, gas_resistance_kohm_sum, gas_resistance_kohm_count,
      wind_direction_sin_sum, wind_direction_cos_sum, wind_direction_count`;
    db.exec(`INSERT INTO readings_hourly (${cols}) ${sums(3_600_000)}`);
    db.exec(`INSERT INTO readings_daily (${cols}) ${sums(86_400_000)}`);
    db.exec(`INSERT INTO readings_latest (node_id, ts, temperature_c, temperature_c_ts)
      SELECT node_id, max(ts), 20, max(ts) FROM readings GROUP BY node_id`);
  } finally {
    closeDatabase(db);
  }
  renameSync(partial, file);
}

async function bareStart(file: string): Promise<number> {
  const port = await freePort();
  const code = `
    const Database = require('better-sqlite3');
    const { Hono } = require('hono');
    const { serve } = require('@hono/node-server');
    const db = new Database(${JSON.stringify(file)});
    db.pragma('journal_mode = WAL');
    const app = new Hono();
    app.get('/health', (c) => c.json({ status: 'ok', v: db.pragma('user_version', { simple: true }) }));
    serve({ fetch: app.fetch, hostname: '127.0.0.1', port: ${port} });
  `;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-e', code], { cwd: root, stdio: 'ignore' });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return performance.now() - t0;
      if (child.exitCode !== null) throw new Error('the bare process exited');
      await sleep(20);
    }
  } finally {
    child.kill('SIGKILL');
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = join(tmpdir(), 'meshhub-bench-start');
  mkdirSync(dir, { recursive: true });
  const source = join(dir, `1g-v${MIGRATIONS.length}.sqlite`);
  if (!existsSync(source)) {
    process.stderr.write(
      `  generating ${(TARGET_BYTES / 1e9).toFixed(1)} GB database (kept as ${source})...\n`,
    );
    generate(source);
  }
  const bytes = statSync(source).size;
  const data = tempData('start');
  const hubFile = join(data.dir, 'meshhub.sqlite');
  const bare: number[] = [];
  const ours: number[] = [];
  try {
    copyFileSync(source, hubFile);
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await bareStart(hubFile));
      const hub = await startHub({ how: 'cli', dataDir: data.dir });
      ours.push(hub.healthyAfterMs);
      const code = await hub.stop('SIGTERM');
      if (code !== 0) throw new Error(`the hub stopped with ${code}`);
    }
  } finally {
    data.cleanup();
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join('/');
  const result = compare(
    `start to healthy, ${(bytes / 1e9).toFixed(2)} GB database`,
    { label: 'bare better-sqlite3 + Hono on the same file', value: median(bare), unit: 'ms' },
    { label: 'meshhub start to /health 200', value: median(ours), unit: 'ms' },
    { text: 'ours ≤ 2000 ms' },
    `median of ${ROUNDS}; bare ${fmt(bare)} ms, ours ${fmt(ours)} ms (the file is in the OS page cache)`,
  );
  return [{ ...result, pass: median(ours) <= 2000 }];
}
