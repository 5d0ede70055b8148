/** The upgrade fixture (tests/fixtures/upgrade-v5, made by scripts/fixtures/make-upgrade-fixture.ts) and helpers over it. */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import { createHub, type Hub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import { loopbackHubEnv } from '../../scripts/bench/lib/hub-env.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { digestTables } from '../reliability/helpers/leaks.js';

export const FIXTURE_DIR = join(process.cwd(), 'tests', 'fixtures', 'upgrade-v5');

export interface FixtureFacts {
  made_by: string;
  schema_version: number;
  components: { component: string; version: number }[];
  rows: Record<string, number>;
  node_ids: string[];
  users: Record<string, string>;
  texts_to: string;
}

export const EXPECTED = JSON.parse(readFileSync(join(FIXTURE_DIR, 'expected.json'), 'utf8')) as FixtureFacts;

/** A fresh DATA_DIR holding a copy of the fixture as its hub database. */
export function dataDirWithFixture(): { dataDir: string; file: string; cleanup(): void } {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-backup-'));
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, 'meshhub.sqlite');
  copyFileSync(join(FIXTURE_DIR, 'meshhub.sqlite'), file);
  return { dataDir, file, cleanup: () => rmSync(dataDir, { recursive: true, force: true }) };
}

/**
 * The fixture's row counts once this build has migrated it: the tables added by the migrations
 * after its release are there, empty.
 */
export const ROWS_NOW: Record<string, number> = {
  ...EXPECTED.rows,
  readings_open: 0,
  // Version 7: the raw readings in compact rows under a key per node; `readings` is their view.
  reading_rows: EXPECTED.rows.readings!,
  reading_nodes: 4,
};

/** Brings a copy of the fixture to this build's schema, leaving no pre-migration copy behind. */
function migrateToNow(dataDir: string, file: string): void {
  closeDatabase(openDatabase(file));
  rmSync(join(dataDir, 'backups'), { recursive: true, force: true });
}

/** Every table's row count in a SQLite file (read-only; the file is not changed). */
export function rowCounts(file: string): Record<string, number> {
  return Object.fromEntries(
    Object.entries(digestTables(file)).map(([table, digest]) => [table, Number(digest.split(':')[0])]),
  );
}

/** `PRAGMA integrity_check` of a file: `ok` when sound. */
export function integrity(file: string): string {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

/** Sets a SQLite file's core schema version (`user_version`), as a newer meshhub would have. */
export function setSchemaVersion(file: string, version: number): void {
  const db = new BetterSqlite3(file);
  try {
    db.pragma(`user_version = ${version}`);
  } finally {
    db.close();
  }
}

/**
 * For a test file: what each test made is undone after it (`defer`), DATA_DIRs holding the
 * fixture (`fixtureDir`), and whole hubs in this process on one of them (`startHub`).
 */
export function backupTestKit() {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const defer = (cleanup: () => unknown) => cleanups.push(cleanup);
  /** A DATA_DIR with the fixture at this build's schema, or `asReleased` (for upgrade tests). */
  const fixtureDir = (options: { asReleased?: boolean } = {}) => {
    const made = dataDirWithFixture();
    defer(made.cleanup);
    if (!options.asReleased) migrateToNow(made.dataDir, made.file);
    return made;
  };
  const startHub = async (
    dataDir: string,
    extra: Record<string, string> = {},
  ): Promise<{ hub: Hub; base: string }> => {
    const env = loopbackHubEnv(dataDir, extra);
    const hub = await createHub(loadConfig(env), {
      log: pino({ level: 'silent' }),
      defaultMetrics: false,
      env,
    });
    await hub.start();
    defer(() => hub.stop());
    return { hub, base: `http://127.0.0.1:${hub.http.port}` };
  };
  return { defer, fixtureDir, startHub };
}
