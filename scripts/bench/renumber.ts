/**
 * A node renumbered by firmware 2.8 (src/nodes/renumber.ts): what it costs to move a year of its
 * weather data to the new id once (ReadingWriter.renumber: raw rows, hourly and daily rollups,
 * latest row, one transaction), against the alternative of leaving the rows under the old id and
 * resolving it at read time, which every history read would then pay (node_id IN (old, new) and
 * the buckets of the upgrade hour/day added together). A year: one reading every 5 minutes, as
 * a weather station sends (105,120 raw rows; READINGS_RETENTION_DAYS keeps 90 days by default,
 * so this is the worst case).
 */
import type { Reading } from '../../src/domain/reading.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { tempDir } from './lib/readings.js';
import { absolute, type BenchResult, compare } from './report.js';

const YEAR_MS = 365 * 86_400_000;
const STEP_MS = 5 * 60_000;
const START = Date.UTC(2025, 0, 1);
const OLD = '!0000000a';
const NEW = '!0000000b';
const ROUNDS = 3;
const READS = 50;

function fill(db: Database): ReadingWriter {
  const writer = new ReadingWriter(db);
  let batch: Reading[] = [];
  for (let ts = START; ts < START + YEAR_MS; ts += STEP_MS) {
    const phase = (ts / 86_400_000) * 2 * Math.PI;
    batch.push({
      nodeId: OLD,
      timestamp: ts,
      temperatureC: 10 + 8 * Math.sin(phase),
      humidityPercent: 60,
      pressurePa: 101_000,
    });
    if (batch.length === 2000) {
      writer.write(batch);
      batch = [];
    }
  }
  writer.write(batch);
  // The new number's first hour, in the same hour bucket as the old one's last readings.
  const end = START + YEAR_MS;
  writer.write(
    Array.from({ length: 12 }, (_, i) => ({ nodeId: NEW, timestamp: end + i * STEP_MS, temperatureC: 9 })),
  );
  return writer;
}

function timed(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

export async function run(): Promise<BenchResult[]> {
  const rekeyMs: number[] = [];
  const directMs: number[] = [];
  const resolvedMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const tmp = tempDir('renumber');
    const db = openDatabase(tmp.file('renumber.db'));
    try {
      const writer = fill(db);
      // Read-time resolution: a year of hourly means over both ids, buckets added together.
      const resolved = db.prepare(
        `SELECT bucket_start, sum(temperature_c_sum) / sum(temperature_c_count) FROM readings_hourly
         WHERE node_id IN (?, ?) AND bucket_start >= ? GROUP BY bucket_start ORDER BY bucket_start`,
      );
      const direct = db.prepare(
        `SELECT bucket_start, temperature_c_sum / temperature_c_count FROM readings_hourly
         WHERE node_id = ? AND bucket_start >= ? ORDER BY bucket_start`,
      );
      resolvedMs.push(
        timed(() => {
          for (let i = 0; i < READS; i++) resolved.all(OLD, NEW, START);
        }) / READS,
      );
      rekeyMs.push(timed(() => writer.renumber(OLD, NEW)));
      directMs.push(
        timed(() => {
          for (let i = 0; i < READS; i++) direct.all(NEW, START);
        }) / READS,
      );
      const moved = db.prepare('SELECT count(*) FROM readings WHERE node_id = ?').pluck().get(NEW) as number;
      if (moved !== YEAR_MS / STEP_MS + 12) throw new Error(`re-key moved ${moved} rows`);
    } finally {
      closeDatabase(db);
      tmp.cleanup();
    }
  }
  const best = (ms: number[]) => Math.min(...ms);
  const perRead = best(resolvedMs) - best(directMs);
  return [
    absolute(
      'renumber: move a year of one node (105k raw rows, 8760 hourly, 365 daily rollups) to its new id, once',
      { label: 'ReadingWriter.renumber', value: best(rekeyMs), unit: 'ms' },
      { atMost: 5_000, text: '≤ 5 s on the bench machine (one-off, once per node and upgrade)' },
    ),
    compare(
      'renumber: a year of hourly history, rows re-keyed vs old id resolved at read time',
      { label: 'node_id = new (re-keyed)', value: best(directMs), unit: 'ms/read' },
      { label: 'node_id IN (old, new), buckets summed', value: best(resolvedMs), unit: 'ms/read' },
      { atLeast: 1, text: 'informative: read-time resolution costs every read' },
      `re-keying once costs as much as ${perRead > 0 ? Math.ceil(best(rekeyMs) / perRead) : '∞'} history reads pay extra for read-time resolution; ms rekey ${rekeyMs.map((m) => m.toFixed(0)).join('/')}`,
    ),
  ];
}
