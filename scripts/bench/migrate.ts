/**
 * Issue 26, the compact-readings migration (core migration 7) on a database of about 1 GB with a
 * year of data (lib/year-database.ts, version 6; kept in the OS temp folder as
 * meshhub-bench-migrate/1g-v6.sqlite, delete it to regenerate): time and peak extra disk.
 *
 * - ours: `openDatabase` as the hub starts it: the checked pre-migration backup (VACUUM INTO), then
 *   the rows moved a chunk per transaction (resumable), the view and triggers;
 * - baseline: the same rows moved by plain SQL in one transaction, no backup.
 *
 * Each runs in a child process on its own copy; the parent samples the folder's bytes (database,
 * WAL, backups) every 50 ms: peak extra disk is the largest sample less the copy's size.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, tempData } from './lib/hub-process.js';
import { generateYearDatabase } from './lib/year-database.js';
import { type BenchResult, compare } from './report.js';

const TARGET_BYTES = Number(process.env.MIGRATE_BENCH_BYTES ?? 1e9);

function treeBytes(dir: string, deep = true): number {
  let sum = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    try {
      if (entry.isDirectory()) sum += deep ? treeBytes(path) : 0;
      else sum += statSync(path).size;
    } catch {
      // A file SQLite removed between the listing and the stat.
    }
  }
  return sum;
}

async function migrateCopy(
  source: string,
  mode: 'ours' | 'bare',
): Promise<{ ms: number; peakExtra: number; peakExtraDatabase: number }> {
  const data = tempData(`migrate-${mode}`);
  try {
    const file = join(data.dir, 'meshhub.sqlite');
    copyFileSync(source, file);
    const initial = treeBytes(data.dir);
    let peak = initial;
    let peakDatabase = initial;
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      [join(root, 'dist', 'scripts', 'bench', 'lib', 'migrate-child.js'), mode, file],
      {
        cwd: root,
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const sampler = setInterval(() => {
      peak = Math.max(peak, treeBytes(data.dir));
      peakDatabase = Math.max(peakDatabase, treeBytes(data.dir, false));
    }, 50);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearInterval(sampler);
    const ms = performance.now() - t0;
    if (code !== 0) throw new Error(`the ${mode} migration exited with ${code}`);
    return {
      ms,
      peakExtra: Math.max(peak, treeBytes(data.dir)) - initial,
      peakExtraDatabase: peakDatabase - initial,
    };
  } finally {
    data.cleanup();
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = join(tmpdir(), 'meshhub-bench-migrate');
  mkdirSync(dir, { recursive: true });
  const source = join(dir, '1g-v6.sqlite');
  if (!existsSync(source)) {
    process.stderr.write(
      `  generating a ${(TARGET_BYTES / 1e9).toFixed(1)} GB version-6 database (kept as ${source})...\n`,
    );
    generateYearDatabase(source, { bytes: TARGET_BYTES, version6: true });
  }
  const bytes = statSync(source).size;
  const bare = await migrateCopy(source, 'bare');
  const ours = await migrateCopy(source, 'ours');
  const gb = (b: number) => `${(b / 1e9).toFixed(2)} GB`;
  return [
    compare(
      `migrate: compact raw readings, ${gb(bytes)} database with a year of data`,
      { label: 'plain SQL, one transaction, no backup', value: bare.ms / 1000, unit: 's' },
      { label: 'meshhub: backup, then a chunk per transaction', value: ours.ms / 1000, unit: 's' },
      { text: 'reported' },
      `peak extra disk: ours ${gb(ours.peakExtra)} with the backup, ${gb(ours.peakExtraDatabase)} for the database and its WAL; bare ${gb(bare.peakExtra)}`,
    ),
  ];
}
