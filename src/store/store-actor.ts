import { dirname } from 'node:path';
import { Actor } from '../kernel/actor.js';
import type { Logger } from '../log.js';
import { secureDataDir } from './data-dir.js';
import { closeDatabase, type Database, type OpenDatabaseOptions, openDatabase } from './database.js';
import type { MigrationProgress } from './migrations.js';
import type { PageSizeConversion } from './page-size.js';

/**
 * Owns the one SQLite connection. It is opened (and migrated) when the hub is composed, before
 * any module is created, so every module's context holds the typed connection; it is closed
 * last. It is not restartable: every module holds statements on it, so a store that cannot go
 * on stops the hub, and systemd starts a fresh process.
 */
export class StoreActor extends Actor {
  readonly name = 'store';
  override readonly restartable = false;

  /**
   * Opens the database file (running migrations); the modules' contexts need it before start.
   * First its folder, DATA_DIR, is made private: umask 077 for the process, the folder 0700 and
   * every file in it 0600, the signing key the hub made a moment before included (README "Files
   * on disk"). A file it cannot tighten stops the start (a ConfigError naming it).
   */
  static open(
    file: string,
    log: Logger,
    options: Pick<OpenDatabaseOptions, 'backupDir' | 'onMigrationProgress'> = {},
  ): StoreActor {
    secureDataDir(dirname(file));
    const onMigrationProgress = (p: MigrationProgress) => {
      // A long migration (a year of readings: a minute or more on a Pi) says what it is doing.
      if (p.phase === 'backup')
        log.info({ from: p.from, to: p.to }, `copying the database before migrating it to schema ${p.to}`);
      else if (p.phase === 'pages')
        log.info(
          { from: p.from, to: p.to, bytes: p.bytes },
          `rewriting the database into ${p.to}-byte pages, once (fewer writes to the SD card); the hub answers once it is done`,
        );
      else
        log.info(
          { version: p.version, done: p.done, total: p.total },
          `migrating the database to schema ${p.version} (${p.name}): ${p.done} of ${p.total} rows moved; the hub answers once it is done`,
        );
      options.onMigrationProgress?.(p);
    };
    const onPageSizeConversion = (c: PageSizeConversion) => {
      if (c.outcome === 'converted')
        log.info(
          { from: c.from, to: c.to, bytes: c.bytes, ms: c.ms },
          `database rewritten into ${c.to}-byte pages`,
        );
      else
        log.warn({ from: c.from, to: c.to }, `database keeps its ${c.from}-byte pages for now: ${c.reason}`);
    };
    const db = openDatabase(file, {
      ...options,
      onMigrationProgress,
      smallPages: true,
      onPageSizeConversion,
    });
    return new StoreActor(file, db, log);
  }

  private constructor(
    private readonly file: string,
    readonly db: Database,
    private readonly log: Logger,
  ) {
    super();
  }

  async start(): Promise<void> {
    if (!this.db.open) throw new Error('the store was closed; it cannot be reopened in this process');
    this.log.info({ file: this.file }, 'store open');
  }

  async stop(): Promise<void> {
    closeDatabase(this.db);
  }
}
