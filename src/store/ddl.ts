/**
 * What the two applications' schemas write alike (docs/architecture.md "The two applications"):
 * the hub's SQLite (migrations.ts, and the components' migrations such as
 * src/billing/sqlite-schema.ts) and the upstream's PostgreSQL (sync/upstream/db/schema.ts). A
 * table both keep is defined once, as a list of columns; a column the two databases write alike
 * is one string, one they write each its own way names both (rollups.ts does the same for the
 * reading tables). A released migration's tables never change: a list here that one uses is
 * only ever appended to by a new migration, never edited.
 */

export type SqlDialect = 'sqlite' | 'pg';

/** A column (or table constraint) as both databases write it, or as each writes it; undefined: not in that one. */
export type ColumnDdl = string | Readonly<Record<SqlDialect, string | undefined>>;

/** Between two columns of a CREATE TABLE, as the released migrations have always laid them out. */
export const COLUMN_SEPARATOR = ',\n        ';

/** The SQL types each database gives a time (ms since the epoch) and a real number. */
export const SQL_TYPES: Readonly<Record<SqlDialect, { time: string; real: string }>> = {
  sqlite: { time: 'INTEGER', real: 'REAL' },
  pg: { time: 'BIGINT', real: 'DOUBLE PRECISION' },
};

/** One dialect's text of a column list, for the inside of a CREATE TABLE. */
export function columnsDdl(columns: readonly ColumnDdl[], dialect: SqlDialect): string {
  return columns
    .map((c) => (typeof c === 'string' ? c : c[dialect]))
    .filter((c): c is string => c !== undefined)
    .join(COLUMN_SEPARATOR);
}

/** A time column (ms since the epoch): `rest` follows the type (` NOT NULL`, …). */
export function timeColumn(name: string, rest = ''): ColumnDdl {
  return { sqlite: `${name} ${SQL_TYPES.sqlite.time}${rest}`, pg: `${name} ${SQL_TYPES.pg.time}${rest}` };
}

/**
 * A text's columns both `messages` tables keep alike (the hub's: migrations.ts, version 2; the
 * upstream's: sync/upstream/db/schema.ts, version 1), from its owner's name to why it failed.
 */
export const MESSAGE_TEXT_COLUMNS: readonly ColumnDdl[] = [
  'owner_name TEXT',
  'node_id TEXT NOT NULL',
  "direction TEXT NOT NULL CHECK (direction IN ('outbound', 'inbound'))",
  'sender_node_id TEXT',
  'target_node_id TEXT',
  'text TEXT NOT NULL',
  "status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'failed', 'received', 'read'))",
  'failure_code TEXT',
  'failure_reason TEXT',
];
