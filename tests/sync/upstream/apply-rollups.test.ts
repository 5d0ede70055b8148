/**
 * The upstream's rollups and latest rows against the hub's own (issue 12: "the same hourly and
 * daily rollups as the hub"): the same readings go through the hub's ReadingWriter into SQLite
 * and as batches into PostgreSQL, and every bucket, latest row and raw row must come out the same
 * — duplicates, late fills of a missing field, out-of-order times and wind directions included.
 * Also the buckets a site sends whole (`rollup` records, for readings it dropped).
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { METRIC_API_NAMES, READING_METRICS, type Reading } from '../../../src/domain/reading.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { ROLLUP_COLUMNS } from '../../../src/store/rollups.js';
import type { Batch, RecordBody } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { type BatchEntry, numberedBatch } from '../helpers/batches.js';
import { migratedSchema } from './helpers.js';

const skip = await skipWithoutPostgres();

const T0 = Date.UTC(2026, 2, 9, 22, 30);
const HOUR = 3_600_000;
const NODES = ['!00000001', '!00000002', '!00000003'];

/** A deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

/**
 * Groups of readings, as ingest hands them to the hub's writer: live readings, some fields
 * missing, exact duplicates, late fills of a field that was missing, and readings older than
 * the node's newest.
 */
function readingGroups(seed: number, groups: number, perGroup: number): Reading[][] {
  const rnd = random(seed);
  const all: Reading[] = [];
  const out: Reading[][] = [];
  for (let g = 0; g < groups; g++) {
    const group: Reading[] = [];
    for (let i = 0; i < perGroup; i++) {
      const pick = rnd();
      if (pick < 0.1 && all.length > 0) {
        group.push({ ...all[Math.floor(rnd() * all.length)]! }); // a duplicate
        continue;
      }
      if (pick < 0.2 && all.length > 0) {
        // The same (node, ts) again with other fields: fills whatever was missing.
        const old = all[Math.floor(rnd() * all.length)]!;
        group.push({
          nodeId: old.nodeId,
          timestamp: old.timestamp,
          humidityPercent: 30 + rnd() * 40,
          pm25Ugm3: rnd() * 50,
        });
        continue;
      }
      const back = pick < 0.3 ? -Math.floor(rnd() * 5 * HOUR) : 0; // late and out of order
      const r: Reading = {
        nodeId: NODES[Math.floor(rnd() * NODES.length)]!,
        timestamp: T0 + (g * perGroup + i) * 97_000 + back,
      };
      if (rnd() < 0.9) r.temperatureC = Math.round((10 + rnd() * 15) * 100) / 100 + rnd() / 1000;
      if (rnd() < 0.5) r.humidityPercent = rnd() * 100;
      if (rnd() < 0.7) r.pressurePa = 100_000 + rnd() * 3000;
      if (rnd() < 0.6) r.windSpeedMs = rnd() * 20;
      if (rnd() < 0.6) r.windDirection = Math.floor(rnd() * 360);
      if (rnd() < 0.3) r.pm10Ugm3 = rnd() * 80;
      if (rnd() < 0.2) r.gasResistanceKohm = rnd() * 500;
      if (READING_METRICS.every((m) => r[m] === undefined)) r.temperatureC = 5;
      all.push(r);
      group.push(r);
    }
    out.push(group);
  }
  return out;
}

function readingBody(r: Reading): RecordBody<'reading'> {
  const body = { node_id: r.nodeId, ts: r.timestamp } as RecordBody<'reading'>;
  for (const m of READING_METRICS) {
    (body as Record<string, unknown>)[METRIC_API_NAMES[m]] = r[m] ?? null;
  }
  return body;
}

/** Every record made at T0. */
const batchOf = (siteId: string, firstSeq: number, records: BatchEntry[]): Batch =>
  numberedBatch(
    siteId,
    firstSeq,
    records.map((r) => ({ ...r, at: T0 })),
    T0,
  );

