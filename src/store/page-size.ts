/**
 * The database's page size (docs/architecture.md "Page size"). A database the hub creates has
 * NEW_DATABASE_PAGE_SIZE pages; one made with other pages (SQLite's default 4 KiB, by an earlier
 * meshhub) is rewritten into them when the hub opens it, once:
 *
 * 1. The connection leaves WAL mode, which folds the WAL into the file. SQLite allows that only to
 *    the one connection that has the file open: when another process has it open (a `meshhub`
 *    command), nothing is converted at this start.
 * 2. It takes the file's exclusive lock, so nobody reads or writes it until it is replaced.
 * 3. `VACUUM INTO` writes a copy with the new pages beside it, as `<file>.pages.partial`; the copy is
 *    checked (`PRAGMA integrity_check`, its page size and schema version) and synced to disk.
 * 4. The connection closes, and the copy is renamed over the file (atomic), and the folder synced.
 *
 * A power cut before the rename leaves the file as it was (and a partial copy, removed at the next
 * start, which converts again); after it, the converted file. A copy that cannot be made (no free
 * space: it needs as much again as the file) leaves the file as it was, and the hub starts with its
 * old pages; the next start tries again.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Database } from './database.js';
import { checkCopy } from './pre-migration-backup.js';

/**
 * The page size of a database this hub creates or converts. Small pages make each commit's WAL
 * frames small: a reading's commit changes a few pages, and each is written whole, so 512-byte
 * pages write 4.4 times fewer bytes to the SD card than SQLite's 4 KiB ones, at a live pace and in
 * bursts, for 2.7% more on disk and no slower reads (BENCHMARKS.md "Issue 26 — fourth part").
 */
export const NEW_DATABASE_PAGE_SIZE = 512;

/** What converting the pages of a database did, for the log. */
export type PageSizeConversion =
  | { outcome: 'converted'; from: number; to: number; bytes: number; ms: number }
  | { outcome: 'skipped'; from: number; to: number; reason: string };

export interface ConvertPagesOptions {
  /** Told before the copy begins (it can take minutes for a large file on an SD card). */
  onStart?: (info: { from: number; to: number; bytes: number }) => void;
  /** How long a new connection waits for a lock (the reopened file's busy timeout). */
  busyTimeoutMs: number;
}

/** Where the copy is written while it is made. */
export const partialCopyOf = (file: string) => `${file}.pages.partial`;

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Removes what an interrupted conversion left; what cannot be removed makes the copy fail later. */
function removePartial(file: string): void {
  const partial = partialCopyOf(file);
  for (const f of [partial, `${partial}-journal`, `${partial}-wal`, `${partial}-shm`]) {
    try {
      rmSync(f, { force: true });
    } catch {
      // Not ours to remove (a folder of that name): VACUUM INTO fails on it, and the file stays.
    }
  }
}

/**
 * Gives back a connection to `file` whose pages are NEW_DATABASE_PAGE_SIZE bytes: `db` itself when
 * they are already (or the file is empty, or it cannot be converted now: `report` says why), else a
 * new connection to the converted file (`db` is closed).
 */
export function withSmallPages(
  file: string,
  db: Database,
  options: ConvertPagesOptions,
  report: (conversion: PageSizeConversion) => void = () => {},
): Database {
  removePartial(file);
  const from = db.pragma('page_size', { simple: true }) as number;
  const to = NEW_DATABASE_PAGE_SIZE;
  if (from === to || db.pragma('page_count', { simple: true }) === 0) return db;
  const skip = (reason: string): Database => {
    report({ outcome: 'skipped', from, to, reason });
    return db;
  };
  try {
    db.pragma('journal_mode = DELETE');
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY')
      return skip('another process has the database open; converted at a later start');
    throw error;
  }
  const started = Date.now();
  const partial = partialCopyOf(file);
  try {
    // Held until the connection closes: nobody else reads or writes the file meanwhile.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    const bytes = (db.pragma('page_count', { simple: true }) as number) * from;
    options.onStart?.({ from, to, bytes });
    db.pragma(`page_size = ${to}`);
    db.prepare('VACUUM INTO ?').run(partial);
    const copy = checkCopy(partial);
    const version = db.pragma('user_version', { simple: true }) as number;
    if (copy.integrity !== 'ok' || copy.schemaVersion !== version || copy.pageSize !== to)
      throw new Error(
        `the copy is not sound (integrity ${copy.integrity}, schema ${copy.schemaVersion}, pages ${copy.pageSize})`,
      );
    fsyncPath(partial);
  } catch (error) {
    removePartial(file);
    // Back to normal locking: the lock is let go at the next read.
    db.pragma('locking_mode = NORMAL');
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
    return skip(
      `the copy could not be made (${(error as { code?: string }).code ?? (error as Error).message})`,
    );
  }
  db.close();
  renameSync(partial, file);
  fsyncPath(dirname(file));
  const reopened = new BetterSqlite3(file, { timeout: options.busyTimeoutMs });
  report({
    outcome: 'converted',
    from,
    to,
    bytes: (reopened.pragma('page_count', { simple: true }) as number) * to,
    ms: Date.now() - started,
  });
  return reopened;
}
