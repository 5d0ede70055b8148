/**
 * Moves one node's series (raw rows, hourly and daily rollups, latest values) to another node id
 * in the caller's transaction: the rule a renumbered node's data follows (README "Nodes that
 * change their number"), one copy for the readings and for device health.
 *
 * - raw rows: at a time both ids have, the new id's values stay and the old one's fill its gaps;
 * - rollups: sums and counts are added bucket by bucket, so a mean over both stays right;
 * - latest: field by field, the newer value wins (each field carries its own `<field>_ts`).
 *
 * Returns the raw rows moved.
 */
import type { Database } from './database.js';

export interface SeriesTables {
  /**
   * The raw table, keyed (node_id, ts); or keyed (`key`, ts) by a number each node id has
   * (`keyOf`, which makes one when needed), such as the readings' compact rows.
   */
  raw: string | { table: string; key: string; keyOf: (nodeId: string) => number };
  hourly: string;
  daily: string;
  latest: string;
  /** The metric columns of the raw and latest tables. */
  metrics: readonly string[];
  /** The rollup tables' accumulator columns. */
  rollups: readonly string[];
}

export function moveNodeSeries(db: Database, t: SeriesTables, oldId: string, newId: string): number {
  if (oldId === newId) return 0;
  const cols = t.metrics.join(', ');
  const raw = typeof t.raw === 'string' ? { table: t.raw, key: 'node_id' } : t.raw;
  const [from, to] = typeof t.raw === 'string' ? [oldId, newId] : [t.raw.keyOf(oldId), t.raw.keyOf(newId)];
  // Values are copied as stored (an encoding, if the table has one, is the same for both ids).
  const moved = db
    .prepare(
      `INSERT INTO ${raw.table} (${raw.key}, ts, ${cols}) SELECT ?, ts, ${cols} FROM ${raw.table} WHERE ${raw.key} = ?
       ON CONFLICT (${raw.key}, ts) DO UPDATE SET ${t.metrics.map((c) => `${c} = coalesce(${c}, excluded.${c})`).join(', ')}`,
    )
    .run(to, from).changes;
  db.prepare(`DELETE FROM ${raw.table} WHERE ${raw.key} = ?`).run(from);
  const acc = t.rollups.join(', ');
  for (const table of [t.hourly, t.daily]) {
    db.prepare(
      `INSERT INTO ${table} (node_id, bucket_start, ${acc})
       SELECT ?, bucket_start, ${acc} FROM ${table} WHERE node_id = ?
       ON CONFLICT (node_id, bucket_start) DO UPDATE SET ${t.rollups.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
    ).run(newId, oldId);
    db.prepare(`DELETE FROM ${table} WHERE node_id = ?`).run(oldId);
  }
  const latestCols = ['ts', ...t.metrics.flatMap((c) => [c, `${c}_ts`])].join(', ');
  const newer = (c: string) =>
    `excluded.${c} IS NOT NULL AND (${c}_ts IS NULL OR excluded.${c}_ts > ${c}_ts)`;
  db.prepare(
    `INSERT INTO ${t.latest} (node_id, ${latestCols}) SELECT ?, ${latestCols} FROM ${t.latest} WHERE node_id = ?
     ON CONFLICT (node_id) DO UPDATE SET ts = max(ts, excluded.ts), ${t.metrics
       .map(
         (c) =>
           `${c} = CASE WHEN ${newer(c)} THEN excluded.${c} ELSE ${c} END, ${c}_ts = CASE WHEN ${newer(c)} THEN excluded.${c}_ts ELSE ${c}_ts END`,
       )
       .join(', ')}`,
  ).run(newId, oldId);
  db.prepare(`DELETE FROM ${t.latest} WHERE node_id = ?`).run(oldId);
  return moved;
}
