/**
 * One INSERT prepared for 64, 32, 16, 8, 4, 2 and 1 rows of VALUES: `run` writes n rows with as
 * few calls into SQLite as those sizes allow (50 rows: 32 + 16 + 2, three calls instead of fifty).
 * Each call into better-sqlite3 costs a bind, a step and a reset; on the ingest hot path the
 * writer would otherwise spend more on calls than on rows. Statements are prepared on first use.
 */
import type { Database, Statement } from './database.js';

export const MAX_ROWS_PER_STATEMENT = 64;

/** `(?,?,?),(?,?,?)`: `rows` rows of `columns` placeholders. */
export function placeholders(columns: number, rows: number): string {
  const row = `(${new Array(columns).fill('?').join(',')})`;
  return new Array(rows).fill(row).join(',');
}

export class MultiRowStatement {
  private readonly statements = new Map<number, Statement>();

  /**
   * @param sql the statement for `rows` rows (of `width` values each)
   */
  constructor(
    private readonly db: Database,
    readonly width: number,
    private readonly sql: (rows: number) => string,
  ) {}

  /** Runs the first `rows` rows of `args` (`width` values a row); returns the rows changed. */
  run(args: readonly unknown[], rows: number): number {
    let changes = 0;
    let offset = 0;
    for (let size = MAX_ROWS_PER_STATEMENT; rows > 0; size >>= 1) {
      while (rows >= size) {
        const values =
          offset === 0 && args.length === size * this.width
            ? args
            : args.slice(offset * this.width, (offset + size) * this.width);
        changes += this.statement(size).run(...values).changes;
        offset += size;
        rows -= size;
      }
    }
    return changes;
  }

  private statement(rows: number): Statement {
    let statement = this.statements.get(rows);
    if (!statement) {
      statement = this.db.prepare(this.sql(rows));
      this.statements.set(rows, statement);
    }
    return statement;
  }
}
