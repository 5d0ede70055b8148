/**
 * Rewriting a database made with 4 KiB pages into small ones when the hub opens it
 * (src/store/page-size.ts): every row stays, the file is replaced only by a checked copy, another
 * process holding the file open or a copy that cannot be made leaves it as it was (and usable),
 * and what an interrupted conversion left beside it is cleared.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { NEW_DATABASE_PAGE_SIZE, type PageSizeConversion, partialCopyOf } from '../../src/store/page-size.js';
import { tempDir } from './fixtures.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A database as an earlier meshhub made it: 4 KiB pages, WAL, the current schema, 3,000 readings. */
function oldDatabase(): string {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  const file = join(dir, 'meshhub.sqlite');
  const raw = new BetterSqlite3(file);
  raw.pragma('page_size = 4096');
  raw.exec('CREATE TABLE made_before (x)');
  raw.close();
  const db = openDatabase(file);
  const insert = db.prepare(
    'INSERT INTO readings (node_id, ts, temperature_c, humidity_percent) VALUES (?, ?, ?, ?)',
  );
  db.transaction(() => {
    for (let i = 0; i < 3_000; i++)
      insert.run(
        `!${(i % 30).toString(16).padStart(8, '0')}`,
        1_700_000_000_000 + i * 60_000,
        10 + (i % 997) / 100,
        40.5,
      );
  })();
  closeDatabase(db);
  return file;
}

function rowsOf(db: Database): unknown[] {
  return db.prepare('SELECT * FROM readings ORDER BY node_id, ts').raw(true).all();
}

function openSmall(file: string) {
  const reports: PageSizeConversion[] = [];
  const db = openDatabase(file, { smallPages: true, onPageSizeConversion: (c) => reports.push(c) });
  cleanups.unshift(() => closeDatabase(db));
  return { db, reports };
}

function snapshot(file: string) {
  const db = new BetterSqlite3(file, { readonly: true });
  try {
    return {
      pageSize: db.pragma('page_size', { simple: true }) as number,
      rows: rowsOf(db),
    };
  } finally {
    db.close();
  }
}

describe('a database made with 4 KiB pages, opened by the hub', () => {
  it('is rewritten into small pages with every row, once', () => {
    const file = oldDatabase();
    const before = snapshot(file);
    expect(before.pageSize).toBe(4096);
    expect(before.rows).toHaveLength(3_000);

    const { db, reports } = openSmall(file);
    expect(reports).toMatchObject([{ outcome: 'converted', from: 4096, to: NEW_DATABASE_PAGE_SIZE }]);
    expect(db.pragma('page_size', { simple: true })).toBe(NEW_DATABASE_PAGE_SIZE);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
    expect(rowsOf(db)).toEqual(before.rows);
    expect(db.prepare('SELECT count(*) FROM made_before').pluck().get()).toBe(0);
    expect(existsSync(partialCopyOf(file))).toBe(false);
    // It goes on working: a write, then a reopen that has nothing to do.
    db.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!00000001', 1, 1)").run();
    closeDatabase(db);
    const again = openSmall(file);
    expect(again.reports).toEqual([]);
    expect(rowsOf(again.db)).toHaveLength(3_001);
  });

  it('is left as it was while another process has it open, and converted at a later start', () => {
    const file = oldDatabase();
    const before = snapshot(file);
    const other = new BetterSqlite3(file);
    other.prepare('SELECT count(*) FROM readings').get();
    const { db, reports } = openSmall(file);
    expect(reports).toMatchObject([
      { outcome: 'skipped', from: 4096, reason: expect.stringMatching(/another process/) },
    ]);
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
    expect(rowsOf(db)).toEqual(before.rows);
    // Both connections go on reading and writing.
    db.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!00000001', 1, 1)").run();
    expect(other.prepare('SELECT count(*) FROM readings').pluck().get()).toBe(3_001);
    other.close();
    closeDatabase(db);
    const later = openSmall(file);
    expect(later.reports).toMatchObject([{ outcome: 'converted' }]);
    expect(rowsOf(later.db)).toHaveLength(3_001);
  });

  it('clears the copy an interrupted conversion left, and converts', () => {
    const file = oldDatabase();
    const before = snapshot(file);
    // A power cut during the copy: a partial copy (and its journal) beside the untouched file.
    writeFileSync(partialCopyOf(file), 'half a copy');
    writeFileSync(`${partialCopyOf(file)}-journal`, 'its journal');
    const { db, reports } = openSmall(file);
    expect(reports).toMatchObject([{ outcome: 'converted' }]);
    expect(rowsOf(db)).toEqual(before.rows);
    expect(existsSync(partialCopyOf(file))).toBe(false);
    expect(existsSync(`${partialCopyOf(file)}-journal`)).toBe(false);
  });

  it('keeps its pages, its rows and its use when the copy cannot be made', () => {
    const file = oldDatabase();
    const before = snapshot(file);
    // Something the hub cannot write the copy over (as a full disk would fail it).
    mkdirSync(join(partialCopyOf(file), 'in-the-way'), { recursive: true });
    const { db, reports } = openSmall(file);
    expect(reports).toMatchObject([
      { outcome: 'skipped', from: 4096, reason: expect.stringMatching(/^the copy could not be made/) },
    ]);
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(rowsOf(db)).toEqual(before.rows);
    // The file's exclusive lock is let go: another process reads and writes it.
    db.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!00000001', 1, 1)").run();
    const other = new BetterSqlite3(file, { timeout: 100 });
    try {
      expect(other.prepare('SELECT count(*) FROM readings').pluck().get()).toBe(3_001);
    } finally {
      other.close();
    }
  });

  it('is not converted by a command that opens it without the hub (no smallPages)', () => {
    const file = oldDatabase();
    const db = openDatabase(file);
    cleanups.unshift(() => closeDatabase(db));
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
  });
});
