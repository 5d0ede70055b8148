/**
 * DATA_DIR holds password hashes, texts, audit events, invoices and signing keys: only the
 * hub's own user may read it (README "Files on disk"), however the hub is started (systemd's
 * UMask=, a shell's umask 022, a container's default).
 *
 * - `secureDataDir` (at the start of the hub and of the upstream): the process umask becomes
 *   077, so every file made later (SQLite's -wal/-shm/-journal, keys, anything a plugin writes)
 *   is private; DATA_DIR is made (0700) or tightened to 0700, and every file under it to 0600,
 *   every folder to 0700 (symbolic links are left alone: their targets are not ours to change).
 * - `privateDatabaseFile` (every opener of the SQLite file, the CLI commands too): the database
 *   file is created 0600, and it and its -wal/-shm/-journal are tightened to 0600 when looser;
 *   SQLite gives -wal/-shm/-journal the database file's mode when it creates them. So a CLI
 *   command never loosens what the hub tightened, whatever its umask.
 *
 * A file we cannot tighten (another user owns it), a DATA_DIR that cannot be made or written, stop
 * the start with one line naming it (a StartupFailure, src/kernel/startup-failure.ts).
 */
import {
  chmodSync,
  closeSync,
  type Dirent,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../config/load.js';
import { StartupFailure } from '../kernel/startup-failure.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** The files SQLite keeps beside a database. */
const SQLITE_SIDE_FILES = ['-wal', '-shm', '-journal'];

function tighten(path: string, mode: number, setting: string): void {
  let current: number;
  try {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    current = stat.mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if ((current & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A read-only file system (a DATA_DIR on a read-only mount): nothing can be written there.
    if (code === 'EROFS') throw unwritableDataDir(path, error);
    if (code !== 'EPERM' && code !== 'EACCES') throw error;
    throw new ConfigError([
      `${setting}: ${path} is readable by other users (mode ${current.toString(8)}) and this user cannot change it; run as its owner, or chmod ${mode.toString(8)} it`,
    ]);
  }
}

function tightenTree(dir: string): void {
  tighten(dir, PRIVATE_DIR_MODE, 'DATA_DIR');
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    // A private folder of another user (a file system's lost+found): nothing in it is ours.
    if ((error as NodeJS.ErrnoException).code === 'EACCES') return;
    throw error;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) tightenTree(path);
    else if (entry.isFile()) tighten(path, PRIVATE_FILE_MODE, 'DATA_DIR');
  }
}

/** What to do about a DATA_DIR this user cannot use. */
const FIX_DATA_DIR = 'make it writable by this user or set DATA_DIR to another folder';

/**
 * `mkdir -p`, one level at a time from the nearest folder that exists: the first level that
 * cannot be made gives its own error (Node's recursive mkdir loops forever on some file systems).
 */
function makeFolders(dir: string): void {
  const missing: string[] = [];
  let at = resolve(dir);
  while (!existsSync(at)) {
    missing.unshift(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const folder of missing) {
    try {
      mkdirSync(folder, { mode: PRIVATE_DIR_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/** Why DATA_DIR cannot be made or used, as one line naming it and what to do. */
function dataDirProblem(dir: string, error: NodeJS.ErrnoException): StartupFailure {
  if (error.code === 'ENOTDIR' || error.code === 'EEXIST')
    return new StartupFailure(
      `DATA_DIR=${dir} is not a folder (a file is in the way): set DATA_DIR to a folder, or move the file aside`,
    );
  return new StartupFailure(
    `DATA_DIR=${dir} cannot be created or written (${error.code}${error.code === 'EROFS' ? ': read-only file system' : ''}): ${FIX_DATA_DIR}`,
  );
}

/**
 * DATA_DIR cannot be written (`error` from writing in it): one line naming it and what to do.
 * Any other error is returned as it is.
 */
export function unwritableDataDir(dir: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'SQLITE_CANTOPEN', 'SQLITE_READONLY'].includes(code))
    return error;
  const why =
    code === 'EROFS' ? 'EROFS: read-only file system' : code === 'ENOSPC' ? 'ENOSPC: the disk is full' : code;
  return new StartupFailure(`DATA_DIR=${dir} is not writable (${why}): ${FIX_DATA_DIR}`, { cause: error });
}

/** Umask 077 for this process; DATA_DIR made or tightened to 0700, everything in it to 0600. */
export function secureDataDir(dir: string): void {
  process.umask(0o077);
  try {
    makeFolders(dir);
  } catch (error) {
    throw dataDirProblem(dir, error as NodeJS.ErrnoException);
  }
  if (!lstatSync(dir).isDirectory())
    throw dataDirProblem(dir, Object.assign(new Error('not a folder'), { code: 'ENOTDIR' }));
  tightenTree(dir);
}

/** The database file created 0600 (or tightened), and its -wal/-shm/-journal tightened to 0600. */
export function privateDatabaseFile(file: string): void {
  for (const suffix of SQLITE_SIDE_FILES) tighten(`${file}${suffix}`, PRIVATE_FILE_MODE, 'DATA_DIR');
  tighten(file, PRIVATE_FILE_MODE, 'DATA_DIR');
  // Created here, 0600 under any umask, before SQLite would create it with 0644 & ~umask.
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
}
