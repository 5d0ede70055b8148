/**
 * BatchApplier and `readings` records on a real PostgreSQL (docs/sync.md "Upstream"): batches
 * made by the site's own outbox (the reading writer's observer, Outbox.readBatch) give the hub's
 * rollups and latest rows; the COPY fast path falls back to the careful path when a row is there
 * already (a fill, the same row twice, a retry) and then counts only what each row adds; a
 * site's next batch sent while the one before is still applied waits for it; listeners hear what
 * a batch applied; expired request ids go at most once a minute.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Reading } from '../../../src/domain/reading.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { METRIC_COLUMNS } from '../../../src/store/rollups.js';
import { type Batch, batchSchema, type ReadingRow } from '../../../sync/protocol.js';
import { Outbox } from '../../../sync/site/outbox.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';
import { type AppliedChanges, BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { type BatchEntry, numberedBatch } from '../helpers/batches.js';
import { hourRollupBody } from '../helpers/records.js';
import { migratedSchema } from './helpers.js';

const skip = await skipWithoutPostgres();

const T0 = Date.UTC(2026, 2, 9, 22, 30);
const MINUTE = 60_000;
const HOUR = 3_600_000;
const A = '!0000000a';
const B = 'roof-1';

type Row = Record<string, unknown>;

function row(nodeId: string, ts: number, values: Partial<Record<number, number>>): ReadingRow {
  const out: ReadingRow = [nodeId, ts, null, null, null, null, null, null, null, null];
  for (const [slot, v] of Object.entries(values)) out[2 + Number(slot)] = v!;
  return out;
}

const batchOf = (siteId: string, firstSeq: number, records: BatchEntry[]): Batch =>
  batchSchema.parse(numberedBatch(siteId, firstSeq, records, T0));

const readingsOf = (...rows: ReadingRow[]) => ({ kind: 'readings' as const, body: { rows } });

async function rows(pool: pg.Pool, table: string, order: string, drop: string[] = []): Promise<Row[]> {
  const result = await pool.query<Row>(`SELECT * FROM ${table} WHERE site_id = 'a' ORDER BY ${order}`);
  return result.rows.map((r) => {
    const copy = { ...r };
    for (const c of ['site_id', ...drop]) delete copy[c];
    return copy;
  });
}

/** Rollup figures equal up to the last bits a different order of additions can move. */
function expectSameFigures(actual: Row[], expected: Row[]): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((got, i) => {
    const want = expected[i]!;
    expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
    for (const [k, v] of Object.entries(want)) {
      if (k.endsWith('_sum')) expect(got[k] as number).toBeCloseTo(v as number, 9);
      else expect(got[k]).toEqual(v);
    }
  });
}

