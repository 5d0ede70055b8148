/**
 * Online backups of the hub's database (README "Backups and upgrades"): SQLite's backup API
 * (better-sqlite3's `db.backup()`) copies a consistent snapshot while the hub runs and writes, the
 * copy is checked with `PRAGMA integrity_check` and only then given its name. Everything the hub
 * keeps in SQLite (readings, nodes, messages, users, and every plugin's and component's tables)
 * lives in that one file, so a backup is one `.sqlite` file that SQLite itself can open.
 */
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/data-dir.js';
import type { Database } from '../store/database.js';
import { checkCopy, fileTimestamp } from '../store/pre-migration-backup.js';

/** The names of backups made by schedule or by `meshhub backup` without a file: the ones BACKUP_KEEP prunes. */
const SCHEDULED_NAME = /^meshhub-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.sqlite$/;

/** `meshhub-2026-11-28T02-43-00Z.sqlite` in `dir`. */
export function defaultBackupFile(dir: string, at: Date = new Date()): string {
  return join(dir, `meshhub-${fileTimestamp(at)}.sqlite`);
}

export interface BackupResult {
  file: string;
  bytes: number;
  schemaVersion: number;
}

/** Pages per step of the backup: all of them, so a snapshot finishes while the hub keeps writing. */
const ALL_PAGES = 0x7fffffff;

/**
 * Copies `source` (an open connection; the hub's own or a command's) to `file`: written as
 * `<file>.partial`, checked, made 0600, then renamed. Its folder is made 0700 when missing. A copy
 * that fails its check is deleted and the error names what SQLite said.
 */
export async function backupDatabase(source: Database, file: string): Promise<BackupResult> {
  const partial = `${file}.partial`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
    rmSync(partial, { force: true });
    // Each step restarts when another connection writes meanwhile: one step takes the whole snapshot.
    await source.backup(partial, { progress: () => ALL_PAGES });
    chmodSync(partial, PRIVATE_FILE_MODE);
    const { integrity, schemaVersion } = checkCopy(partial);
    if (integrity !== 'ok') throw new Error(`the copy failed integrity_check: ${integrity}`);
    renameSync(partial, file);
    return { file, bytes: statSync(file).size, schemaVersion };
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Deletes all but the newest `keep` scheduled backups in `dir`; returns the files deleted. */
export function pruneBackups(dir: string, keep: number): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => SCHEDULED_NAME.test(name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  // The timestamp in the name sorts by time.
  const old = names.sort().slice(0, Math.max(0, names.length - keep));
  for (const name of old) rmSync(join(dir, name), { force: true });
  return old.map((name) => join(dir, name));
}

/** `1.2 MB`, `512 kB`, `900 B`: a size for a person. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1_000_000) return `${(bytes / 1_000_000).toFixed(1)} MB`;
  if (bytes >= 1_000) return `${(bytes / 1_000).toFixed(0)} kB`;
  return `${bytes} B`;
}
