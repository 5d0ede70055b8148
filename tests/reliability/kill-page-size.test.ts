/**
 * Issue 26: SIGKILL while the hub rewrites a database made with 4 KiB pages into small ones
 * (src/store/page-size.ts). A database as an earlier meshhub made it (4 KiB pages, the current
 * schema, 1,000,000 raw readings) is started by the built hub, and a seeded schedule SIGKILLs it
 * at random moments of its start, again and again; when a start has finished converting, the
 * original file is put back and the kills go on, until several kills have landed during the copy.
 *
 * After every kill, exactly: the file is either the original (4 KiB pages) or the converted one
 * (small pages), never anything else; `integrity_check` is ok; every reading is there, bit for
 * bit. A kill during the copy leaves its partial copy, which the next start clears.
 */
import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { NEW_DATABASE_PAGE_SIZE, partialCopyOf } from '../../src/store/page-size.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';
import { HubProcess, killScenario, QUIET_SIM, removeDir, scratchDir } from './helpers/hub-process.js';
import { fingerprintRows } from './helpers/leaks.js';

const { seed: SEED, between } = killScenario('kill during the page-size conversion');
const NODES = 100;
const PER_NODE = 10_000;
const COLS = `node_id, ts, ${METRIC_COLUMNS.join(', ')}`;

const dataDir = scratchDir('pages');
const file = join(dataDir, 'meshhub.sqlite');
const original = join(dataDir, 'original.sqlite');

/** 4 KiB pages, filled by SQL through the `readings` view. */
function makeOldDatabase(): void {
  const raw = new Database(file);
  raw.pragma('page_size = 4096');
  raw.exec('CREATE TABLE made_before (x)');
  raw.close();
  const db = openDatabase(file);
  try {
    const insert = db.prepare(`
      WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${PER_NODE} - 1)
      INSERT INTO readings (${COLS})
      SELECT ?, ? + i * 300000, round(5 + (abs(random()) % 2000) / 100.0, 2),
        CASE WHEN i % 3 = 0 THEN NULL ELSE 30 + (abs(random()) % 600) / 10.0 END,
        95000 + abs(random()) % 8000, (abs(random()) % 150) / 10.0, abs(random()) % 360,
        abs(random()) % 40, abs(random()) % 60, (abs(random()) % 5000) / 10.0
      FROM k`);
    for (let n = 0; n < NODES; n++)
      db.transaction(() => insert.run(`!${(0x5000_0000 + n * 97).toString(16)}`, Date.UTC(2026, 0, 1) + n))();
  } finally {
    closeDatabase(db);
  }
}

/**
 * The page size, `integrity_check`, and the count and a hash of every reading in key order
 * (through the `readings` view). Opened read-write, so a WAL a kill left is folded in first.
 */
function state(): { pageSize: number; integrity: string; rows: number; hash: string } {
  const db = new Database(file, { fileMustExist: true });
  try {
    return {
      pageSize: db.pragma('page_size', { simple: true }) as number,
      integrity: db.pragma('integrity_check', { simple: true }) as string,
      ...fingerprintRows(db, 'readings', COLS, 'node_id, ts'),
    };
  } finally {
    db.close();
  }
}

const hub = new HubProcess({ dataDir, env: { ...QUIET_SIM } });

afterAll(async () => {
  await hub.kill();
  removeDir(dataDir);
});

describe('SIGKILL during the page-size conversion', () => {
  it(`leaves the original or the converted file, every reading in it (seed ${SEED})`, async () => {
    makeOldDatabase();
    const before = state();
    expect(before).toMatchObject({ pageSize: 4096, integrity: 'ok' });
    expect(before.rows).toBe(NODES * PER_NODE);
    copyFileSync(file, original);

    let duringCopy = 0;
    let converted = 0;
    let kills = 0;
    for (let round = 0; round < 40 && duringCopy < 3; round++) {
      await hub.start({}, between(200, 2_500)).catch(() => undefined);
      await hub.kill();
      kills++;
      if (existsSync(partialCopyOf(file))) duringCopy++;
      const after = state();
      expect([4096, NEW_DATABASE_PAGE_SIZE]).toContain(after.pageSize);
      expect(after.integrity).toBe('ok');
      expect(after).toMatchObject({ rows: before.rows, hash: before.hash });
      if (after.pageSize === NEW_DATABASE_PAGE_SIZE) {
        // Done: start again from the original, so that more kills can land during a copy.
        converted++;
        // The converted file's WAL belongs to it, not to the original.
        for (const f of [`${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
        copyFileSync(original, file);
      }
    }
    console.log(
      `[reliability] ${kills} kills: ${duringCopy} during the copy, ${converted} after the conversion`,
    );
    expect(duringCopy).toBeGreaterThan(0);

    // A start left alone converts, clears the partial copy and keeps every reading.
    await hub.start({}, 120_000);
    await hub.stop();
    expect(existsSync(partialCopyOf(file))).toBe(false);
    expect(state()).toEqual({ ...before, pageSize: NEW_DATABASE_PAGE_SIZE });
  }, 900_000);
});
