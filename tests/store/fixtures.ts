import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Reading } from '../../src/domain/reading.js';
import { type Database, openDatabase } from '../../src/store/database.js';
import { openBuckets } from '../../src/store/open-buckets.js';
import { METRIC_COLUMNS, ROLLUP_COLUMNS } from '../../src/store/rollups.js';

/** A temp directory removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function memoryDb(): Database {
  return openDatabase(':memory:');
}

export const T0 = Date.UTC(2025, 4, 1, 0, 0, 0); // 2025-05-01T00:00:00Z
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function reading(
  nodeId: string,
  timestamp: number,
  metrics: Omit<Reading, 'nodeId' | 'timestamp'>,
): Reading {
  return { nodeId, timestamp, ...metrics };
}

type Row = Record<string, number | string | null>;

export function rawRows(db: Database, nodeId: string): Row[] {
  return db.prepare('SELECT * FROM readings WHERE node_id = ? ORDER BY ts').all(nodeId) as Row[];
}

/**
 * A node's rollup rows as a reader sees them: the table's, with the writer's open bucket
 * (src/store/open-buckets.ts) in place of its row.
 */
export function rollup(db: Database, table: 'readings_hourly' | 'readings_daily', nodeId: string): Row[] {
  const rows = db
    .prepare(`SELECT * FROM ${table} WHERE node_id = ? ORDER BY bucket_start`)
    .all(nodeId) as Row[];
  const open = openBuckets(db)?.bucket(table === 'readings_hourly' ? '1h' : '1d', nodeId);
  if (!open) return rows;
  const row: Row = { node_id: nodeId, bucket_start: open.start };
  ROLLUP_COLUMNS.forEach((column, i) => {
    row[column] = open.acc[i]!;
  });
  return [...rows.filter((r) => r.bucket_start !== open.start), row].sort(
    (a, b) => (a.bucket_start as number) - (b.bucket_start as number),
  );
}

/** A node's latest row as a reader sees it: the writer's memory where a writer runs, else the table. */
export function latestRow(db: Database, nodeId: string): Row | undefined {
  const latest = openBuckets(db)?.nodes.get(nodeId)?.latest;
  if (!latest || latest.ts === Number.NEGATIVE_INFINITY) {
    return db.prepare('SELECT * FROM readings_latest WHERE node_id = ?').get(nodeId) as Row | undefined;
  }
  const row: Row = { node_id: nodeId, ts: latest.ts };
  METRIC_COLUMNS.forEach((column, slot) => {
    const known = latest.times[slot] !== Number.NEGATIVE_INFINITY;
    row[column] = known ? latest.values[slot]! : null;
    row[`${column}_ts`] = known ? latest.times[slot]! : null;
  });
  return row;
}
