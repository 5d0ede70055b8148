/**
 * `meshhub backup` and `meshhub restore` as a person runs them (the built command, a real
 * process): a backup taken while the hub runs and writes is consistent (integrity_check, exact
 * counts, whole transactions only); restore refuses while a hub runs on DATA_DIR and refuses a
 * file that is not SQLite, is damaged, is not a meshhub database or is from a newer meshhub, each
 * in one line with nothing changed; a good restore keeps the current database aside.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Hub } from '../../hub/main.js';
import { loopbackHubEnv } from '../../scripts/bench/lib/hub-env.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { buildCli, meshhubCli } from '../helpers/cli.js';
import { backupTestKit, FIXTURE_DIR, integrity, ROWS_NOW, rowCounts, setSchemaVersion } from './fixture.js';

beforeAll(() => buildCli(), 300_000);

const { defer, fixtureDir, startHub: startHubOn } = backupTestKit();

const envFor = (dataDir: string) => ({ PATH: process.env.PATH, DATA_DIR: dataDir });

const startHub = async (dataDir: string): Promise<Hub> => (await startHubOn(dataDir)).hub;

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const BATCH = 100;

describe('meshhub backup', () => {
  it('copies a consistent database while the hub runs and writes, and says where in one line', async () => {
    const { dataDir } = fixtureDir();
    const hub = await startHub(dataDir);
    // The hub keeps writing while the backup runs: batches of 100 rows, each one transaction.
    const db = hub.store.db;
    db.exec('CREATE TABLE backup_probe (batch INTEGER NOT NULL, n INTEGER NOT NULL)');
    const insert = db.prepare('INSERT INTO backup_probe (batch, n) VALUES (?, ?)');
    let batches = 0;
    const writeBatch = db.transaction((batch: number) => {
      for (let n = 0; n < BATCH; n++) insert.run(batch, n);
    });
    writeBatch(batches++);
    const writer = setInterval(() => writeBatch(batches++), 1);
    defer(() => clearInterval(writer));
    const before = batches;

    const result = await meshhubCli(['backup'], { env: envFor(dataDir) });
    clearInterval(writer);
    const after = batches;

    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const line = new RegExp(
      `^backed up (\\S+) to (\\S+) \\((\\d+ kB|\\d+\\.\\d MB), schema v${MIGRATIONS.length}, integrity ok\\)\\n$`,
    ).exec(result.out);
    expect(line, result.out).not.toBeNull();
    expect(line![1]).toBe(join(dataDir, 'meshhub.sqlite'));
    const file = line![2]!;
    expect(file).toMatch(
      new RegExp(`^${join(dataDir, 'backups')}/meshhub-\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}Z\\.sqlite$`),
    );
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'backups')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(dataDir, 'backups'))).toEqual([file.split('/').pop()]); // no .partial left

    expect(integrity(file)).toBe('ok');
    const counts = rowCounts(file);
    const { backup_probe: probe, ...rest } = counts;
    // Everything the hub had, exactly; the rows written meanwhile only as whole transactions.
    expect(rest).toEqual(ROWS_NOW);
    expect(probe! % BATCH).toBe(0);
    expect(probe! / BATCH).toBeGreaterThanOrEqual(before);
    expect(probe! / BATCH).toBeLessThanOrEqual(after);
    const copy = new BetterSqlite3(file, { readonly: true });
    const torn = copy.prepare(
      'SELECT count(*) FROM (SELECT batch FROM backup_probe GROUP BY batch HAVING count(*) <> ?)',
    );
    expect(torn.pluck().get(BATCH)).toBe(0);
    copy.close();
  });

  it('writes to a file named on the command line, and refuses one that exists', async () => {
    const { dataDir } = fixtureDir();
    const target = join(dataDir, 'mine.sqlite');
    const made = await meshhubCli(['backup', target], { env: envFor(dataDir) });
    expect(made.code).toBe(0);
    expect(made.out).toMatch(new RegExp(`^backed up \\S+ to ${target} \\(`));
    expect(rowCounts(target)).toEqual(ROWS_NOW);

    const again = await meshhubCli(['backup', target], { env: envFor(dataDir) });
    expect(again).toEqual({ code: 1, out: '', err: `meshhub backup: ${target} exists; name a new file\n` });
  });

  it('says in one line when DATA_DIR holds no hub database', async () => {
    const { dataDir } = fixtureDir();
    const empty = join(dataDir, 'empty');
    const result = await meshhubCli(['backup'], { env: envFor(empty) });
    expect(result).toEqual({
      code: 1,
      out: '',
      err: `meshhub backup: no hub database at ${join(empty, 'meshhub.sqlite')}; set DATA_DIR to the hub's data directory\n`,
    });
  });
});

describe('meshhub restore', () => {
  it('refuses while a hub runs on DATA_DIR, and changes nothing', async () => {
    const { dataDir, file } = fixtureDir();
    const backup = join(dataDir, 'copy.sqlite');
    copyFileSync(join(FIXTURE_DIR, 'meshhub.sqlite'), backup);
    await startHub(dataDir);
    const files = readdirSync(dataDir).sort();
    const result = await meshhubCli(['restore', backup], { env: envFor(dataDir) });
    expect(result).toEqual({
      code: 1,
      out: '',
      err: `meshhub restore: a hub is running on DATA_DIR=${dataDir} (pid ${process.pid}): stop it first (systemctl stop meshhub), then restore\n`,
    });
    expect(readdirSync(dataDir).sort()).toEqual(files);
    expect(existsSync(file)).toBe(true);
  });

  it('puts a backup in place, keeping the database it replaces aside', async () => {
    const { dataDir, file } = fixtureDir();
    const backup = join(dataDir, 'backup.sqlite');
    expect((await meshhubCli(['backup', backup], { env: envFor(dataDir) })).code).toBe(0);
    // The hub's database moves on after the backup: a user more.
    const db = new BetterSqlite3(file);
    db.prepare("DELETE FROM users WHERE username = 'bob'").run();
    db.close();
    const current = rowCounts(file);

    const result = await meshhubCli(['restore', backup], { env: envFor(dataDir) });
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const line = new RegExp(
      `^restored backup\\.sqlite \\(schema v${MIGRATIONS.length}, \\d+ kB\\) to (\\S+); the database it replaced is kept as (\\S+)\\n$`,
    ).exec(result.out);
    expect(line, result.out).not.toBeNull();
    expect(line![1]).toBe(file);
    expect(line![2]).toMatch(new RegExp(`^${dataDir}/meshhub\\.before-restore-\\d{4}-.*Z\\.sqlite$`));
    expect(rowCounts(file)).toEqual(ROWS_NOW);
    expect(rowCounts(line![2]!)).toEqual(current);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The restored database is the hub's again.
    const hub = await startHub(dataDir);
    expect(hub.store.db.prepare('SELECT count(*) FROM users').pluck().get()).toBe(2);
  });

  const refusals: [string, (file: string) => void, RegExp][] = [
    [
      'a file that is not SQLite',
      (f) => writeFileSync(f, 'timestamp,temperature\n1,20.5\n'.repeat(200)),
      /it is not a SQLite database/,
    ],
    [
      'a damaged database',
      (f) => {
        copyFileSync(join(FIXTURE_DIR, 'meshhub.sqlite'), f);
        const fd = openSync(f, 'r+');
        writeSync(fd, Buffer.alloc(4096 * 8, 0xa5), 0, 4096 * 8, 4096 * 10);
        closeSync(fd);
      },
      /it (is damaged \(SQLITE_CORRUPT\)|failed integrity_check \(.+\))/,
    ],
    [
      'a database from a newer meshhub',
      (f) => {
        copyFileSync(join(FIXTURE_DIR, 'meshhub.sqlite'), f);
        setSchemaVersion(f, 99);
      },
      new RegExp(
        `it was written by a newer meshhub \\(schema v99; this one knows v${MIGRATIONS.length}\\): restore it with that version`,
      ),
    ],
    [
      "a SQLite database that is not the hub's",
      (f) => {
        const other = new BetterSqlite3(f);
        other.exec('CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES (1)');
        other.close();
      },
      /it is not a meshhub database/,
    ],
  ];

  it.each(refusals)('refuses %s in one line, and changes nothing', async (_what, make, problem) => {
    const { dataDir, file } = fixtureDir();
    const bad = join(dataDir, 'bad.sqlite');
    make(bad);
    const hash = sha(file);
    // Only the DATA_DIR lock, which every hub makes, may appear.
    const listing = () =>
      readdirSync(dataDir)
        .filter((name) => name !== 'hub.lock')
        .sort();
    const files = listing();
    const result = await meshhubCli(['restore', bad], { env: envFor(dataDir) });
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    expect(result.err).toMatch(
      new RegExp(`^meshhub restore: refused ${bad}: ${problem.source}; nothing was changed\\n$`),
    );
    expect(sha(file)).toBe(hash);
    expect(listing()).toEqual(files);
  });

  it('names the missing file', async () => {
    const { dataDir } = fixtureDir();
    const result = await meshhubCli(['restore', join(dataDir, 'nope.sqlite')], { env: envFor(dataDir) });
    expect(result).toEqual({
      code: 1,
      out: '',
      err: `meshhub restore: ${join(dataDir, 'nope.sqlite')} is not a file\n`,
    });
  });
});

describe('a database from a newer meshhub at start', () => {
  const startEnv = (dataDir: string) => ({ ...envFor(dataDir), ...loopbackHubEnv(dataDir) });

  it('is refused in one line, never migrated down', async () => {
    const { dataDir, file } = fixtureDir();
    setSchemaVersion(file, 99);
    const result = await meshhubCli(['start'], { env: startEnv(dataDir) });
    expect(result.code).toBe(1);
    expect(result.err).toBe(
      `meshhub: database schema version 99 is newer than this meshhub knows (${MIGRATIONS.length}); upgrade meshhub, or restore a backup made by this version (meshhub restore)\n`,
    );
    const db = new BetterSqlite3(file, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(99);
    db.close();
  });

  it("is refused in one line when one component's schema is newer", async () => {
    const { dataDir, file } = fixtureDir();
    const db = new BetterSqlite3(file);
    db.prepare("INSERT INTO component_migrations VALUES ('topology', 7, 'from the future', 0)").run();
    db.close();
    const result = await meshhubCli(['start'], { env: startEnv(dataDir) });
    expect(result.code).toBe(1);
    expect(result.err).toMatch(
      /^meshhub: the database holds version 7 of the "topology" schema, newer than this meshhub knows \(\d+\); upgrade meshhub, or restore a backup made by this version \(meshhub restore\)\n$/,
    );
  });
});
