/**
 * `meshhub backup [file]` and `meshhub restore <file>` (README "Backups and upgrades").
 *
 * - backup works while the hub runs: SQLite's backup API copies a consistent snapshot of the
 *   hub's database (backup.ts), checked with `PRAGMA integrity_check` before it is named.
 * - restore refuses while a hub runs on DATA_DIR (it takes DATA_DIR's lock itself, so no hub can
 *   start meanwhile), checks the file first (SQLite, a meshhub database, integrity_check, a schema
 *   this meshhub knows), keeps the current database aside (renamed, never deleted) and then puts
 *   the backup in its place.
 *
 * Each prints one plain line on stdout saying what it did; a refusal is one line on stderr (exit 1).
 */
import { chmodSync, copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { type CliCommand, parseCommand, UsageError } from '../kernel/cli-args.js';
import { StartupFailure } from '../kernel/startup-failure.js';
import { PRIVATE_FILE_MODE, secureDataDir } from '../store/data-dir.js';
import { dataDirHolder, lockDataDir } from '../store/data-dir-lock.js';
import { HUB_DATABASE_FILE } from '../store/database.js';
import { MIGRATIONS } from '../store/migrations.js';
import { checkCopy, fileTimestamp } from '../store/pre-migration-backup.js';
import { backupDatabase, defaultBackupFile, formatBytes } from './backup.js';

export interface BackupCommandContext {
  /** DATA_DIR (read when first asked: `--help` needs no valid settings). */
  readonly dataDir: string;
  /** BACKUP_DIR, or DATA_DIR/backups. */
  readonly backupDir: string;
  out: (text: string) => void;
  err: (text: string) => void;
}

export const BACKUP = {
  name: 'meshhub backup',
  help: `  meshhub backup [FILE]
                        Copy the hub's database, also while the hub runs (SQLite's backup API),
                        checked with integrity_check; FILE defaults to
                        BACKUP_DIR/meshhub-<UTC time>.sqlite (BACKUP_DIR: DATA_DIR/backups).
`,
  options: {},
} satisfies CliCommand;

export const RESTORE = {
  name: 'meshhub restore',
  help: `  meshhub restore FILE  Put a backup in place of the hub's database, with the hub stopped: the
                        file is checked first and the current database is kept aside, renamed.
`,
  options: {},
} satisfies CliCommand;

export const BACKUP_HELP = `Backups:\n${BACKUP.help}${RESTORE.help}`;

/** What went wrong with a file, in words: SQLite's and the file system's codes. */
function why(error: unknown): string {
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  if (code.startsWith('SQLITE_NOTADB')) return 'it is not a SQLite database';
  if (code.startsWith('SQLITE_CORRUPT')) return 'it is damaged (SQLITE_CORRUPT)';
  if (code === 'ENOSPC') return 'the disk is full (ENOSPC)';
  if (code === 'ENOENT') return 'no such file (ENOENT)';
  if (code) return code;
  return error instanceof Error ? error.message : String(error);
}

export async function runBackupCommand(args: string[], ctx: BackupCommandContext): Promise<number> {
  const { positionals } = parseCommand(args, BACKUP, ctx.err);
  if (positionals.length > 1) throw new UsageError(`${BACKUP.name}: give at most one FILE`);
  const source = resolve(ctx.dataDir, HUB_DATABASE_FILE);
  if (!existsSync(source)) {
    throw new UsageError(
      `${BACKUP.name}: no hub database at ${source}; set DATA_DIR to the hub's data directory`,
      1,
    );
  }
  const target = positionals[0] ? resolve(positionals[0]) : defaultBackupFile(resolve(ctx.backupDir));
  if (existsSync(target)) throw new UsageError(`${BACKUP.name}: ${target} exists; name a new file`, 1);
  let db: BetterSqlite3.Database | undefined;
  try {
    // A plain connection (no migration, no checkpoint): the running hub owns the schema and the WAL.
    db = new BetterSqlite3(source, { fileMustExist: true, timeout: 5_000 });
    const result = await backupDatabase(db, target);
    ctx.out(
      `backed up ${source} to ${result.file} (${formatBytes(result.bytes)}, schema v${result.schemaVersion}, integrity ok)\n`,
    );
    return 0;
  } catch (error) {
    if (!expected(error)) throw error;
    throw new UsageError(`${BACKUP.name}: could not back up ${source} to ${target}: ${why(error)}`, 1);
  } finally {
    db?.close();
  }
}

/** A failure of the file system or SQLite (or a copy that failed its check), not a bug. */
function expected(error: unknown): boolean {
  const code = String((error as { code?: unknown } | undefined)?.code ?? '');
  return (
    /^(SQLITE_|E[A-Z]+$)/.test(code) ||
    (error instanceof Error && error.message.startsWith('the copy failed'))
  );
}

/** Why `file` (a copy of the backup) cannot be restored, or undefined when it can; `schema` is its version. */
function refusal(copy: string): { problem?: string; schema: number } {
  let checked: ReturnType<typeof checkCopy>;
  try {
    checked = checkCopy(copy);
  } catch (error) {
    return { problem: why(error), schema: 0 };
  }
  const { integrity, schemaVersion } = checked;
  if (integrity !== 'ok')
    return { problem: `it failed integrity_check (${integrity})`, schema: schemaVersion };
  const db = new BetterSqlite3(copy, { readonly: true, fileMustExist: true });
  try {
    const nodes = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'nodes'").get();
    if (schemaVersion < 1 || !nodes)
      return { problem: 'it is not a meshhub database', schema: schemaVersion };
  } finally {
    db.close();
  }
  if (schemaVersion > MIGRATIONS.length)
    return {
      problem: `it was written by a newer meshhub (schema v${schemaVersion}; this one knows v${MIGRATIONS.length}): restore it with that version`,
      schema: schemaVersion,
    };
  return { schema: schemaVersion };
}

/** Renames the database and its WAL and shared-memory files to `<aside>` and `<aside>-wal`, `-shm`. */
function moveAside(file: string, aside: string): void {
  renameSync(file, aside);
  for (const suffix of ['-wal', '-shm', '-journal']) {
    if (existsSync(`${file}${suffix}`)) renameSync(`${file}${suffix}`, `${aside}${suffix}`);
  }
}

export async function runRestoreCommand(args: string[], ctx: BackupCommandContext): Promise<number> {
  const { positionals } = parseCommand(args, RESTORE, ctx.err);
  if (positionals.length !== 1) throw new UsageError(`${RESTORE.name}: name one backup FILE`);
  const backup = resolve(positionals[0]!);
  if (!existsSync(backup) || !statSync(backup).isFile())
    throw new UsageError(`${RESTORE.name}: ${backup} is not a file`, 1);
  const dataDir = resolve(ctx.dataDir);
  let lock: ReturnType<typeof lockDataDir>;
  try {
    secureDataDir(dataDir);
    // Held until done: no hub starts on DATA_DIR while its database is being replaced.
    lock = lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof StartupFailure)) throw error;
    const holder = dataDirHolder(dataDir);
    throw new UsageError(
      holder
        ? `${RESTORE.name}: a hub is running on DATA_DIR=${dataDir}${holder.pid ? ` (pid ${holder.pid})` : ''}: stop it first (systemctl stop meshhub), then restore`
        : `${RESTORE.name}: ${error.message}`,
      1,
    );
  }
  const target = join(dataDir, HUB_DATABASE_FILE);
  const incoming = `${target}.restoring`;
  try {
    rmSync(incoming, { force: true });
    copyFileSync(backup, incoming);
    chmodSync(incoming, PRIVATE_FILE_MODE);
    const { problem, schema } = refusal(incoming);
    if (problem) {
      throw new UsageError(`${RESTORE.name}: refused ${backup}: ${problem}; nothing was changed`, 1);
    }
    let kept = '';
    if (existsSync(target)) {
      const aside = join(dirname(target), `meshhub.before-restore-${fileTimestamp()}.sqlite`);
      moveAside(target, aside);
      kept = `; the database it replaced is kept as ${aside}`;
    }
    renameSync(incoming, target);
    const upgrade =
      schema < MIGRATIONS.length
        ? ` (the next start upgrades it to v${MIGRATIONS.length}, keeping a copy first)`
        : '';
    ctx.out(
      `restored ${basename(backup)} (schema v${schema}, ${formatBytes(statSync(target).size)}) to ${target}${upgrade}${kept}\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof UsageError || !expected(error)) throw error;
    throw new UsageError(
      `${RESTORE.name}: could not restore ${backup}: ${why(error)}; ${target} is as it was`,
      1,
    );
  } finally {
    rmSync(incoming, { force: true });
    lock.release();
  }
}
