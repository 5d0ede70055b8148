/**
 * Ingest throughput: 1000 nodes interleaved, 200 000 readings in batches of 2000.
 * Baseline: raw better-sqlite3, one prepared INSERT per row inside one transaction per batch, into
 * the same `readings` table on a database opened the same way. Ours: BatchingWriter over
 * ReadingWriter, which also keeps the latest rows and the hourly/daily rollups in the same
 * transactions. Target: ours ≥ 50% of the baseline's rows/s.
 */

import type { Reading } from '../../src/domain/reading.js';
import { BatchingWriter } from '../../src/store/batching-writer.js';
import type { Database } from '../../src/store/database.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { interleavedReadings, rawBatchedInsert, tempDir } from './lib/readings.js';
import { type BenchResult, compare } from './report.js';

const NODES = 1000;
const ROWS = 200_000;
const BATCH = 2000;
const ROUNDS = 4;

function batches(readings: Reading[]): Reading[][] {
  const out: Reading[][] = [];
  for (let i = 0; i < readings.length; i += BATCH) out.push(readings.slice(i, i + BATCH));
  return out;
}

function ours(db: Database, input: Reading[][]): number {
  let committed = 0;
  const writer = new BatchingWriter({ writer: new ReadingWriter(db), maxBatchRows: BATCH });
  const t0 = performance.now();
  for (const readings of input) {
    writer.enqueue({ readings, source: 'mqtt', onCommitted: () => committed++ });
  }
  writer.close();
  const ms = performance.now() - t0;
  if (committed !== input.length) throw new Error(`only ${committed} of ${input.length} batches committed`);
  return ms;
}

/** Runs `fn` on a fresh database file, checks every row landed, and returns its milliseconds. */
function measure(name: string, fn: (db: Database) => number): number {
  const tmp = tempDir('writer');
  const db = openDatabase(tmp.file(`${name}.db`));
  try {
    const ms = fn(db);
    const rows = db.prepare('SELECT count(*) FROM readings').pluck().get() as number;
    if (rows !== ROWS) throw new Error(`${name}: ${rows} rows stored, expected ${ROWS}`);
    return ms;
  } finally {
    closeDatabase(db);
    tmp.cleanup();
  }
}

export async function run(): Promise<BenchResult[]> {
  const input = batches(
    interleavedReadings({ nodes: NODES, count: ROWS, startMs: Date.UTC(2025, 0, 1), intervalMs: 60_000 }),
  );
  const baseMs: number[] = [];
  const ourMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first, so neither always runs on a warmer (or busier) machine.
    const sides = [
      () => baseMs.push(measure('baseline', (db) => rawBatchedInsert(db, input))),
      () => ourMs.push(measure('ours', (db) => ours(db, input))),
    ];
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) side();
  }
  const best = (ms: number[]) => ROWS / (Math.min(...ms) / 1000);
  return [
    compare(
      'writer: 200k readings, 1000 nodes interleaved, batches of 2000',
      { label: 'better-sqlite3 batched INSERT', value: best(baseMs), unit: 'rows/s' },
      { label: 'BatchingWriter (+ latest + hourly/daily rollups)', value: best(ourMs), unit: 'rows/s' },
      { atLeast: 0.5, text: '≥ 50% of baseline rows/s' },
      `best of ${ROUNDS} rounds each; baseline ms ${baseMs.map((m) => m.toFixed(0)).join('/')}, ours ms ${ourMs.map((m) => m.toFixed(0)).join('/')}`,
    ),
  ];
}
