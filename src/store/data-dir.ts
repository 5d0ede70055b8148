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
 * A file we cannot tighten (another user owns it) stops the start with one line naming it.
 */
import { chmodSync, closeSync, type Dirent, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config/load.js';

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

/** Umask 077 for this process; DATA_DIR made or tightened to 0700, everything in it to 0600. */
export function secureDataDir(dir: string): void {
  process.umask(0o077);
  try {
    mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  } catch (error) {
    throw new ConfigError([
      `DATA_DIR: cannot create ${dir} (${(error as NodeJS.ErrnoException).code}); make its parent writable by this user, or set DATA_DIR to a folder it owns`,
    ]);
  }
  if (!lstatSync(dir).isDirectory()) throw new ConfigError([`DATA_DIR: ${dir} is not a directory`]);
  tightenTree(dir);
}

/** The database file created 0600 (or tightened), and its -wal/-shm/-journal tightened to 0600. */
export function privateDatabaseFile(file: string): void {
  for (const suffix of SQLITE_SIDE_FILES) tighten(`${file}${suffix}`, PRIVATE_FILE_MODE, 'DATA_DIR');
  tighten(file, PRIVATE_FILE_MODE, 'DATA_DIR');
  // Created here, 0600 under any umask, before SQLite would create it with 0644 & ~umask.
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
}
