/**
 * Issue 17, storage on the SD card, measured from outside:
 *
 * 200,000 readings with every metric (100 nodes, 5-minute cadence, a week each, round-robin)
 * published through MQTT QoS 1 (single-reading JSON, 100 in flight) to `meshhub start`, then a
 * clean stop (SIGTERM). Figures:
 *
 * - bytes on disk per stored reading: every file the database left in DATA_DIR (raw rows,
 *   rollups, latest rows, indexes, free pages; the WAL is folded back at the stop), against the
 *   same rows in a bare better-sqlite3 `readings` table (no rollups), loaded in one transaction.
 *   Target ≤ 45 bytes (issue 26; 50 in issue 17).
 * - bytes written to the device per stored reading (`write_bytes` of /proc/PID/io of the hub
 *   process, which counts WAL writes, checkpoints and the stop), for this burst; and at a live
 *   site's pace: 600 readings published one at a time, 25 ms apart, so that each is its own
 *   transaction, as on a mesh where a reading arrives every few seconds.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Reading } from '../../src/domain/reading.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { freePort, sleep, startHub, tempData, writeBytes } from './lib/hub-process.js';
import { publishAll, READINGS_TOPIC as TOPIC } from './lib/mqtt-publish.js';
import { rawBatchedInsert, readingApiJson, sensorValues } from './lib/readings.js';
import { absolute, type BenchResult, compare } from './report.js';

const NODES = 100;
const PER_NODE = 2_000;
const STEP = 5 * 60_000;
const START = Date.UTC(2026, 0, 5);
const LIVE = 600;

function readingAt(node: number, k: number): Reading {
  // Values as sensors report them: a decimal or two, some whole numbers.
  const i = node * 7919 + k;
  return {
    nodeId: `!${(0x2000_0000 + node).toString(16)}`,
    timestamp: START + k * STEP + node * 1000,
    ...sensorValues(i),
  };
}

function json(r: Reading): string {
  return JSON.stringify(readingApiJson(r));
}

function all(): Reading[] {
  const out: Reading[] = [];
  for (let k = 0; k < PER_NODE; k++) for (let n = 0; n < NODES; n++) out.push(readingAt(n, k));
  return out;
}

function dirBytes(dir: string, prefix: string): number {
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
}

/** Bytes per table and index (dbstat), largest first. */
function breakdown(file: string): string {
  const db = openDatabase(file, { migrate: false });
  try {
    const rows = db
      .prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC LIMIT 6')
      .all() as { name: string; bytes: number }[];
    return rows.map((r) => `${r.name} ${(r.bytes / 1024).toFixed(0)} KiB`).join(', ');
  } catch (error) {
    return `dbstat unavailable: ${(error as Error).message}`;
  } finally {
    closeDatabase(db);
  }
}

export async function run(): Promise<BenchResult[]> {
  const readings = all();
  const base = tempData('storage-bare');
  let bareBytes: number;
  try {
    const file = join(base.dir, 'bare.sqlite');
    const db = openDatabase(file, { migrate: false });
    db.exec(`CREATE TABLE readings (node_id TEXT NOT NULL, ts INTEGER NOT NULL, temperature_c REAL,
      humidity_percent REAL, pressure_pa REAL, wind_speed_ms REAL, wind_direction REAL, pm25_ugm3 REAL,
      pm10_ugm3 REAL, gas_resistance_kohm REAL, PRIMARY KEY (node_id, ts)) WITHOUT ROWID`);
    rawBatchedInsert(db, [readings]);
    closeDatabase(db);
    bareBytes = dirBytes(base.dir, 'bare.sqlite');
  } finally {
    base.cleanup();
  }

  const data = tempData('storage');
  try {
    const mqttPort = await freePort();
    const hub = await startHub({
      how: 'cli',
      dataDir: data.dir,
      env: { MQTT_PORT: String(mqttPort), MQTT_ALLOW_ANONYMOUS: 'true' },
    });
    let burstWritten: number;
    let liveWritten: number;
    let stopCode: number | null;
    try {
      const { connectAsync } = await import('mqtt');
      const client = await connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { reconnectPeriod: 0 });
      const w0 = writeBytes(hub.pid);
      await publishAll(client, TOPIC, readings.map(json), 100);
      burstWritten = writeBytes(hub.pid) - w0;
      // A live site: each reading its own transaction.
      const w1 = writeBytes(hub.pid);
      for (let k = 0; k < LIVE; k++) {
        const r = readingAt(k % NODES, PER_NODE + Math.floor(k / NODES));
        await client.publishAsync(TOPIC, json(r), { qos: 1 });
        await sleep(25);
      }
      liveWritten = writeBytes(hub.pid) - w1;
      await client.endAsync();
    } finally {
      stopCode = await hub.stop('SIGTERM');
    }
    if (stopCode !== 0) throw new Error(`the hub stopped with ${stopCode}`);
    const file = join(data.dir, 'meshhub.sqlite');
    const onDisk = dirBytes(data.dir, 'meshhub.sqlite');
    const stored = readings.length + LIVE;
    const parts = breakdown(file);
    const perReading = onDisk / stored;
    return [
      compare(
        `storage: bytes on disk per reading (${readings.length} + ${LIVE} readings, ${NODES} nodes, every metric)`,
        {
          label: 'bare better-sqlite3 readings table, same rows',
          value: bareBytes / readings.length,
          unit: 'B',
        },
        { label: 'meshhub start, after a clean stop', value: perReading, unit: 'B' },
        { text: 'ours ≤ 45 B' },
        `${(onDisk / 1e6).toFixed(2)} MB in all: ${parts}`,
      ),
      {
        ...absolute(
          'storage: bytes on disk per stored reading',
          { label: 'meshhub', value: perReading, unit: 'B' },
          { atMost: 45, text: '≤ 45 B' },
        ),
      },
      {
        name: 'storage: bytes written to the device per reading (burst / live pace)',
        baseline: { label: 'burst, 100 in flight', value: burstWritten / readings.length, unit: 'B' },
        ours: { label: `live, one reading a transaction (${LIVE})`, value: liveWritten / LIVE, unit: 'B' },
        ratio: liveWritten / LIVE / (burstWritten / readings.length),
        target: 'reported',
        pass: true,
      },
    ];
  } finally {
    data.cleanup();
  }
}
