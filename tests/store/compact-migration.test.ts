/**
 * Core migration 7 (src/store/migrations.ts): the raw readings move from the REAL layout into the
 * compact rows a chunk per transaction. Every row reads back the same through the `readings`
 * view; a run that stops part-way leaves each row in exactly one of the two tables, and the next
 * run goes on from there without a second backup. (tests/reliability/kill-migration.test.ts
 * SIGKILLs the real process at random points.)
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import {
  MIGRATIONS,
  type MigrationProgress,
  migrate,
  schemaVersion,
  V7_CHUNK_ROWS,
} from '../../src/store/migrations.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';
import { StoreActor } from '../../src/store/store-actor.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const COLS = `node_id, ts, ${METRIC_COLUMNS.join(', ')}`;

/** A database at version 6 with `perNode` rows of each node: on-grid values, finer ones, NULLs. */
function version6(nodes: string[], perNode: number): { db: Database; dir: string; rows: unknown[][] } {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-v7-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'meshhub.sqlite'), { migrate: false });
  migrate(db, MIGRATIONS.slice(0, 6));
  const insert = db.prepare(`INSERT INTO readings (${COLS}) VALUES (${new Array(10).fill('?').join(', ')})`);
  db.transaction(() => {
    nodes.forEach((node, n) => {
      for (let k = 0; k < perNode; k++) {
        const i = n * 7919 + k;
        insert.run(
          node,
          Date.UTC(2026, 0, 1) + k * 300_000,
          Math.round((5 + ((i * 37) % 2000) / 100) * 100) / 100,
          k % 3 === 0 ? null : 45.12305 + (i % 7),
          95_000 + ((i * 13) % 8000) + (k % 2 ? 0.61 : 0),
          ((i * 11) % 150) / 10,
          (i * 17) % 360,
          k % 5 === 0 ? null : (i * 3) % 40,
          (i * 5) % 60,
          k % 7 === 0 ? 1e30 : ((i * 19) % 5000) / 10,
        );
      }
    });
  })();
  const rows = db.prepare(`SELECT ${COLS} FROM readings ORDER BY node_id, ts`).raw(true).all() as unknown[][];
  return { db, dir, rows };
}

const backups = (dir: string) =>
  readdirSync(join(dir, 'backups')).filter((f) => f.startsWith('pre-migration-'));

describe('migration 7: compact raw readings', () => {
  it('moves every row, which then reads back the same, and drops the old table', () => {
    const { db, dir, rows } = version6(['!00000001', '!0000beef', 'garden-1'], 9_000);
    try {
      expect(rows.length).toBeGreaterThan(V7_CHUNK_ROWS);
      migrate(db);
      expect(schemaVersion(db)).toBe(MIGRATIONS.length);
      expect(db.prepare(`SELECT ${COLS} FROM readings ORDER BY node_id, ts`).raw(true).all()).toEqual(rows);
      expect(db.prepare('SELECT count(*) FROM reading_rows').pluck().get()).toBe(rows.length);
      expect(
        db.prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'readings_before_v7'").pluck().get(),
      ).toBe(0);
      expect(backups(dir)).toHaveLength(1);
    } finally {
      closeDatabase(db);
    }
  });

  it('stopped part-way, goes on where it stopped: no row lost or moved twice, no second backup', () => {
    const { db, dir, rows } = version6(['!00000001', '!00000002', '!zzzzzzzz'], 10_000);
    try {
      // The last node's rows fail to leave the old table: the chunks before them are committed.
      db.exec(
        "CREATE TRIGGER stop_here BEFORE DELETE ON readings WHEN OLD.node_id = '!zzzzzzzz' BEGIN SELECT RAISE(ABORT, 'power cut'); END",
      );
      const first: MigrationProgress[] = [];
      expect(() => migrate(db, MIGRATIONS, (p) => first.push(p))).toThrow(/power cut/);
      // The copy, then the move from its start: nothing done yet of every row.
      expect(first.slice(0, 2)).toEqual([
        { phase: 'backup', from: 6, to: MIGRATIONS.length },
        { phase: 'move', version: 7, name: MIGRATIONS[6]!.name, done: 0, total: rows.length },
      ]);
      expect(schemaVersion(db)).toBe(6);
      const moved = db.prepare('SELECT count(*) FROM reading_rows').pluck().get() as number;
      const left = db.prepare('SELECT count(*) FROM readings_before_v7').pluck().get() as number;
      expect(moved).toBeGreaterThanOrEqual(V7_CHUNK_ROWS);
      expect(moved + left).toBe(rows.length);
      expect(backups(dir)).toHaveLength(1);

      db.exec('DROP TRIGGER stop_here');
      const second: MigrationProgress[] = [];
      migrate(db, MIGRATIONS, (p) => second.push(p));
      // No second copy; the move counts what the first run moved as done, and ends with all.
      expect(second.map((p) => (p.phase === 'move' ? [p.done, p.total] : p.phase))).toEqual([
        [moved, rows.length],
        [rows.length, rows.length],
      ]);
      expect(schemaVersion(db)).toBe(MIGRATIONS.length);
      expect(db.prepare(`SELECT ${COLS} FROM readings ORDER BY node_id, ts`).raw(true).all()).toEqual(rows);
      expect(backups(dir)).toHaveLength(1);
    } finally {
      closeDatabase(db);
    }
  });

  it('says in the hub’s log what it is doing: the copy, then how many rows are moved', () => {
    const { db, dir } = version6(['!00000001', '!00000002'], 12_000);
    closeDatabase(db);
    const lines: { msg: string }[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const store = StoreActor.open(join(dir, 'meshhub.sqlite'), log);
    try {
      expect(lines.map((l) => l.msg)).toEqual([
        'copying the database before migrating it to schema 7',
        `migrating the database to schema 7 (${MIGRATIONS[6]!.name}): 0 of 24000 rows moved; the hub answers once it is done`,
        `migrating the database to schema 7 (${MIGRATIONS[6]!.name}): 24000 of 24000 rows moved; the hub answers once it is done`,
      ]);
    } finally {
      closeDatabase(store.db);
    }
  });

  it('gives a hub at version 6 with no readings the same schema as a new one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-v7-'));
    dirs.push(dir);
    const fresh = openDatabase(join(dir, 'fresh.sqlite'));
    const old = openDatabase(join(dir, 'old.sqlite'), { migrate: false });
    try {
      migrate(old, MIGRATIONS.slice(0, 6));
      migrate(old);
      const schema = (db: Database) =>
        db
          .prepare("SELECT type, name, sql FROM sqlite_schema WHERE name LIKE 'reading%' ORDER BY name")
          .all();
      expect(schema(old)).toEqual(schema(fresh));
    } finally {
      closeDatabase(fresh);
      closeDatabase(old);
    }
  });
});
