/**
 * Upgrades that cannot eat data (README "Backups and upgrades"): a database written by the
 * release before this change (tests/fixtures/upgrade-v5) opens in this build with every row and
 * answer intact; a migration of a database with data is preceded by a checked copy in
 * BACKUP_DIR holding exactly its rows; a fresh database is not copied; a copy that cannot be made
 * stops the migration with the database left as it was.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StartupFailure } from '../../src/kernel/startup-failure.js';
import { migrateComponent } from '../../src/store/component-migrations.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { MIGRATIONS, migrate, schemaVersion } from '../../src/store/migrations.js';
import { endStartupCopies } from '../../src/store/pre-migration-backup.js';
import { getJson } from '../helpers/hub.js';
import { digestTables } from '../reliability/helpers/leaks.js';
import { tempDir } from '../store/fixtures.js';
import { backupTestKit, EXPECTED, FIXTURE_DIR, integrity, ROWS_NOW, rowCounts } from './fixture.js';

const { defer, fixtureDir, startHub } = backupTestKit();

function backupsIn(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

describe('the database of the release before (062ece3)', () => {
  it('is the previous release: schema v5, the rows the script wrote', () => {
    const { file } = fixtureDir({ asReleased: true });
    expect(EXPECTED.made_by).toBe('062ece3');
    expect(EXPECTED.schema_version).toBe(5);
    expect(rowCounts(file)).toEqual(EXPECTED.rows);
    expect(EXPECTED.rows.readings).toBeGreaterThan(100);
    expect(EXPECTED.rows.users).toBe(2);
    expect(EXPECTED.rows.messages).toBe(2);
  });

  it('opens in this build with every row of every table and the answers the API gave', async () => {
    const { dataDir, file } = fixtureDir({ asReleased: true });
    const { hub, base } = await startHub(dataDir);
    expect(schemaVersion(hub.store.db)).toBe(MIGRATIONS.length);
    // Nothing lost, nothing added (no radio runs): every table's count as the old release left
    // it, and every row the same; the tables added since are empty.
    expect(rowCounts(file)).toEqual(ROWS_NOW);
    const digests = digestTables(file);
    const released = Object.fromEntries(Object.keys(EXPECTED.rows).map((table) => [table, digests[table]]));
    expect(released).toEqual(digestTables(join(FIXTURE_DIR, 'meshhub.sqlite')));

    // Every node, under its id.
    const { body: nodes } = await getJson(`${base}/api/v1/nodes`);
    const ids = nodes.data.map((n: { node_id: string }) => n.node_id);
    expect([...ids].sort()).toEqual(EXPECTED.node_ids);

    // The users' passwords still log in; alice's conversation and texts are there.
    for (const [username, password] of Object.entries(EXPECTED.users)) {
      const login = await fetch(`${base}/api/v1/auth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password }),
      });
      expect(login.status).toBe(200);
    }
    const { access_token: token } = (await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'alice', password: EXPECTED.users.alice }),
    }).then((r) => r.json())) as { access_token: string };
    const conversations = (await fetch(`${base}/api/v1/messages/conversations`, {
      headers: { authorization: `Bearer ${token}` },
    }).then((r) => r.json())) as { data: { node_id: string; latest_text: string }[] };
    const list = conversations.data;
    expect(list).toHaveLength(1);
    expect(list[0]?.node_id).toBe(EXPECTED.texts_to);
    expect(list[0]?.latest_text).toBe('second text');

    await hub.stop();
    // The three logins above are the only change.
    expect(rowCounts(file)).toEqual({ ...ROWS_NOW, refresh_tokens: EXPECTED.rows.refresh_tokens! + 3 });
    expect(integrity(file)).toBe('ok');
  });
});

describe('a copy before every migration', () => {
  it('copies the core database before a newer migration, with exactly its rows, then migrates', () => {
    const { dataDir, file } = fixtureDir();
    const db = openDatabase(file);
    defer(() => closeDatabase(db));
    expect(backupsIn(join(dataDir, 'backups'))).toEqual([]); // nothing pending: no copy
    // A test-only release with one migration more.
    const next = [
      ...MIGRATIONS,
      {
        version: MIGRATIONS.length + 1,
        name: 'test: one more',
        up: 'CREATE TABLE upgrade_probe (id INTEGER);',
      },
    ];
    expect(migrate(db, next)).toBe(MIGRATIONS.length + 1);
    const copies = backupsIn(join(dataDir, 'backups'));
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatch(
      new RegExp(
        `^pre-migration-v${MIGRATIONS.length}-v${MIGRATIONS.length + 1}-\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}Z\\.sqlite$`,
      ),
    );
    const copy = join(dataDir, 'backups', copies[0]!);
    expect(integrity(copy)).toBe('ok');
    expect(rowCounts(copy)).toEqual(ROWS_NOW);
    expect(rowCounts(copy)).not.toHaveProperty('upgrade_probe');
  });

  it("copies before a component's migration, named after the component, at each start", () => {
    const { dataDir, file } = fixtureDir();
    const V1 = { version: 1, name: 'probe v1', up: 'CREATE TABLE probe_items (id INTEGER);' };
    const V2 = { version: 2, name: 'probe v2', up: 'ALTER TABLE probe_items ADD COLUMN name TEXT;' };
    // One start (a release with v1)…
    const first = openDatabase(file);
    migrateComponent(first, 'probe', [V1]);
    first.prepare('INSERT INTO probe_items (id) VALUES (1), (2)').run();
    closeDatabase(first);
    // … and the next, after an upgrade to v2.
    const db = openDatabase(file);
    defer(() => closeDatabase(db));
    migrateComponent(db, 'probe', [V1, V2]);
    const copies = backupsIn(join(dataDir, 'backups'));
    expect(copies.map((name) => name.replace(/-\d{4}-.*$/, ''))).toEqual([
      'pre-migration-probe-v0-v1',
      'pre-migration-probe-v1-v2',
    ]);
    expect(rowCounts(join(dataDir, 'backups', copies[0]!))).toEqual(ROWS_NOW);
    expect(rowCounts(join(dataDir, 'backups', copies[1]!))).toEqual({
      ...ROWS_NOW,
      component_migrations: EXPECTED.rows.component_migrations! + 1,
      probe_items: 2,
    });
  });

  it('makes one copy for all the migrations of one start, and a new one after the start', () => {
    const { dataDir, file } = fixtureDir();
    const db = openDatabase(file);
    defer(() => closeDatabase(db));
    // After an upgrade, the core and two features migrate as the hub starts; a module writes meanwhile.
    const next = [
      ...MIGRATIONS,
      {
        version: MIGRATIONS.length + 1,
        name: 'test: one more',
        up: 'CREATE TABLE upgrade_probe (id INTEGER);',
      },
    ];
    migrate(db, next);
    db.prepare('INSERT INTO upgrade_probe (id) VALUES (1)').run();
    migrateComponent(db, 'alpha', [
      { version: 1, name: 'alpha v1', up: 'CREATE TABLE alpha_items (id INTEGER);' },
    ]);
    migrateComponent(db, 'beta', [
      { version: 1, name: 'beta v1', up: 'CREATE TABLE beta_items (id INTEGER);' },
    ]);
    const copies = backupsIn(join(dataDir, 'backups'));
    expect(copies.map((name) => name.replace(/-\d{4}-.*$/, ''))).toEqual([
      `pre-migration-v${MIGRATIONS.length}-v${MIGRATIONS.length + 1}`,
    ]);
    // The database as it was before the upgrade.
    expect(rowCounts(join(dataDir, 'backups', copies[0]!))).toEqual(ROWS_NOW);
    // Once the start is over, a migration takes a copy of its own, with what was written since.
    endStartupCopies(db);
    migrateComponent(db, 'gamma', [
      { version: 1, name: 'gamma v1', up: 'CREATE TABLE gamma_items (id INTEGER);' },
    ]);
    const after = backupsIn(join(dataDir, 'backups'));
    expect(after).toHaveLength(2);
    const gamma = after.find((f) => f.startsWith('pre-migration-gamma-v0-v1-'));
    expect(gamma).toBeDefined();
    expect(rowCounts(join(dataDir, 'backups', gamma!))).toMatchObject({ upgrade_probe: 1, alpha_items: 0 });
  });

  it('takes no copy of a fresh, empty database', () => {
    const { dir, cleanup } = tempDir();
    defer(cleanup);
    const db = openDatabase(join(dir, 'meshhub.sqlite'));
    migrateComponent(db, 'probe', [
      { version: 1, name: 'probe', up: 'CREATE TABLE probe_items (id INTEGER);' },
    ]);
    closeDatabase(db);
    expect(backupsIn(join(dir, 'backups'))).toEqual([]);
  });

  it('migrates nothing when the copy cannot be made, and says so in one line', () => {
    const { dataDir, file } = fixtureDir();
    writeFileSync(join(dataDir, 'not-a-folder'), 'x');
    const db = openDatabase(file, { backupDir: join(dataDir, 'not-a-folder') });
    defer(() => closeDatabase(db));
    const next = [
      ...MIGRATIONS,
      { version: MIGRATIONS.length + 1, name: 'test', up: 'CREATE TABLE t (id INTEGER);' },
    ];
    let error: unknown;
    try {
      migrate(db, next);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(StartupFailure);
    const now = MIGRATIONS.length;
    expect((error as Error).message).toMatch(
      new RegExp(
        `^could not back up the database to .*not-a-folder/pre-migration-v${now}-v${now + 1}-.*\\.sqlite before migrating it from v${now} to v${now + 1} \\((ENOTDIR|EEXIST)\\): free space there or set BACKUP_DIR to a writable folder; nothing was migrated$`,
      ),
    );
    expect(schemaVersion(db)).toBe(MIGRATIONS.length);
  });
});
