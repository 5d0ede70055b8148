/**
 * Migrations of an optional component (a plugin), tracked per component in their own table.
 *
 * The core schema's version lives in `PRAGMA user_version` (migrations.ts) and must not depend
 * on which plugins are switched on: a hub started with `PLUGINS=audit` and later without it
 * has the same core version either way. So each component keeps its own ordered list of
 * migrations, and `component_migrations` records which of them ran, one row per migration.
 *
 * The rules are the core's: versions are 1, 2, 3, … in order; each pending migration runs in
 * its own IMMEDIATE transaction together with its row in `component_migrations`, so a crash
 * leaves the component at a whole version; a released migration never changes; a database
 * written by a newer version of the component is refused rather than guessed at.
 */
import { StartupFailure } from '../kernel/startup-failure.js';
import type { Database } from './database.js';
import type { Migration } from './migrations.js';
import { backupBeforeMigration } from './pre-migration-backup.js';

export type ComponentMigration = Migration & {
  /**
   * The migration rebuilds a table that others reference (SQLite's "make other kinds of table
   * schema changes" procedure: create, copy, drop, rename). Foreign keys are switched off around
   * its transaction, so dropping the old table cascades nothing, and checked before it commits.
   */
  rebuildsTables?: boolean;
};

const COMPONENT_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

/** As SchemaTooNewError (migrations.ts), for one component's schema: one line at start-up. */
export class ComponentSchemaTooNewError extends StartupFailure {
  override readonly name = 'ComponentSchemaTooNewError';
  constructor(
    readonly component: string,
    readonly found: number,
    readonly known: number,
  ) {
    super(
      `the database holds version ${found} of the "${component}" schema, newer than this meshhub knows (${known}); upgrade meshhub, or restore a backup made by this version (meshhub restore)`,
    );
  }
}

function ensureLedger(db: Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS component_migrations (
      component TEXT NOT NULL,
      version INTEGER NOT NULL,
      name TEXT NOT NULL,
      applied_at INTEGER NOT NULL,
      PRIMARY KEY (component, version)
    ) WITHOUT ROWID;
  `);
}

/** The last applied version of a component's schema; 0 when none of its migrations ran. */
export function componentSchemaVersion(db: Database, component: string): number {
  ensureLedger(db);
  const row = db
    .prepare('SELECT max(version) AS version FROM component_migrations WHERE component = ?')
    .get(component) as { version: number | null };
  return row.version ?? 0;
}

/**
 * Applies every pending migration of `component`, each in its own transaction. Returns the
 * resulting version. Safe to call on every start and from several places: a component already
 * at the newest version costs one indexed read.
 */
export function migrateComponent(
  db: Database,
  component: string,
  migrations: readonly ComponentMigration[],
  now: () => number = Date.now,
): number {
  if (!COMPONENT_NAME.test(component)) {
    throw new Error(`component name "${component}" must be lower-case letters, digits, "-" or "_"`);
  }
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new Error(`${component} migration "${m.name}" has version ${m.version}, expected ${i + 1}`);
    }
  });
  const current = componentSchemaVersion(db, component);
  if (current > migrations.length)
    throw new ComponentSchemaTooNewError(component, current, migrations.length);
  // A database with data is copied first (pre-migration-backup.ts): an upgrade cannot eat it.
  if (current < migrations.length)
    backupBeforeMigration(db, { component, from: current, to: migrations.length });
  const record = db.prepare(
    'INSERT INTO component_migrations (component, version, name, applied_at) VALUES (?, ?, ?, ?)',
  );
  for (const migration of migrations.slice(current)) {
    const apply = db.transaction(() => {
      // Re-checked inside the write lock: another connection may have migrated meanwhile.
      if (componentSchemaVersion(db, component) >= migration.version) return;
      if (typeof migration.up === 'string') db.exec(migration.up);
      else migration.up(db);
      if (migration.rebuildsTables && (db.pragma('foreign_key_check') as unknown[]).length > 0)
        throw new Error(`${component} migration "${migration.name}" left rows without their parent`);
      record.run(component, migration.version, migration.name, now());
    });
    if (!migration.rebuildsTables) {
      apply.immediate();
      continue;
    }
    // A pragma that is a no-op inside a transaction: set around it.
    db.pragma('foreign_keys = OFF');
    try {
      apply.immediate();
    } finally {
      db.pragma('foreign_keys = ON');
    }
  }
  return componentSchemaVersion(db, component);
}
