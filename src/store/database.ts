/**
 * The one SQLite connection (docs/architecture.md "Actors" 6): better-sqlite3 is synchronous, so every
 * repository is a set of prepared statements over this connection, and every query is bounded.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { StartupFailure } from '../kernel/startup-failure.js';
import { PRIVATE_DIR_MODE, privateDatabaseFile, unwritableDataDir } from './data-dir.js';
import { MIGRATIONS, migrate, type OnMigrationProgress } from './migrations.js';
import { NEW_DATABASE_PAGE_SIZE, type PageSizeConversion, withSmallPages } from './page-size.js';
import { setPreMigrationBackupDir } from './pre-migration-backup.js';

export type Database = BetterSqlite3.Database;

/** WAL bytes between automatic checkpoints: about 16 MB, whatever the page size. */
export const WAL_CHECKPOINT_BYTES = 4_000 * 4_096;
export type Statement<P extends unknown[] = unknown[], R = unknown> = BetterSqlite3.Statement<P, R>;

export interface OpenDatabaseOptions {
  /** How long a statement waits for another connection's lock before SQLITE_BUSY. */
  busyTimeoutMs?: number;
  /** Page cache in KiB; the Pi has RAM to spare for it, the SD card has no IOPS to spare. */
  cacheSizeKib?: number;
  /** Skip the migrations (benchmarks building a baseline table of their own). */
  migrate?: boolean;
  /**
   * Where a copy of the database goes before a migration changes it (pre-migration-backup.ts);
   * default: `backups` beside the file, as BACKUP_DIR's default (DATA_DIR/backups).
   */
  backupDir?: string;
  /**
   * Rewrite a database made with other pages into NEW_DATABASE_PAGE_SIZE ones (page-size.ts),
   * telling `onPageSizeConversion` what came of it. Only the hub's own store: it holds DATA_DIR's
   * lock, so no other hub has the file open.
   */
  smallPages?: boolean;
  onPageSizeConversion?: (conversion: PageSizeConversion) => void;
  /** Told what a migration is doing (the copy first, then the rows it moves): the start's log. */
  onMigrationProgress?: OnMigrationProgress;
}

/**
 * Opens (creating when needed) the database file, tunes the connection and migrates it. `:memory:`
 * works too. The file and SQLite's files beside it are private (0600; its folder, when made here,
 * 0700), whoever opens it: the hub, or a CLI command under any umask (data-dir.ts). A file that is
 * damaged or not a database, or a folder it cannot write, throws a StartupFailure naming it.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const { busyTimeoutMs = 5_000 } = options;
  const inMemory = file === ':memory:' || file === '';
  try {
    if (!inMemory) {
      mkdirSync(dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
      privateDatabaseFile(file);
    }
    let db = new BetterSqlite3(file, { timeout: busyTimeoutMs });
    if (!inMemory && options.smallPages)
      db = withSmallPages(
        file,
        db,
        {
          busyTimeoutMs,
          onStart: ({ from, to, bytes }) =>
            options.onMigrationProgress?.({ phase: 'pages', from, to, bytes }),
        },
        options.onPageSizeConversion,
      );
    if (!inMemory) setPreMigrationBackupDir(db, options.backupDir ?? join(dirname(file), 'backups'));
    return tunedAndMigrated(db, inMemory, options);
  } catch (error) {
    throw inMemory ? error : databaseProblem(file, error);
  }
}

/** SQLite's codes for a file that is not a database, or one that is damaged. */
const DAMAGED = /^SQLITE_(CORRUPT|NOTADB)/;

/** The hub's database file in DATA_DIR. */
export const HUB_DATABASE_FILE = 'meshhub.sqlite';

/**
 * SQLITE_CORRUPT or SQLITE_NOTADB met anywhere (opening, migrating, a module's first query) as
 * one line naming the database file and what to do; any other error as it is.
 */
export function damagedDatabase(file: string, error: unknown): unknown {
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  if (!DAMAGED.test(code)) return error;
  return new StartupFailure(
    `${file} is not a SQLite database or is damaged (${code}): move it aside and restore a backup, or start with an empty DATA_DIR`,
    { cause: error },
  );
}

/**
 * A database file the hub cannot open, as one line naming it and what to do (a StartupFailure):
 * damaged or not a database (SQLITE_CORRUPT, SQLITE_NOTADB, wherever they are met), a folder in
 * its place, a folder that is not writable. Any other error is returned as it is.
 */
export function databaseProblem(file: string, error: unknown): unknown {
  const damaged = damagedDatabase(file, error);
  if (damaged !== error || error instanceof StartupFailure) return damaged;
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  if (code === 'EISDIR')
    return new StartupFailure(`${file} is a folder, not a database file: move it aside`, { cause: error });
  return unwritableDataDir(dirname(file), error);
}

function tunedAndMigrated(db: Database, inMemory: boolean, options: OpenDatabaseOptions): Database {
  const { busyTimeoutMs = 5_000, cacheSizeKib = 16_000 } = options;
  try {
    // WAL: readers (the HTTP routes) never wait for the writer; NORMAL: durable across a process
    // crash, and a power cut loses at most the last transactions, never the database.
    // Only before the first table: afterwards (and in WAL mode) SQLite ignores it.
    if (db.pragma('page_count', { simple: true }) === 0) db.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
    if (!inMemory) {
      db.pragma('journal_mode = WAL');
      // Checkpoint every ~16 MB of WAL instead of SQLite's 4 MB: a page that many commits change
      // (the newest rollup buckets, the latest rows, each node's last leaf) is copied into the
      // database once per checkpoint, so fewer checkpoints write (and fsync) less to the SD card.
      // The WAL file is cut back to that size after each checkpoint.
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.pragma(`wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / pageSize)}`);
      db.pragma(`journal_size_limit = ${WAL_CHECKPOINT_BYTES}`);
    }
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    db.pragma(`busy_timeout = ${Math.trunc(busyTimeoutMs)}`);
    db.pragma(`cache_size = -${Math.trunc(cacheSizeKib)}`);
    db.pragma('temp_store = MEMORY');
    if (options.migrate !== false) migrate(db, MIGRATIONS, options.onMigrationProgress);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Folds the WAL back into the database file and closes; safe to call twice. */
export function closeDatabase(db: Database): void {
  if (!db.open) return;
  try {
    if (!db.memory) db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}
