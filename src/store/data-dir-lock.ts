/**
 * One hub per DATA_DIR: two processes writing one database would each believe it alone owns the
 * radio's history, the outbox and the sync cursor. A hub holds an exclusive SQLite lock on
 * `DATA_DIR/hub.lock` for its whole life; the operating system drops it when the process ends,
 * however it ends (SIGKILL and power cuts included), so a stale lock never blocks a restart.
 * The holder's pid is written to `DATA_DIR/hub.pid` for the refusal to name it.
 *
 * The CLI commands that work beside a running hub (user, token, …) do not take the lock; a
 * command that must not run beside one asks `dataDirHolder` first.
 */
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { StartupFailure } from '../kernel/startup-failure.js';
import { unwritableDataDir } from './data-dir.js';

export const LOCK_FILE = 'hub.lock';
export const PID_FILE = 'hub.pid';

export interface DataDirLock {
  readonly dataDir: string;
  /** Lets the next hub in; safe to call twice. */
  release(): void;
}

/** The pid written by the lock's holder, when readable. */
function holderPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, PID_FILE), 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isBusy(error: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown }).code ?? ''));
}

/** The lock database, its exclusive write lock taken; throws SQLITE_BUSY when another process holds it. */
function takeLock(dataDir: string): BetterSqlite3.Database {
  const db = new BetterSqlite3(join(dataDir, LOCK_FILE), { timeout: 0 });
  try {
    // Nothing is ever written: no journal file beside it.
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Takes DATA_DIR for this process, or throws a StartupFailure naming DATA_DIR and the other
 * process (`DATA_DIR=/x is in use by another meshhub (pid 123): stop it, or set DATA_DIR to
 * another folder`); a DATA_DIR it cannot write gives one line saying so.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  let db: BetterSqlite3.Database;
  try {
    // Made here first: a folder that cannot be written says why (EROFS, EACCES), not SQLITE_CANTOPEN.
    closeSync(openSync(join(dataDir, LOCK_FILE), 'a', 0o600));
    db = takeLock(dataDir);
  } catch (error) {
    if (!isBusy(error)) throw unwritableDataDir(dataDir, error);
    const pid = holderPid(dataDir);
    throw new StartupFailure(
      `DATA_DIR=${dataDir} is in use by another meshhub${pid ? ` (pid ${pid})` : ''}: stop it, or set DATA_DIR to another folder`,
    );
  }
  try {
    writeFileSync(join(dataDir, PID_FILE), `${process.pid}\n`, { mode: 0o600 });
  } catch (error) {
    db.close();
    throw unwritableDataDir(dataDir, error);
  }
  return {
    dataDir,
    release() {
      if (!db.open) return;
      rmSync(join(dataDir, PID_FILE), { force: true });
      db.close();
    },
  };
}

/**
 * Whether a hub (another process, or this one) holds DATA_DIR now: `{ pid }` (the pid when
 * known), or undefined when nobody does. It takes and drops the lock to find out.
 */
export function dataDirHolder(dataDir: string): { pid?: number } | undefined {
  let db: BetterSqlite3.Database;
  try {
    db = takeLock(dataDir);
  } catch (error) {
    if (!isBusy(error)) return undefined;
    const pid = holderPid(dataDir);
    return pid ? { pid } : {};
  }
  db.close();
  return undefined;
}
