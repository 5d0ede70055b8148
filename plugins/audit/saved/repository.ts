/**
 * The saved searches' table (store/schema.ts, audit migration 8). One instance per connection
 * (`SavedSearchRepository.on(db)`): `revision` is bumped on every write, so alert rules built on
 * a saved search are compiled again (alerts/engine.ts) and match its new filters.
 */
import type { Database, Statement } from '../../../src/store/database.js';

export interface SavedSearchRow {
  id: number;
  name: string;
  name_folded: string;
  owner: string;
  owner_name: string;
  shared_role: string | null;
  /** The filters as saved: the search API's parameters, JSON. */
  filters: string;
  created_at: number;
  updated_at: number;
}

export interface NewSavedSearch {
  name: string;
  owner: string;
  ownerName: string;
  sharedRole: string | null;
  filters: Record<string, unknown>;
}

/** The owner already has a saved search of this name (case-insensitive). */
export class SavedNameTakenError extends Error {
  override readonly name = 'SavedNameTakenError';
}

const isUniqueViolation = (error: unknown) =>
  error instanceof Error && /UNIQUE constraint failed: audit_saved_searches\./.test(error.message);

/** The statements, prepared once per connection. */
const SQL = {
  get: 'SELECT * FROM audit_saved_searches WHERE id = ?',
  // The caller's own, those shared with one of its roles (a JSON array), and for an audit admin
  // every shared one; by name.
  visible: `SELECT * FROM audit_saved_searches
    WHERE owner = ? OR shared_role IN (SELECT value FROM json_each(?)) OR (? = 1 AND shared_role IS NOT NULL)
    ORDER BY name_folded, id`,
  countOwned: 'SELECT count(*) AS n FROM audit_saved_searches WHERE owner = ?',
  insert: `INSERT INTO audit_saved_searches
    (name, name_folded, owner, owner_name, shared_role, filters, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  update: `UPDATE audit_saved_searches SET name = ?, name_folded = ?, shared_role = ?, filters = ?, updated_at = ?
    WHERE id = ?`,
  delete: 'DELETE FROM audit_saved_searches WHERE id = ?',
};

const byDb = new WeakMap<Database, SavedSearchRepository>();

export class SavedSearchRepository {
  revision = 0;
  private readonly s: Record<keyof typeof SQL, Statement>;

  /** The repository of this connection (one, so its revision is the one the alert rules watch). */
  static on(db: Database): SavedSearchRepository {
    const repo = byDb.get(db) ?? new SavedSearchRepository(db);
    byDb.set(db, repo);
    return repo;
  }

  private constructor(readonly db: Database) {
    this.s = Object.fromEntries(Object.entries(SQL).map(([k, sql]) => [k, db.prepare(sql)])) as Record<
      keyof typeof SQL,
      Statement
    >;
  }

  get(id: number): SavedSearchRow | undefined {
    return this.s.get.get(id) as SavedSearchRow | undefined;
  }

  /** Owned by `owner`, shared with one of `roles`, or (`admin`) shared at all. */
  visible(owner: string, roles: readonly string[], admin: boolean): SavedSearchRow[] {
    return this.s.visible.all(owner, JSON.stringify(roles), admin ? 1 : 0) as SavedSearchRow[];
  }

  countOwned(owner: string): number {
    return (this.s.countOwned.get(owner) as { n: number }).n;
  }

  create(search: NewSavedSearch, now: number): SavedSearchRow {
    try {
      const { lastInsertRowid } = this.s.insert.run(
        search.name,
        search.name.toLowerCase(),
        search.owner,
        search.ownerName,
        search.sharedRole,
        JSON.stringify(search.filters),
        now,
        now,
      );
      this.revision++;
      return this.get(Number(lastInsertRowid))!;
    } catch (error) {
      if (isUniqueViolation(error)) throw new SavedNameTakenError(search.name);
      throw error;
    }
  }

  update(
    id: number,
    change: { name: string; sharedRole: string | null; filters: Record<string, unknown> },
    now: number,
  ): SavedSearchRow | undefined {
    try {
      const { changes } = this.s.update.run(
        change.name,
        change.name.toLowerCase(),
        change.sharedRole,
        JSON.stringify(change.filters),
        now,
        id,
      );
      this.revision++;
      return changes ? this.get(id) : undefined;
    } catch (error) {
      if (isUniqueViolation(error)) throw new SavedNameTakenError(change.name);
      throw error;
    }
  }

  delete(id: number): SavedSearchRow | undefined {
    const before = this.get(id);
    if (!before) return undefined;
    this.s.delete.run(id);
    this.revision++;
    return before;
  }
}
