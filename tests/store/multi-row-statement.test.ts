/** Multi-row INSERTs in power-of-two chunks: every row written once, in order, whatever the count. */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MultiRowStatement, placeholders } from '../../src/store/multi-row-statement.js';

function table() {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)');
  const insert = new MultiRowStatement(
    db,
    2,
    (rows) => `INSERT OR IGNORE INTO t (k, v) VALUES ${placeholders(2, rows)}`,
  );
  return { db, insert };
}

describe('MultiRowStatement', () => {
  it.each([0, 1, 2, 3, 50, 63, 64, 65, 127, 200])('writes %i rows, each once and in order', (rows) => {
    const { db, insert } = table();
    const args = Array.from({ length: rows }, (_, i) => [i, `row ${i}`]).flat();
    // Extra values past the rows asked for are not written.
    args.push(999, 'not a row');
    expect(insert.run(args, rows)).toBe(rows);
    const stored = db.prepare('SELECT k, v FROM t ORDER BY k').all() as Array<{ k: number; v: string }>;
    expect(stored).toEqual(Array.from({ length: rows }, (_, i) => ({ k: i, v: `row ${i}` })));
  });

  it('returns the rows actually changed, so a caller can tell a conflict', () => {
    const { insert } = table();
    insert.run([1, 'a', 2, 'b'], 2);
    expect(insert.run([2, 'again', 3, 'c', 4, 'd'], 3)).toBe(2);
  });
});
