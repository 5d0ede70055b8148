import type Database from 'better-sqlite3';
import { Actor } from '../src/kernel/actor.js';
import type { Logger } from '../src/log.js';
import { closeDatabase, openDatabase } from '../src/store/database.js';

/** Owns the one SQLite connection: opens it (running migrations) first, closes it last. */
export class StoreActor extends Actor {
  readonly name = 'store';
  private connection: Database.Database | undefined;

  constructor(
    private readonly file: string,
    private readonly log: Logger,
  ) {
    super();
  }

  get db(): Database.Database {
    if (!this.connection) throw new Error('the store is not open');
    return this.connection;
  }

  async start(): Promise<void> {
    this.connection = openDatabase(this.file);
    this.log.info({ file: this.file }, 'store open');
  }

  async stop(): Promise<void> {
    const db = this.connection;
    this.connection = undefined;
    if (db) closeDatabase(db);
  }
}