describe.skipIf(skip)('BatchApplier, readings records', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let told: { siteId: string; changes: AppliedChanges }[];
  let applier: BatchApplier;
  const extraPools: pg.Pool[] = [];

  beforeEach(async () => {
    ({ schema, pool } = await migratedSchema('readings', ['a']));
    told = [];
    applier = new BatchApplier(pool, {
      now: () => T0,
      onApplied: (siteId, changes) => told.push({ siteId, changes }),
    });
  });
  afterEach(async () => {
    await Promise.all(extraPools.splice(0).map((p) => p.end()));
    await pool.end();
    await schema.drop();
  });

  describe('from the site’s own outbox', () => {
    let hub: Database;
    beforeEach(() => {
      hub = openDatabase(':memory:');
      enableOutbox(hub);
    });
    afterEach(() => closeDatabase(hub));

    /** Sends everything the hub's outbox holds, in batches of `maxBytes`, as the push actor reads them. */
    async function pushAll(maxBytes: number): Promise<number> {
      const outbox = new Outbox(hub);
      let batches = 0;
      for (
        let batch = outbox.readBatch({ maxRecords: 5000, maxBytes });
        batch;
        batch = outbox.readBatch({ maxRecords: 5000, maxBytes })
      ) {
        const parsed = batchSchema.parse({
          protocol: 1,
          site_id: 'a',
          first_seq: batch.firstSeq,
          last_seq: batch.lastSeq,
          records: JSON.parse(batch.recordsJson),
          dropped: batch.dropped,
          sent_at: T0,
        });
        expect(await applier.apply('a', parsed)).toEqual({ kind: 'applied', ackedSeq: batch.lastSeq });
        outbox.acknowledge(batch.lastSeq);
        batches++;
      }
      return batches;
    }

    it('gives the hub’s rows, rollups and latest rows, fills and repeats included', async () => {
      const writer = new ReadingWriter(hub);
      const all: Reading[] = [];
      for (let i = 0; i < 600; i++) {
        const r: Reading = {
          nodeId: [A, B, '!0000000b'][i % 3]!,
          timestamp: T0 + Math.floor(i / 3) * 97_000,
          temperatureC: 10 + ((i * 7) % 150) / 10 + i / 1000,
        };
        if (i % 2) r.windDirection = (i * 37) % 360;
        if (i % 5) r.pressurePa = 100_000 + i;
        all.push(r);
        // One reading per write most of the time (a radio site), a few bigger writes.
        if (i % 50 < 45) writer.write([r]);
      }
      writer.write(all.filter((_, i) => i % 50 >= 45));
      // Repeats add nothing; fills add only the field they fill; old readings come late.
      writer.write(all.slice(0, 40));
      writer.write(
        all.slice(100, 160).map((r) => ({ nodeId: r.nodeId, timestamp: r.timestamp, humidityPercent: 55 })),
      );
      writer.write([{ nodeId: A, timestamp: T0 - 5 * HOUR, pm25Ugm3: 3 }]);
      // Small batches: fills and the rows they fill land in different batches too.
      expect(await pushAll(8 * 1024)).toBeGreaterThan(3);
      writer.close(); // the hub's clean stop: its open buckets and latest rows are in its tables

      const hubRows = (table: string, order: string) =>
        hub.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Row[];
      expect(await rows(pool, 'readings', 'node_id, ts', ['received_at'])).toEqual(
        hubRows('readings', 'node_id, ts'),
      );
      for (const table of ['readings_hourly', 'readings_daily']) {
        expectSameFigures(
          await rows(pool, table, 'node_id, bucket_start', ['from_site']),
          hubRows(table, 'node_id, bucket_start'),
        );
      }
      expect(await rows(pool, 'readings_latest', 'node_id')).toEqual(hubRows('readings_latest', 'node_id'));
    });

    it('node updates riding along apply too, and the listener hears the newest reading per node', async () => {
      const writer = new ReadingWriter(hub);
      const nodes = new NodeRepository(hub);
      for (let i = 0; i < 20; i++) {
        writer.write([{ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i }]);
        nodes.upsert({ nodeNum: 0xa, nodeId: A, snr: i, lastHeard: T0 + i * MINUTE }, T0 + i * MINUTE);
      }
      writer.write([{ nodeId: B, timestamp: T0, humidityPercent: 40 }]);
      await pushAll(1024 * 1024);
      expect(told).toHaveLength(1);
      expect(told[0]!.changes.readingCount).toBe(21);
      expect(told[0]!.changes.latestReadings.sort((x, y) => x[0].localeCompare(y[0]))).toEqual([
        row(A, T0 + 19 * MINUTE, { 0: 19 }),
        row(B, T0, { 1: 40 }),
      ]);
      expect(told[0]!.changes.nodes).toEqual([expect.objectContaining({ node_id: A, snr: 19 })]);
    });
  });

  it('a row stored before: the careful path stores and counts only the fields it fills', async () => {
    await applier.apply(
      'a',
      batchOf('a', 1, [readingsOf(row(A, T0, { 0: 20 }), row(A, T0 + MINUTE, { 0: 21 }))]),
    );
    // The second batch fills a field of a stored row, and repeats a whole one: nothing else.
    const outcome = await applier.apply(
      'a',
      batchOf('a', 2, [
        readingsOf(
          row(A, T0, { 0: 99, 1: 50 }),
          row(A, T0 + MINUTE, { 0: 21 }),
          row(A, T0 + 2 * MINUTE, { 0: 22 }),
        ),
      ]),
    );
    expect(outcome).toEqual({ kind: 'applied', ackedSeq: 2 });
    expect(
      // Every metric column but the two the batches fill (temperature, humidity).
      await rows(pool, 'readings', 'ts', ['received_at', ...METRIC_COLUMNS.slice(2)]),
    ).toEqual([
      { node_id: A, ts: T0, temperature_c: 20, humidity_percent: 50 },
      { node_id: A, ts: T0 + MINUTE, temperature_c: 21, humidity_percent: null },
      { node_id: A, ts: T0 + 2 * MINUTE, temperature_c: 22, humidity_percent: null },
    ]);
    const hourly = await pool.query(
      'SELECT temperature_c_sum, temperature_c_count, humidity_percent_sum, humidity_percent_count FROM readings_hourly',
    );
    expect(hourly.rows).toEqual([
      { temperature_c_sum: 63, temperature_c_count: 3, humidity_percent_sum: 50, humidity_percent_count: 1 },
    ]);
    expect(told.map((t) => t.changes.readingCount)).toEqual([2, 2]);
  });

  it('the same row twice in one batch: the second adds only what the first had not', async () => {
    await applier.apply(
      'a',
      batchOf('a', 1, [readingsOf(row(A, T0, { 0: 20 })), readingsOf(row(A, T0, { 0: 25, 1: 60 }))]),
    );
    expect(await rows(pool, 'readings', 'ts', ['received_at'])).toEqual([
      expect.objectContaining({ temperature_c: 20, humidity_percent: 60 }),
    ]);
    const hourly = await pool.query(
      'SELECT temperature_c_count, humidity_percent_count FROM readings_hourly',
    );
    expect(hourly.rows).toEqual([{ temperature_c_count: 1, humidity_percent_count: 1 }]);
  });

  it('a retried batch of readings is a duplicate: its COPY finds its rows, nothing changes', async () => {
    const batch = batchOf('a', 1, [readingsOf(row(A, T0, { 0: 20 }), row(B, T0, { 0: 5 }))]);
    await applier.apply('a', batch, { value: 'one', expiresAt: T0 + MINUTE });
    const before = await rows(pool, 'readings_hourly', 'node_id');
    expect(await applier.apply('a', batch, { value: 'two', expiresAt: T0 + MINUTE })).toEqual({
      kind: 'duplicate',
      ackedSeq: 1,
    });
    expect(await rows(pool, 'readings_hourly', 'node_id')).toEqual(before);
    expect(await pool.query('SELECT count(*)::int AS n FROM readings')).toMatchObject({ rows: [{ n: 2 }] });
    expect(told).toHaveLength(1);
  });

  it('a bucket the site sent whole in the same batch keeps the site’s figures', async () => {
    const hour = Math.floor(T0 / HOUR) * HOUR;
    const rollup = hourRollupBody(A, hour, { temperature_c_sum: 150, temperature_c_count: 10 });
    // Raw readings of the hour before the rollup record and after it, in one batch.
    await applier.apply(
      'a',
      batchOf('a', 1, [
        readingsOf(row(A, hour + 1, { 0: 1 })),
        { kind: 'rollup', body: rollup },
        readingsOf(row(A, hour + 2, { 0: 2 })),
      ]),
    );
    const hourly = await pool.query(
      'SELECT temperature_c_sum, temperature_c_count, from_site FROM readings_hourly',
    );
    expect(hourly.rows).toEqual([{ temperature_c_sum: 150, temperature_c_count: 10, from_site: true }]);
    expect(await pool.query('SELECT count(*)::int AS n FROM readings')).toMatchObject({ rows: [{ n: 2 }] });
  });

  it('a batch sent while the one before is still being applied waits for it, in this process', async () => {
    const first = batchOf(
      'a',
      1,
      Array.from({ length: 30 }, (_, i) => readingsOf(row(A, T0 + i * MINUTE, { 0: i }))),
    );
    const second = batchOf('a', 31, [readingsOf(row(A, T0 + 40 * MINUTE, { 0: 40 }))]);
    // The second (the one after) would find a gap if it got the site's lock first: it waits.
    const outcomes = await Promise.all([applier.apply('a', first), applier.apply('a', second)]);
    expect(outcomes).toEqual([
      { kind: 'applied', ackedSeq: 30 },
      { kind: 'applied', ackedSeq: 31 },
    ]);
    // Alone, with nothing before it in progress, a gap is a gap.
    expect(
      await applier.apply('a', batchOf('a', 40, [readingsOf(row(A, T0 + HOUR, { 0: 1 }))])),
    ).toMatchObject({
      kind: 'refused',
      reason: 'gap',
      expectedSeq: 32,
    });
    expect(await pool.query('SELECT count(*)::int AS n FROM readings')).toMatchObject({ rows: [{ n: 31 }] });
  });

  it('a batch refused on a fresh connection leaves that connection able to apply the next', async () => {
    const single = openPool(schema.url, { max: 1 });
    extraPools.push(single);
    const alone = new BatchApplier(single, { now: () => T0 });
    expect(await alone.apply('a', batchOf('a', 5, [readingsOf(row(A, T0, { 0: 1 }))]))).toMatchObject({
      reason: 'gap',
    });
    expect(await alone.apply('a', batchOf('a', 1, [readingsOf(row(A, T0, { 0: 1 }))]))).toEqual({
      kind: 'applied',
      ackedSeq: 1,
    });
    expect(await alone.apply('a', batchOf('a', 2, [readingsOf(row(A, T0 + 1, { 0: 2 }))]))).toEqual({
      kind: 'applied',
      ackedSeq: 2,
    });
    const hourly = await pool.query('SELECT temperature_c_count FROM readings_hourly');
    expect(hourly.rows).toEqual([{ temperature_c_count: 2 }]);
  });

  it('forgets expired request ids at most once a minute, outside the batches', async () => {
    let now = T0;
    const clocked = new BatchApplier(pool, { now: () => now });
    const ids = async () =>
      (await pool.query<{ jti: string }>('SELECT jti FROM sync_request_ids ORDER BY jti')).rows.map(
        (r) => r.jti,
      );
    await clocked.apply('a', batchOf('a', 1, [readingsOf(row(A, T0, { 0: 1 }))]), {
      value: 'old',
      expiresAt: T0 + MINUTE,
    });
    now = T0 + 10 * MINUTE; // 'old' expired long enough ago; the last prune was at T0, though
    await clocked.apply('a', batchOf('a', 2, [readingsOf(row(A, T0 + 1, { 0: 1 }))]), {
      value: 'new',
      expiresAt: now + MINUTE,
    });
    expect(await ids()).toEqual(['new']);
    now += 30_000; // within a minute of that prune: not again
    await pool.query(`INSERT INTO sync_request_ids (site_id, jti, expires_at) VALUES ('a', 'stale', 0)`);
    await clocked.apply('a', batchOf('a', 3, [readingsOf(row(A, T0 + 2, { 0: 1 }))]));
    expect(await ids()).toEqual(['new', 'stale']);
    await clocked.pruneRequestIds(now, true);
    expect(await ids()).toEqual(['new']);
  });
});
