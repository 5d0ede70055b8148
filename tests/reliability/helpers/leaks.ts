/**
 * What no answer to bad input may contain (docs/architecture.md "Decisions": errors: 5xx messages are generic; no
 * stack trace or internal detail in any answer), and a digest of the stored data to prove bad
 * input changed nothing.
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';

const INTERNALS: { what: string; pattern: RegExp }[] = [
  { what: 'a stack frame', pattern: /\n\s+at [^\n]+(:\d+:\d+|\(native\))/ },
  { what: 'a source file', pattern: /\.(ts|js|mjs|cjs):\d+/ },
  { what: 'node_modules', pattern: /node_modules/ },
  { what: 'a SQLite error', pattern: /SQLITE_[A-Z]|SqliteError|better-sqlite3|no such (table|column)/ },
  { what: 'a JavaScript error name', pattern: /\b(TypeError|ReferenceError|RangeError|InternalError)\b/ },
  { what: 'undefined/object leaking into text', pattern: /\[object Object\]|\bundefined is not\b/ },
];

/**
 * Why `body` shows internals, or undefined; `paths` are directories that must not be named.
 * A match that is only the request echoed back (`sent`: its decoded URL and body) is no leak.
 */
export function leakIn(body: string, paths: string[] = [], sent = ''): string | undefined {
  for (const { what, pattern } of INTERNALS) {
    const match = pattern.exec(body)?.[0];
    if (match !== undefined && !sent.includes(match.trim())) return what;
  }
  for (const p of paths) if (p && body.includes(p)) return `the path ${p}`;
  return undefined;
}

/** Per table and view (`readings` is one): row count and a hash over its rows (order-independent). */
export function digestTables(file: string, skip: readonly string[] = []): Record<string, string> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    const digest: Record<string, string> = {};
    for (const table of tables) {
      if (skip.includes(table)) continue;
      const hashes: string[] = [];
      for (const row of db.prepare(`SELECT * FROM "${table}"`).raw().iterate() as Iterable<unknown[]>) {
        hashes.push(
          createHash('sha1')
            .update(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)))
            .digest('hex'),
        );
      }
      hashes.sort();
      digest[table] =
        `${hashes.length}:${createHash('sha1').update(hashes.join()).digest('hex').slice(0, 16)}`;
    }
    return digest;
  } finally {
    db.close();
  }
}

/** Tables whose digests differ. */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((n) => before[n] !== after[n]).sort();
}

/** Count and a hash of `columns` of every row of `table` (or view), in `order`: the same rows give the same answer. */
export function fingerprintRows(
  db: Database.Database,
  table: string,
  columns: string,
  order: string,
): { rows: number; hash: string } {
  const hash = createHash('sha256');
  let rows = 0;
  for (const row of db.prepare(`SELECT ${columns} FROM ${table} ORDER BY ${order}`).raw(true).iterate()) {
    hash.update(JSON.stringify(row));
    rows++;
  }
  return { rows, hash: hash.digest('hex') };
}
