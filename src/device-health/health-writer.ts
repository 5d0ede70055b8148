/**
 * Commits device health samples, their hourly and daily rollups and each node's latest values in
 * ONE transaction per batch, with the readings' rule (src/store/reading-writer.ts,
 * src/store/rollups.ts): only what a sample adds counts — a new row whole, or the fields a
 * sample fills on a row of the same (node, ts) — so nothing counts twice; contributions are
 * summed per (node, hour) and (node, day) in JS and each bucket upserted once, additively; a
 * latest field moves only to a value at least as new as its own.
 */
import type { Database, Statement } from '../store/database.js';
import { type MultiRowStatement, placeholders } from '../store/multi-row-statement.js';
import { keepUnfilled, rollupUpsert, writeRollupBuckets } from '../store/reading-writer.js';
import { accumulateLinear, addToRollups, type NodeRollups, RollupBuckets } from '../store/rollups.js';
import { moveNodeSeries } from '../store/series-move.js';
import {
  HEALTH_ACC_SIZE,
  HEALTH_COLUMNS,
  HEALTH_LATEST_TABLE,
  HEALTH_ROLLUP_COLUMNS,
  HEALTH_ROLLUP_TABLE,
  HEALTH_SLOTS,
  HEALTH_TABLE,
  type HealthRow,
} from './columns.js';

const MAX_DATE_MS = 8.64e15;

export class HealthWriter {
  private readonly insert: Statement;
  private readonly select: Statement<unknown[], (number | null)[]>;
  private readonly fill: Statement;
  private readonly upsertLatest: Statement;
  private readonly upsertHourly: MultiRowStatement;
  private readonly upsertDaily: MultiRowStatement;
  private readonly commit: (rows: readonly HealthRow[]) => number;

  constructor(private readonly db: Database) {
    const cols = HEALTH_COLUMNS.join(', ');
    const width = 2 + HEALTH_SLOTS;
    this.insert = db.prepare(
      `INSERT OR IGNORE INTO ${HEALTH_TABLE} (node_id, ts, ${cols}) VALUES ${placeholders(width, 1)}`,
    );
    this.select = db
      .prepare(`SELECT ${cols} FROM ${HEALTH_TABLE} WHERE node_id = ? AND ts = ?`)
      .raw(true) as Statement<unknown[], (number | null)[]>;
    this.fill = db.prepare(
      `UPDATE ${HEALTH_TABLE} SET ${HEALTH_COLUMNS.map((c) => `${c} = coalesce(${c}, ?)`).join(', ')} WHERE node_id = ? AND ts = ?`,
    );
    // A field takes the new value when it has none or the new one is at least as new.
    const newer = (c: string) =>
      `excluded.${c} IS NOT NULL AND (${c}_ts IS NULL OR excluded.${c}_ts >= ${c}_ts)`;
    const latestCols = ['node_id', 'ts', ...HEALTH_COLUMNS.flatMap((c) => [c, `${c}_ts`])];
    this.upsertLatest = db.prepare(
      `INSERT INTO ${HEALTH_LATEST_TABLE} (${latestCols.join(', ')}) VALUES ${placeholders(latestCols.length, 1)}
       ON CONFLICT (node_id) DO UPDATE SET ts = max(ts, excluded.ts), ${HEALTH_COLUMNS.map(
         (c) =>
           `${c} = CASE WHEN ${newer(c)} THEN excluded.${c} ELSE ${c} END, ${c}_ts = CASE WHEN ${newer(c)} THEN excluded.${c}_ts ELSE ${c}_ts END`,
       ).join(', ')}`,
    );
    this.upsertHourly = rollupUpsert(db, HEALTH_ROLLUP_TABLE['1h'], HEALTH_ROLLUP_COLUMNS);
    this.upsertDaily = rollupUpsert(db, HEALTH_ROLLUP_TABLE['1d'], HEALTH_ROLLUP_COLUMNS);
    this.commit = db.transaction((rows: readonly HealthRow[]) => this.apply(rows));
  }

  /** Moves a renumbered node's samples, rollups and latest values to its new id (one transaction). */
  renumber(oldId: string, newId: string): number {
    return this.db.transaction(() =>
      moveNodeSeries(
        this.db,
        {
          raw: HEALTH_TABLE,
          hourly: HEALTH_ROLLUP_TABLE['1h'],
          daily: HEALTH_ROLLUP_TABLE['1d'],
          latest: HEALTH_LATEST_TABLE,
          metrics: HEALTH_COLUMNS,
          rollups: HEALTH_ROLLUP_COLUMNS,
        },
        oldId,
        newId,
      ),
    )();
  }

  /** Stores a batch in one transaction; returns how many samples added something. */
  write(rows: readonly HealthRow[]): number {
    return rows.length === 0 ? 0 : this.commit(rows);
  }

  private apply(rows: readonly HealthRow[]): number {
    const nodes = new Map<string, NodeRollups>();
    let added = 0;
    for (const row of rows) {
      const { nodeId } = row;
      if (typeof nodeId !== 'string' || nodeId.length === 0 || !(Math.abs(row.ts) <= MAX_DATE_MS)) continue;
      const ts = Math.floor(row.ts);
      const values = row.values.map((v) => (typeof v === 'number' && Number.isFinite(v) ? v : null));
      if (values.every((v) => v === null)) continue;
      if (this.insert.run(nodeId, ts, ...values).changes === 0) {
        const existing = this.select.get(nodeId, ts);
        if (!existing) continue;
        if (keepUnfilled(existing, values) === 0) continue;
        this.fill.run(...values, nodeId, ts);
      }
      added++;
      let node = nodes.get(nodeId);
      if (!node) {
        node = { hours: new RollupBuckets(HEALTH_ACC_SIZE), days: new RollupBuckets(HEALTH_ACC_SIZE) };
        nodes.set(nodeId, node);
      }
      addToRollups(node, ts, values, accumulateLinear);
      this.upsertLatest.run(nodeId, ts, ...values.flatMap((v) => [v, v === null ? null : ts]));
    }
    writeRollupBuckets(nodes, 'hours', this.upsertHourly);
    writeRollupBuckets(nodes, 'days', this.upsertDaily);
    return added;
  }
}
