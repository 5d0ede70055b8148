/** Small named JSON values the audit plugin keeps across restarts (`audit_state`). */
import type { Database, Statement } from '../../../src/store/database.js';

export class PluginState {
  private readonly read: Statement;
  private readonly write: Statement;
  private readonly remove: Statement;

  constructor(db: Database) {
    this.read = db.prepare('SELECT value FROM audit_state WHERE key = ?').pluck();
    this.write = db.prepare(`
      INSERT INTO audit_state (key, value, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`);
    this.remove = db.prepare('DELETE FROM audit_state WHERE key = ?');
  }

  get<T>(key: string): T | undefined {
    const value = this.read.get(key) as string | undefined;
    return value === undefined ? undefined : (JSON.parse(value) as T);
  }

  set(key: string, value: unknown, now = Date.now()): void {
    this.write.run(key, JSON.stringify(value), now);
  }

  delete(key: string): void {
    this.remove.run(key);
  }
}
