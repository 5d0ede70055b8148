/**
 * Upgrades that cannot eat data (README "Backups and upgrades"): before a schema migration
 * changes a database that holds data, a copy of it is written to the backup folder as
 * `pre-migration-v<from>-v<to>-<time>.sqlite` (`pre-migration-<component>-v<from>-v<to>-<time>.sqlite`
 * for a component's schema), checked with `PRAGMA integrity_check`. A copy that cannot be made
 * stops the migration: the database stays as it was, and the start says why in one line. One copy,
 * named after the start's first migration, serves every migration of that start.
 *
 * The copy is `VACUUM INTO`: SQLite's own consistent copy, synchronous like the migrations.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { StartupFailure } from '../kernel/startup-failure.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './data-dir.js';
import type { Database } from './database.js';

/** The name a copy has while it is written. */
const PARTIAL = '.partial';

/** Where each open database's pre-migration copies go (set by openDatabase). */
const backupDirs = new WeakMap<Database, string>();

/**
 * The copy a connection's start made, which every later migration of the same start uses: after
 * an upgrade the core and several features may each migrate their schema, and one copy of the
 * database as it was before the upgrade serves them all (a 1 GB file copied once, not once a
 * feature). The hub ends its start (`endStartupCopies`) once every module runs; a migration after
 * that takes a copy of its own.
 */
const startupCopies = new WeakMap<Database, PreMigrationBackup>();
const startOver = new WeakSet<Database>();

/** The start of the hub on `db` is over: a later migration copies the database again. */
export function endStartupCopies(db: Database): void {
  startupCopies.delete(db);
  startOver.add(db);
}

export function setPreMigrationBackupDir(db: Database, dir: string): void {
  backupDirs.set(db, dir);
}

/** `2026-11-28T21-40-05Z`: a UTC time that sorts, and that every file system accepts in a name. */
export function fileTimestamp(at: Date = new Date()): string {
  return at
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replaceAll(':', '-');
}

/** Whether any table (the component ledger aside) holds a row: a fresh database is not copied. */
export function holdsData(db: Database): boolean {
  const tables = db
    .prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'component_migrations'",
    )
    .pluck()
    .all() as string[];
  return tables.some((name) => db.prepare(`SELECT 1 FROM "${name.replaceAll('"', '""')}" LIMIT 1`).get());
}

export interface CheckedCopy {
  /** `ok`, or SQLite's first complaint about the file (`PRAGMA integrity_check`). */
  integrity: string;
  /** The core schema's version in the copy (`PRAGMA user_version`). */
  schemaVersion: number;
  /** Its page size in bytes (`PRAGMA page_size`). */
  pageSize: number;
}

/**
 * Checks a copy of a database this process just wrote (never the user's own file: it is changed):
 * it is left in rollback-journal mode, so it is one self-contained file, and checked with
 * `PRAGMA integrity_check`. A file that is not SQLite throws SQLITE_NOTADB.
 */
export function checkCopy(file: string): CheckedCopy {
  const copy = new BetterSqlite3(file, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
    const rows = copy.pragma('integrity_check', { simple: false }) as Array<{ integrity_check: string }>;
    const integrity =
      rows.length === 1 && rows[0]?.integrity_check === 'ok'
        ? 'ok'
        : (rows[0]?.integrity_check ?? 'no answer');
    return {
      integrity,
      schemaVersion: copy.pragma('user_version', { simple: true }) as number,
      pageSize: copy.pragma('page_size', { simple: true }) as number,
    };
  } finally {
    copy.close();
  }
}

export interface PreMigrationBackup {
  file: string;
  bytes: number;
}

/**
 * Copies the database before migrating `component` (undefined: the core schema) from `from` to
 * `to`, when it holds data and has a backup folder; returns the copy, or undefined when none was
 * needed. Throws a StartupFailure when the copy cannot be made or is not sound.
 */
export function backupBeforeMigration(
  db: Database,
  migration: { component?: string; from: number; to: number },
  now: Date = new Date(),
): PreMigrationBackup | undefined {
  const dir = backupDirs.get(db);
  if (dir === undefined || db.memory) return undefined;
  const madeThisStart = startupCopies.get(db);
  if (madeThisStart && existsSync(madeThisStart.file)) return madeThisStart;
  if (!holdsData(db)) return undefined;
  const { component, from, to } = migration;
  const name = `pre-migration-${component ? `${component}-` : ''}v${from}-v${to}-${fileTimestamp(now)}.sqlite`;
  const file = join(dir, name);
  // Written under a .partial name and renamed once checked: a copy cut off by a power cut is never
  // taken for a backup, and the next start clears it away.
  const partial = `${file}${PARTIAL}`;
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    for (const stale of readdirSync(dir))
      if (stale.startsWith('pre-migration-') && stale.endsWith(PARTIAL))
        rmSync(join(dir, stale), { force: true });
    db.prepare('VACUUM INTO ?').run(partial);
    chmodSync(partial, PRIVATE_FILE_MODE);
    const { integrity } = checkCopy(partial);
    if (integrity !== 'ok') throw new Error(`the copy failed integrity_check: ${integrity}`);
    renameSync(partial, file);
    const copy = { file, bytes: statSync(file).size };
    if (!startOver.has(db)) startupCopies.set(db, copy);
    return copy;
  } catch (error) {
    try {
      rmSync(partial, { force: true });
    } catch {
      // The folder itself is the problem: nothing was written.
    }
    const code = (error as { code?: string }).code;
    const why = error instanceof Error ? error.message : String(error);
    throw new StartupFailure(
      `could not back up the database to ${file} before migrating ${component ? `the "${component}" schema` : 'it'} from v${from} to v${to} (${code ?? why}): free space there or set BACKUP_DIR to a writable folder; nothing was migrated`,
      { cause: error },
    );
  }
}
