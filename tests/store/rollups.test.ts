import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import {
  ACC_SIZE,
  bucketStart,
  circularMeanDegrees,
  METRIC_COLUMNS,
  ROLLUP_COLUMNS,
  RollupBuckets,
} from '../../src/store/rollups.js';

const DEG = Math.PI / 180;
const mean = (...degrees: number[]) =>
  circularMeanDegrees(
    degrees.reduce((s, d) => s + Math.sin(d * DEG), 0),
    degrees.reduce((s, d) => s + Math.cos(d * DEG), 0),
    degrees.length,
  );

describe('circularMeanDegrees', () => {
  it('averages across north: 350° and 10° give 0°, not 180°', () => {
    expect(mean(350, 10)).toBe(0);
    expect(mean(355, 5, 15)).toBe(5);
    expect(mean(340, 350)).toBe(345);
  });

  it('answers whole degrees in [0, 360)', () => {
    expect(mean(359.7)).toBe(0);
    expect(mean(-90)).toBe(270);
    expect(mean(720 + 45)).toBe(45);
  });

  it('has no answer when the directions cancel out or there are none', () => {
    expect(mean(90, 270)).toBeUndefined();
    expect(circularMeanDegrees(0, 0, 0)).toBeUndefined();
  });
});

describe('bucketStart', () => {
  it('aligns hours and days to UTC', () => {
    const t = Date.UTC(2025, 4, 1, 13, 59, 59, 999);
    expect(bucketStart(t, '1h')).toBe(Date.UTC(2025, 4, 1, 13));
    expect(bucketStart(t + 1, '1h')).toBe(Date.UTC(2025, 4, 1, 14));
    expect(bucketStart(t, '1d')).toBe(Date.UTC(2025, 4, 1));
    expect(bucketStart(Date.UTC(2025, 4, 1) - 1, '1d')).toBe(Date.UTC(2025, 3, 30));
    expect(bucketStart(-1, '1h')).toBe(-3_600_000);
  });
});

describe('RollupBuckets', () => {
  it('gives one zeroed accumulator per bucket start, the same one again for the same start', () => {
    const buckets = new RollupBuckets();
    const a = buckets.get(0);
    const b = buckets.get(3_600_000);
    expect(a).toHaveLength(ACC_SIZE);
    expect(a.every((v) => v === 0)).toBe(true);
    expect(buckets.get(0)).toBe(a);
    expect(buckets.get(3_600_000)).toBe(b);
    expect(buckets.starts).toEqual([0, 3_600_000]);
  });
});

describe('the reading tables of the SQLite schema', () => {
  it('are made from the column lists: metrics, latest values and times, rollup sums and counts', () => {
    const db = new BetterSqlite3(':memory:');
    db.exec(MIGRATIONS[0]!.up as string);
    const columns = (table: string) =>
      (db.pragma(`table_info(${table})`) as { name: string; type: string }[]).map(
        (c) => `${c.name} ${c.type}`,
      );
    expect(columns('readings')).toEqual([
      'node_id TEXT',
      'ts INTEGER',
      ...METRIC_COLUMNS.map((c) => `${c} REAL`),
    ]);
    expect(columns('readings_latest')).toEqual([
      'node_id TEXT',
      'ts INTEGER',
      ...METRIC_COLUMNS.flatMap((c) => [`${c} REAL`, `${c}_ts INTEGER`]),
    ]);
    for (const table of ['readings_hourly', 'readings_daily']) {
      expect(columns(table)).toEqual([
        'node_id TEXT',
        'bucket_start INTEGER',
        ...ROLLUP_COLUMNS.map((c) => `${c} ${c.endsWith('_count') ? 'INTEGER' : 'REAL'}`),
      ]);
    }
    db.close();
  });
});
