import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase, WAL_CHECKPOINT_BYTES } from '../../src/store/database.js';
import {
  MIGRATIONS,
  type Migration,
  migrate,
  SchemaTooNewError,
  schemaVersion,
} from '../../src/store/migrations.js';
import { NEW_DATABASE_PAGE_SIZE } from '../../src/store/page-size.js';
import { tempDir } from './fixtures.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function scratch(): string {
  const t = tempDir();
  cleanups.push(t.cleanup);
  return t.dir;
}

function tables(db: ReturnType<typeof openDatabase>): string[] {
  return (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[]
  ).filter((n) => !n.startsWith('sqlite_'));
}

describe('openDatabase', () => {
  it('creates the parent directory, turns on WAL, NORMAL sync and foreign keys, and migrates', () => {
    const file = join(scratch(), 'nested', 'deeper', 'hub.db');
    const db = openDatabase(file);
    try {
      expect(existsSync(file)).toBe(true);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
      expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThan(0);
      expect(schemaVersion(db)).toBe(MIGRATIONS.length);
      // Every table the migrations create; a new migration adds its tables here.
      expect(tables(db)).toEqual([
        'conversations',
        'hub_state',
        'idempotency_keys',
        'message_packets',
        'message_transitions',
        'messages',
        'node_aliases',
        'nodes',
        'reading_nodes',
        'reading_rows',
        'readings_daily',
        'readings_hourly',
        'readings_latest',
        'readings_open',
        'refresh_tokens',
        'subscription_nodes',
        'subscriptions',
        'users',
      ]);
    } finally {
      closeDatabase(db);
    }
  });

  it('makes a new database with small pages and keeps the page size of one made before', () => {
    const fresh = openDatabase(join(scratch(), 'new.db'));
    try {
      expect(fresh.pragma('page_size', { simple: true })).toBe(NEW_DATABASE_PAGE_SIZE);
      // About 16 MB of WAL between checkpoints, whatever the page size.
      expect(fresh.pragma('wal_autocheckpoint', { simple: true })).toBe(
        WAL_CHECKPOINT_BYTES / NEW_DATABASE_PAGE_SIZE,
      );
      fresh.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!a', 1, 20.5)").run();
    } finally {
      closeDatabase(fresh);
    }
    // A database made with SQLite's default 4 KiB pages (by an earlier meshhub) opens as it is.
    const file = join(scratch(), 'old.db');
    const raw = new BetterSqlite3(file);
    raw.pragma('page_size = 4096');
    raw.exec('CREATE TABLE kept (x)');
    raw.close();
    const old = openDatabase(file);
    try {
      expect(old.pragma('page_size', { simple: true })).toBe(4096);
      expect(old.pragma('wal_autocheckpoint', { simple: true })).toBe(WAL_CHECKPOINT_BYTES / 4096);
      expect(schemaVersion(old)).toBe(MIGRATIONS.length);
    } finally {
      closeDatabase(old);
    }
  });

  it('is idempotent on reopen: the data stays, no migration runs twice', () => {
    const file = join(scratch(), 'hub.db');
    const first = openDatabase(file);
    first.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!a', 1, 20.5)").run();
    closeDatabase(first);

    const again = openDatabase(file);
    try {
      expect(schemaVersion(again)).toBe(MIGRATIONS.length);
      expect(again.prepare('SELECT temperature_c FROM readings').pluck().get()).toBe(20.5);
      expect(migrate(again)).toBe(MIGRATIONS.length);
    } finally {
      closeDatabase(again);
    }
  });

  it('works in memory', () => {
    const db = openDatabase(':memory:');
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
    closeDatabase(db);
    expect(db.open).toBe(false);
  });

  it('refuses a database written by a newer meshhub', () => {
    const file = join(scratch(), 'hub.db');
    const db = openDatabase(file);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    closeDatabase(db);
    expect(() => openDatabase(file)).toThrow(SchemaTooNewError);
  });

  it('closeDatabase checkpoints the WAL into the file and may be called twice', () => {
    const file = join(scratch(), 'hub.db');
    const db = openDatabase(file);
    db.prepare("INSERT INTO readings (node_id, ts, temperature_c) VALUES ('!a', 1, 1)").run();
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(0);
    closeDatabase(db);
    closeDatabase(db);
    expect(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0).toBe(0);
  });
});

describe('migrate', () => {
  /** The hub's migrations and `extra` after them, numbered on. */
  const withAppended = (...extra: Array<Omit<Migration, 'version'>>): Migration[] => [
    ...MIGRATIONS,
    ...extra.map((m, i) => ({ ...m, version: MIGRATIONS.length + 1 + i }) as Migration),
  ];

  it('applies appended migrations in order, each with its version', () => {
    const db = openDatabase(':memory:');
    const next = withAppended(
      { name: 'extra table', up: 'CREATE TABLE extra (id INTEGER PRIMARY KEY)' },
      { name: 'data move', up: (d) => d.prepare('INSERT INTO extra (id) VALUES (7)').run() },
    );
    expect(migrate(db, next)).toBe(MIGRATIONS.length + 2);
    expect(db.prepare('SELECT id FROM extra').pluck().get()).toBe(7);
    expect(migrate(db, next)).toBe(MIGRATIONS.length + 2); // nothing runs twice
    expect(db.prepare('SELECT count(*) FROM extra').pluck().get()).toBe(1);
    closeDatabase(db);
  });

  it('rolls a failing migration back whole and leaves the version where it was', () => {
    const db = openDatabase(':memory:');
    const broken = withAppended({
      name: 'half done',
      up: 'CREATE TABLE half (id INTEGER); SELECT nope FROM nowhere;',
    });
    expect(() => migrate(db, broken)).toThrow();
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
    expect(tables(db)).not.toContain('half');
    closeDatabase(db);
  });

  it('rejects a list whose versions are not 1, 2, 3, ...', () => {
    const db = openDatabase(':memory:');
    const gap: Migration[] = [...MIGRATIONS, { version: MIGRATIONS.length + 2, name: 'gap', up: 'SELECT 1' }];
    expect(() => migrate(db, gap)).toThrow(/expected/);
    closeDatabase(db);
  });
});
