/**
 * Actor, operation and result names stored once and referenced by integer id. A bounded
 * in-memory cache keeps ingestion and output off the dictionary tables.
 *
 * Text filters are literal (spec "Events query parameters": user text is never a pattern):
 * the needle is lower-cased in JavaScript, like the stored `folded` column, and compared with
 * `instr`, which has no wildcards at all.
 */
import type { Database, Statement } from '../../../src/store/database.js';

export type NormalizedResult = 'success' | 'failure' | 'unknown';

/** Unicode-aware case folding, done the same way for stored names and filter text. */
export const fold = (value: string): string => value.toLowerCase();

const CACHE_LIMIT = 200_000;

/** At most this many ids come back from a substring match; more means "most of them". */
export const MAX_MATCHED_IDS = 50_000;

class NameDictionary {
  private readonly byName = new Map<string, number>();
  private readonly byId = new Map<number, string>();
  private readonly insert: Statement;
  private readonly selectId: Statement;
  private readonly selectName: Statement;
  private readonly match: Statement;
  private readonly exact: Statement;

  constructor(
    db: Database,
    readonly table: 'audit_actors' | 'audit_operations' | 'audit_tenants',
  ) {
    this.insert = db.prepare(
      `INSERT INTO ${table} (name, folded) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`,
    );
    this.selectId = db.prepare(`SELECT id FROM ${table} WHERE name = ?`).pluck();
    this.selectName = db.prepare(`SELECT name FROM ${table} WHERE id = ?`).pluck();
    this.match = db
      .prepare(`SELECT id FROM ${table} WHERE instr(folded, ?) > 0 LIMIT ${MAX_MATCHED_IDS + 1}`)
      .pluck();
    this.exact = db.prepare(`SELECT id FROM ${table} WHERE folded = ?`).pluck();
  }

  /** The id of `name`, created when new. Call inside the writer's transaction. */
  idOf(name: string): number {
    const cached = this.byName.get(name);
    if (cached !== undefined) return cached;
    this.insert.run(name, fold(name));
    const id = this.selectId.get(name) as number;
    this.remember(name, id);
    return id;
  }

  nameOf(id: number): string {
    const cached = this.byId.get(id);
    if (cached !== undefined) return cached;
    const name = (this.selectName.get(id) as string | undefined) ?? '';
    this.remember(name, id);
    return name;
  }

  /** Ids whose name contains `needle`, case-insensitively and literally. */
  matching(needle: string): number[] {
    return this.match.all(fold(needle)) as number[];
  }

  /** Ids whose name equals one of `names`, case-insensitively. */
  exactly(names: readonly string[]): number[] {
    return names.flatMap((n) => this.exact.all(fold(n)) as number[]);
  }

  clear(): void {
    this.byName.clear();
    this.byId.clear();
  }

  private remember(name: string, id: number): void {
    if (this.byName.size >= CACHE_LIMIT) this.clear();
    this.byName.set(name, id);
    this.byId.set(id, name);
  }
}

export interface ResultEntry {
  raw: string;
  normalized: NormalizedResult;
}

class ResultDictionary {
  private readonly byRaw = new Map<string, number>();
  private readonly byId = new Map<number, ResultEntry>();
  private readonly insert: Statement;
  private readonly selectId: Statement;
  private readonly selectEntry: Statement;
  private readonly match: Statement;

  constructor(db: Database) {
    this.insert = db.prepare(
      'INSERT INTO audit_results (raw, normalized, folded) VALUES (?, ?, ?) ON CONFLICT (raw) DO NOTHING',
    );
    this.selectId = db.prepare('SELECT id FROM audit_results WHERE raw = ?').pluck();
    this.selectEntry = db.prepare('SELECT raw, normalized FROM audit_results WHERE id = ?');
    this.match = db
      .prepare('SELECT id FROM audit_results WHERE instr(folded, ?) > 0 OR instr(normalized, ?) > 0')
      .pluck();
  }

  idOf(raw: string, normalized: NormalizedResult): number {
    const cached = this.byRaw.get(raw);
    if (cached !== undefined) return cached;
    this.insert.run(raw, normalized, fold(raw));
    const id = this.selectId.get(raw) as number;
    this.byRaw.set(raw, id);
    return id;
  }

  entry(id: number): ResultEntry {
    const cached = this.byId.get(id);
    if (cached) return cached;
    const row = this.selectEntry.get(id) as ResultEntry | undefined;
    const entry = row ?? { raw: '', normalized: 'unknown' };
    this.byId.set(id, entry);
    return entry;
  }

  /** Ids whose raw value or normalized value contains `needle` (so `fail` finds `Failed` and `failure`). */
  matching(needle: string): number[] {
    const f = fold(needle);
    return this.match.all(f, f) as number[];
  }

  clear(): void {
    this.byRaw.clear();
    this.byId.clear();
  }
}

export class Dictionaries {
  readonly actors: NameDictionary;
  readonly operations: NameDictionary;
  readonly results: ResultDictionary;
  /** The tenants by the operator's short name (AUDIT_TENANTS); `default` is id 1. */
  readonly tenants: NameDictionary;

  constructor(db: Database) {
    this.actors = new NameDictionary(db, 'audit_actors');
    this.operations = new NameDictionary(db, 'audit_operations');
    this.results = new ResultDictionary(db);
    this.tenants = new NameDictionary(db, 'audit_tenants');
  }

  /** After entries were deleted (maintenance prunes unused names): cached ids may be stale. */
  clear(): void {
    this.actors.clear();
    this.operations.clear();
    this.results.clear();
    this.tenants.clear();
  }
}