type Row = Record<string, unknown>;

function hubRows(db: Database, table: string, order: string): Row[] {
  return db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Row[];
}

async function upstreamRows(pool: pg.Pool, table: string, order: string, drop: string[]): Promise<Row[]> {
  const { rows } = await pool.query<Row>(`SELECT * FROM ${table} WHERE site_id = 'a' ORDER BY ${order}`);
  return rows.map((row) => {
    const copy = { ...row };
    for (const c of ['site_id', ...drop]) delete copy[c];
    return copy;
  });
}

describe.skipIf(skip)('BatchApplier rollups, as the hub computes them', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let applier: BatchApplier;
  let hub: Database;
  let writer: ReadingWriter;
  let seq: number;

  beforeEach(async () => {
    ({ schema, pool } = await migratedSchema('rollups', ['a']));
    applier = new BatchApplier(pool, { now: () => T0 });
    hub = openDatabase(':memory:');
    writer = new ReadingWriter(hub);
    seq = 1;
  });
  afterEach(async () => {
    closeDatabase(hub);
    await pool.end();
    await schema.drop();
  });

  /** Writes a group through the hub, and sends the same readings up as one batch. */
  async function both(group: Reading[]): Promise<void> {
    writer.write(group);
    const batch = batchOf(
      'a',
      seq,
      group.map((r) => ({ kind: 'reading', body: readingBody(r) })),
    );
    seq = batch.last_seq + 1;
    expect((await applier.apply('a', batch)).kind).toBe('applied');
  }

  async function expectSameAsHub(): Promise<void> {
    writer.close(); // the hub's clean stop: its open buckets and latest rows are in its tables
    for (const table of ['readings_hourly', 'readings_daily']) {
      const upstream = await upstreamRows(pool, table, 'node_id, bucket_start', ['from_site']);
      expect(upstream).toEqual(hubRows(hub, table, 'node_id, bucket_start'));
    }
    expect(await upstreamRows(pool, 'readings_latest', 'node_id', [])).toEqual(
      hubRows(hub, 'readings_latest', 'node_id'),
    );
    expect(await upstreamRows(pool, 'readings', 'node_id, ts', ['received_at'])).toEqual(
      hubRows(hub, 'readings', 'node_id, ts'),
    );
  }

  it('gives the hub’s exact figures for the same readings, duplicates and late fills included', async () => {
    const groups = readingGroups(7, 12, 150);
    for (const group of groups) await both(group);
    await expectSameAsHub();
    // The run really had duplicates, fills and several buckets.
    const buckets = await pool.query<{ n: number }>('SELECT count(*) AS n FROM readings_hourly');
    expect(buckets.rows[0]!.n).toBeGreaterThan(NODES.length * 10);
  });

  it('a duplicate in one batch and a batch sent again as new records count once; an empty reading not at all', async () => {
    const r: Reading = { nodeId: NODES[0]!, timestamp: T0, temperatureC: 20, windDirection: 350 };
    await both([r, { ...r }, { nodeId: r.nodeId, timestamp: T0, windDirection: 10 }]);
    await both([{ ...r }, { nodeId: r.nodeId, timestamp: T0 - HOUR, windDirection: 10 }]);
    // A reading with no metric at all is not stored, as on the hub.
    await both([{ nodeId: NODES[1]!, timestamp: T0 }]);
    await expectSameAsHub();
    expect((await pool.query('SELECT DISTINCT node_id FROM readings')).rows).toEqual([{ node_id: r.nodeId }]);
    const hourly = await pool.query(
      'SELECT temperature_c_count, wind_direction_count FROM readings_hourly ORDER BY bucket_start',
    );
    expect(hourly.rows).toEqual([
      { temperature_c_count: 0, wind_direction_count: 1 },
      { temperature_c_count: 1, wind_direction_count: 1 },
    ]);
  });

  it('moves the latest row field by field, only to values at least as new', async () => {
    await both([{ nodeId: NODES[0]!, timestamp: T0, temperatureC: 20, humidityPercent: 50 }]);
    await both([
      { nodeId: NODES[0]!, timestamp: T0 - 60_000, temperatureC: 1, pressurePa: 99_000 },
      { nodeId: NODES[0]!, timestamp: T0 + 60_000, humidityPercent: 60 },
    ]);
    await expectSameAsHub();
    const latest = await pool.query(
      'SELECT ts, temperature_c, temperature_c_ts, humidity_percent, humidity_percent_ts, pressure_pa, pressure_pa_ts FROM readings_latest',
    );
    expect(latest.rows).toEqual([
      {
        ts: T0 + 60_000,
        temperature_c: 20,
        temperature_c_ts: T0,
        humidity_percent: 60,
        humidity_percent_ts: T0 + 60_000,
        pressure_pa: 99_000,
        pressure_pa_ts: T0 - 60_000,
      },
    ]);
  });

  it('a bucket the site sends whole takes the site’s figures, and raw readings no longer add to it', async () => {
    const node = NODES[0]!;
    const hour = Math.floor(T0 / HOUR) * HOUR;
    await both([{ nodeId: node, timestamp: hour + 60_000, temperatureC: 10 }]);
    const figures = Object.fromEntries(ROLLUP_COLUMNS.map((c) => [c, 0])) as Record<string, number>;
    figures.temperature_c_sum = 150;
    figures.temperature_c_count = 10;
    figures.wind_direction_sin_sum = 0.5;
    figures.wind_direction_cos_sum = -0.25;
    figures.wind_direction_count = 2;
    const rollup = { interval: '1h', node_id: node, bucket_start: hour, ...figures };
    const sent = batchOf('a', seq, [{ kind: 'rollup', body: rollup }]);
    seq = sent.last_seq + 1;
    await applier.apply('a', sent);

    // A raw reading for that hour afterwards: stored, but the bucket keeps the site's figures.
    const late = batchOf('a', seq, [
      { kind: 'reading', body: readingBody({ nodeId: node, timestamp: hour + 120_000, temperatureC: 99 }) },
      { kind: 'reading', body: readingBody({ nodeId: node, timestamp: hour + HOUR + 1, temperatureC: 7 }) },
    ]);
    seq = late.last_seq + 1;
    await applier.apply('a', late);
    const hourly = await pool.query(
      'SELECT bucket_start, temperature_c_sum, temperature_c_count, wind_direction_count, from_site FROM readings_hourly ORDER BY bucket_start',
    );
    expect(hourly.rows).toEqual([
      {
        bucket_start: hour,
        temperature_c_sum: 150,
        temperature_c_count: 10,
        wind_direction_count: 2,
        from_site: true,
      },
      {
        bucket_start: hour + HOUR,
        temperature_c_sum: 7,
        temperature_c_count: 1,
        wind_direction_count: 0,
        from_site: false,
      },
    ]);
    // The daily bucket was not sent whole: raw readings still add to it.
    const daily = await pool.query(
      'SELECT temperature_c_sum, temperature_c_count, from_site FROM readings_daily',
    );
    expect(daily.rows).toEqual([
      { temperature_c_sum: 10 + 99 + 7, temperature_c_count: 3, from_site: false },
    ]);
    expect((await pool.query('SELECT count(*)::int AS n FROM readings')).rows[0]).toEqual({ n: 3 });

    // A newer rollup of the same bucket replaces the figures again.
    const again = batchOf('a', seq, [
      { kind: 'rollup', body: { ...rollup, temperature_c_sum: 200, temperature_c_count: 12 } },
    ]);
    await applier.apply('a', again);
    const replaced = await pool.query(
      'SELECT temperature_c_sum, temperature_c_count FROM readings_hourly WHERE bucket_start = $1',
      [hour],
    );
    expect(replaced.rows).toEqual([{ temperature_c_sum: 200, temperature_c_count: 12 }]);
  });
});
