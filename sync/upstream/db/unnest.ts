/**
 * Rows of a batch as PostgreSQL parameters: one array literal per column, unnested back into rows
 * in the statement (`unnest($n::t[], …)`), so a batch's records go in a few multi-row statements
 * however many there are (sync/upstream/batch-apply.ts).
 */

/**
 * A PostgreSQL array literal: numbers bare, strings quoted. Faster than pg's own serialiser
 * (which quotes every element) on the columns of a batch; numbers keep their shortest
 * round-trip form, which PostgreSQL parses back to the same double.
 */
export function pgArray(values: readonly (string | number | boolean | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'number') out += Number.isFinite(v) ? String(v) : 'NULL';
    else if (typeof v === 'boolean') out += v ? 't' : 'f';
    else out += `"${storable(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }
  return `${out}}`;
}

/**
 * PostgreSQL text cannot hold NUL, which SQLite (and JSON) can: a site's text with one would
 * otherwise fail its batch, and every retry of it, forever. It becomes U+FFFD.
 */
export function storable(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/** A JSON array of strings for a `json` column, each storable. */
export const jsonStrings = (values: readonly string[]) => JSON.stringify(values.map(storable));

export type ColumnType = 'text' | 'bigint' | 'integer' | 'float8' | 'uuid' | 'boolean' | 'json';

/**
 * Rows as one `unnest($n::t[], …) AS u(col, …)` source: one array parameter per column, however
 * many rows. `params` continues the caller's parameter list.
 */
export function unnestSource(
  columns: readonly (readonly [name: string, type: ColumnType])[],
  rows: readonly (readonly (string | number | boolean | null)[])[],
  params: unknown[],
): string {
  const args = columns.map(([, type], c) => {
    params.push(pgArray(rows.map((row) => row[c] ?? null)));
    return `$${params.length}::${type}[]`;
  });
  return `unnest(${args.join(', ')}) AS u(${columns.map(([name]) => name).join(', ')})`;
}

type Value = string | number | boolean | null;

/**
 * `records` as one unnest source of `columns` (unnestSource): a row takes each column from its
 * record's field of that name, a `json` column as jsonStrings of the field; `computed` gives the
 * columns a record has no field for.
 */
export function unnestRecords<R extends object>(
  columns: readonly (readonly [name: string, type: ColumnType])[],
  records: Iterable<R>,
  params: unknown[],
  computed: Readonly<Record<string, (record: R) => Value>> = {},
): string {
  const rows = [...records].map((record) =>
    columns.map(([name, type]) => {
      const compute = computed[name];
      if (compute) return compute(record);
      const value = (record as Record<string, unknown>)[name];
      return type === 'json' ? jsonStrings(value as string[]) : (value as Value);
    }),
  );
  return unnestSource(columns, rows, params);
}
