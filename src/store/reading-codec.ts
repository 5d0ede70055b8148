/**
 * How a raw reading is stored (core migration 7, docs/architecture.md "Compact raw readings"):
 * `reading_rows` keys each row by a small integer per node (`reading_nodes`) and the time, and
 * keeps each metric as an INTEGER count of its sensor's resolution when that gives the very same
 * number back, as the REAL it arrived as otherwise. SQLite stores a small integer in 1 to 4 bytes
 * and a REAL in 8, so the table takes about half of what the REAL layout took, and every number
 * reads back bit for bit as it was written.
 *
 * The rule is written once, in SQL, here: the writer, the migration and the `readings` view's
 * triggers encode with `encodeSql`, every reader decodes with `decodeSql`. The columns have no
 * type affinity, so SQLite keeps each value's storage class as given: INTEGER means "counts of the
 * resolution", REAL means "the value itself" (an integral REAL too, such as a float32 1e30 that
 * has no exact count), and NULL is absent.
 */
import { METRIC_COLUMNS, type MetricColumn } from './rollups.js';

/**
 * Each metric's resolution (the unit of its stored count) and offset (subtracted before counting,
 * so that typical values make small counts). Chosen from the sensors Meshtastic reads and the
 * decoder's rounding (src/mesh/packet-decoder.ts): BME280/BME680 temperatures in 0.01 °C,
 * humidity in 0.01 %, pressure as hPa with two decimals (0.01 Pa around 1000 hPa), wind in 0.01
 * m/s and whole degrees, particulates as whole µg/m³, gas resistance as whole ohms. A finer value
 * (a humidity of 1/1024 %) is kept as REAL: nothing is rounded. These numbers are part of core
 * migration 7 (its `readings` view and triggers are made from them), like a released migration's
 * columns: a different resolution is a new migration that rewrites the rows, never an edit here.
 */
export const METRIC_RESOLUTION: Readonly<Record<MetricColumn, { step: number; offset: number }>> = {
  temperature_c: { step: 0.01, offset: 0 },
  humidity_percent: { step: 0.01, offset: 0 },
  pressure_pa: { step: 0.01, offset: 100_000 },
  wind_speed_ms: { step: 0.01, offset: 0 },
  wind_direction: { step: 1, offset: 0 },
  pm25_ugm3: { step: 1, offset: 0 },
  pm10_ugm3: { step: 1, offset: 0 },
  gas_resistance_kohm: { step: 0.001, offset: 0 },
};

/** Counts per unit, as a SQL REAL literal (100.0 for a step of 0.01). */
function perUnit(column: MetricColumn): string {
  return `${Math.round(1 / METRIC_RESOLUTION[column].step)}.0`;
}

/** `count / perUnit + offset`, the one way back from a count (also the encoder's check). */
function fromCount(count: string, column: MetricColumn): string {
  const { offset } = METRIC_RESOLUTION[column];
  return `${count} / ${perUnit(column)}${offset === 0 ? '' : ` + ${offset}`}`;
}

/**
 * SQL that stores the value of `expr` (a column or a parameter's column of a VALUES list) in
 * `column`'s encoding: its count when the count gives it back exactly, else the value as REAL.
 */
export function encodeSql(expr: string, column: MetricColumn): string {
  const { offset } = METRIC_RESOLUTION[column];
  const count = `CAST(round((${expr}${offset === 0 ? '' : ` - ${offset}`}) * ${perUnit(column)}) AS INTEGER)`;
  return `CASE WHEN ${expr} IS NULL THEN NULL WHEN ${fromCount(count, column)} = ${expr} THEN ${count} ELSE CAST(${expr} AS REAL) END`;
}

/** SQL that reads a stored `column` (of `table`, an alias, if given) back as the number written. */
export function decodeSql(column: MetricColumn, table?: string): string {
  const ref = table ? `${table}.${column}` : column;
  return `CASE typeof(${ref}) WHEN 'integer' THEN ${fromCount(ref, column)} ELSE ${ref} END`;
}

/** Every metric decoded, in METRIC_COLUMNS order, each named as its column. */
export function decodedMetricsSql(table?: string): string {
  return METRIC_COLUMNS.map((c) => `${decodeSql(c, table)} AS ${c}`).join(', ');
}

/**
 * `SELECT node_key, ts, <encoded metrics> FROM (VALUES (?, ?, ?…), …)`: `rows` rows of a node key,
 * a time and the metrics (METRIC_COLUMNS order) as plain numbers, encoded by SQLite. For
 * `INSERT INTO reading_rows (node_key, ts, <metrics>) …` and `UPDATE … FROM`.
 */
export function encodedRowsSql(rows: number): string {
  const width = 2 + METRIC_COLUMNS.length;
  const row = `(${new Array<string>(width).fill('?').join(', ')})`;
  const metrics = METRIC_COLUMNS.map((c, i) => `${encodeSql(`column${i + 3}`, c)} AS ${c}`).join(', ');
  return `SELECT column1 AS node_key, column2 AS ts, ${metrics} FROM (VALUES ${new Array<string>(rows).fill(row).join(', ')})`;
}

/** The node key of the node id `expr` in SQL (a scalar subquery): a parameter, or NEW./OLD.node_id. */
export function nodeKeyOf(expr: string): string {
  return `(SELECT node_key FROM reading_nodes WHERE node_id = ${expr})`;
}

/** The node key of `nodeId` in SQL, for statements taking the id as a parameter. */
export const NODE_KEY_OF = nodeKeyOf('?');
