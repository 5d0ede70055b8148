/**
 * Deterministic synthetic readings for the benchmarks, and the temp-directory helper they share.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Reading } from '../../../src/domain/reading.js';
import type { Database } from '../../../src/store/database.js';

/** A small deterministic PRNG (mulberry32), so every run measures the same data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function nodeId(i: number): string {
  return `!${(0x1000_0000 + i).toString(16)}`;
}

/**
 * `count` readings from `nodes` nodes reporting round-robin (node 0, 1, …, nodes-1, node 0, …),
 * each node every `intervalMs`, from `startMs`. Two nodes in three are weather stations
 * (temperature, humidity, pressure, wind, gas), every third an air-quality sensor (PM, temperature,
 * humidity): readings are partial, as on a real mesh.
 */
export function interleavedReadings(options: {
  nodes: number;
  count: number;
  startMs: number;
  intervalMs: number;
  seed?: number;
}): Reading[] {
  const { nodes, count, startMs, intervalMs } = options;
  const rand = prng(options.seed ?? 1);
  const out: Reading[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const node = i % nodes;
    const round = Math.floor(i / nodes);
    const timestamp = startMs + round * intervalMs + node;
    const temperatureC = Math.round((10 + 15 * rand()) * 100) / 100;
    const humidityPercent = Math.round((30 + 60 * rand()) * 10) / 10;
    out[i] =
      node % 3 === 2
        ? {
            nodeId: nodeId(node),
            timestamp,
            temperatureC,
            humidityPercent,
            pm25Ugm3: Math.round(40 * rand()),
            pm10Ugm3: Math.round(60 * rand()),
          }
        : {
            nodeId: nodeId(node),
            timestamp,
            temperatureC,
            humidityPercent,
            pressurePa: Math.round(95_000 + 8_000 * rand()),
            windSpeedMs: Math.round(150 * rand()) / 10,
            windDirection: Math.floor(360 * rand()),
            gasResistanceKohm: Math.round(5_000 * rand()) / 10,
          };
  }
  return out;
}

/** A fresh directory under the OS temp dir; `cleanup` removes it with everything in it. */
export function tempDir(prefix: string): { dir: string; file(name: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `meshhub-bench-${prefix}-`));
  return {
    dir,
    file: (name) => join(dir, name),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * The raw library baseline of the writer and ingest benches: plain better-sqlite3 batched
 * inserts of the same rows into the same `readings` table, one transaction per batch.
 * Returns the milliseconds taken.
 */
export function rawBatchedInsert(db: Database, input: Reading[][]): number {
  const insert = db.prepare(
    `INSERT INTO readings (node_id, ts, temperature_c, humidity_percent, pressure_pa, wind_speed_ms, wind_direction,
       pm25_ugm3, pm10_ugm3, gas_resistance_kohm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertBatch = db.transaction((rows: Reading[]) => {
    for (const r of rows) {
      insert.run(
        r.nodeId,
        r.timestamp,
        r.temperatureC ?? null,
        r.humidityPercent ?? null,
        r.pressurePa ?? null,
        r.windSpeedMs ?? null,
        r.windDirection ?? null,
        r.pm25Ugm3 ?? null,
        r.pm10Ugm3 ?? null,
        r.gasResistanceKohm ?? null,
      );
    }
  });
  const t0 = performance.now();
  for (const rows of input) insertBatch(rows);
  return performance.now() - t0;
}

/**
 * Every metric of a reading, as sensors report them (a decimal or two, some whole numbers), spread
 * over their ranges by `i`: the same `i` gives the same values.
 */
export function sensorValues(i: number): Omit<Reading, 'nodeId' | 'timestamp'> {
  return {
    temperatureC: Math.round((5 + ((i * 37) % 2000) / 100) * 100) / 100,
    humidityPercent: Math.round((30 + ((i * 7) % 600) / 10) * 10) / 10,
    pressurePa: 95_000 + ((i * 13) % 8000),
    windSpeedMs: ((i * 11) % 150) / 10,
    windDirection: (i * 17) % 360,
    pm25Ugm3: (i * 3) % 40,
    pm10Ugm3: (i * 5) % 60,
    gasResistanceKohm: ((i * 19) % 5000) / 10,
  };
}

/** A reading as the ingest API and MQTT take it (snake_case, ISO timestamp). */
export function readingApiJson(r: Reading): Record<string, unknown> {
  return {
    node_id: r.nodeId,
    timestamp: new Date(r.timestamp).toISOString(),
    temperature_c: r.temperatureC,
    humidity_percent: r.humidityPercent,
    pressure_pa: r.pressurePa,
    wind_speed_ms: r.windSpeedMs,
    wind_direction: r.windDirection,
    pm25_ugm3: r.pm25Ugm3,
    pm10_ugm3: r.pm10Ugm3,
    gas_resistance_kohm: r.gasResistanceKohm,
  };
}
