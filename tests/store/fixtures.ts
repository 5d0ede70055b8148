import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Reading } from '../../src/domain/reading.js';
import { type Database, openDatabase } from '../../src/store/database.js';

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

export function rollup(db: Database, table: 'readings_hourly' | 'readings_daily', nodeId: string): Row[] {
  return db.prepare(`SELECT * FROM ${table} WHERE node_id = ? ORDER BY bucket_start`).all(nodeId) as Row[];
}

export function latestRow(db: Database, nodeId: string): Row | undefined {
  return db.prepare('SELECT * FROM readings_latest WHERE node_id = ?').get(nodeId) as Row | undefined;
}
