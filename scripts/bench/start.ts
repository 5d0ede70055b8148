/**
 * Issue 17, start to healthy with a 1 GB database: `meshhub start` (dist/hub/cli.js, RADIO=none)
 * from spawn to the first `GET /health` answering 200, on a database of about 1 GB (raw rows of
 * 500 nodes, their hourly and daily rollups and latest rows: lib/year-database.ts; kept
 * between runs in the OS temp folder as meshhub-bench-start-1g-v<schema>.sqlite, delete it to
 * regenerate). Baseline: a bare process that loads better-sqlite3, Hono and @hono/node-server,
 * opens the same file and answers /health with a query, from spawn to its first 200. Median of
 * 3 starts each, alternating. Target: ours ≤ 2 s.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { freePort, root, sleep, startHub, tempData } from './lib/hub-process.js';
import { generateYearDatabase } from './lib/year-database.js';
import { type BenchResult, compare, median } from './report.js';

const TARGET_BYTES = Number(process.env.START_BENCH_BYTES ?? 1e9);
const ROUNDS = 3;

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
    generateYearDatabase(source, { bytes: TARGET_BYTES });
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
