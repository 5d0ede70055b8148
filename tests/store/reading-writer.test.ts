import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { DAY, HOUR, latestRow, memoryDb, rawRows, reading, rollup, T0, tempDir } from './fixtures.js';

let db: Database;
let writer: ReadingWriter;

beforeEach(() => {
  db = memoryDb();
  writer = new ReadingWriter(db);
});
afterEach(() => closeDatabase(db));

describe('ReadingWriter: new and duplicate readings', () => {
  it('stores new readings and returns them; a replayed batch returns nothing and stores nothing', () => {
    const batch = [
      reading('!a', T0, { temperatureC: 20, humidityPercent: 50 }),
      reading('!b', T0, { pressurePa: 101_325 }),
      reading('!a', T0 + 60_000, { temperatureC: 21 }),
    ];
    expect(writer.write(batch)).toEqual(batch);
    expect(writer.write(batch)).toEqual([]);
    expect(rawRows(db, '!a')).toHaveLength(2);
    expect(rawRows(db, '!b')).toHaveLength(1);
  });

  it('a duplicate never double-counts in the rollups or moves the latest row', () => {
    const batch = [
      reading('!a', T0, { temperatureC: 20 }),
      reading('!a', T0 + 1_000, { temperatureC: 22, windDirection: 90 }),
    ];
    writer.write(batch);
    const hourly = rollup(db, 'readings_hourly', '!a');
    const daily = rollup(db, 'readings_daily', '!a');
    const latest = latestRow(db, '!a');

    writer.write(batch);
    writer.write([batch[1]!, batch[0]!]);
    // A fresh writer (as after a restart) must not count them either.
    new ReadingWriter(db).write(batch);

    expect(rollup(db, 'readings_hourly', '!a')).toEqual(hourly);
    expect(rollup(db, 'readings_daily', '!a')).toEqual(daily);
    expect(latestRow(db, '!a')).toEqual(latest);
    expect(hourly[0]).toMatchObject({
      temperature_c_sum: 42,
      temperature_c_count: 2,
      wind_direction_count: 1,
    });
  });

  it('a duplicate inside one batch counts once', () => {
    const r = reading('!a', T0, { temperatureC: 20 });
    expect(writer.write([r, { ...r }, { ...r }])).toEqual([r]);
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({
      temperature_c_sum: 20,
      temperature_c_count: 1,
    });
  });

  it('a reading for an existing (node, ts) fills only the NULL fields, and only those count', () => {
    writer.write([reading('!a', T0, { temperatureC: 20 })]);
    const added = writer.write([reading('!a', T0, { temperatureC: 99, humidityPercent: 55, pm25Ugm3: 3 })]);

    // Only what was new comes back: the filled fields, not the duplicate temperature.
    expect(added).toEqual([{ nodeId: '!a', timestamp: T0, humidityPercent: 55, pm25Ugm3: 3 }]);
    expect(rawRows(db, '!a')).toEqual([
      expect.objectContaining({
        ts: T0,
        temperature_c: 20,
        humidity_percent: 55,
        pm25_ugm3: 3,
        pressure_pa: null,
      }),
    ]);
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({
      temperature_c_sum: 20,
      temperature_c_count: 1,
      humidity_percent_sum: 55,
      humidity_percent_count: 1,
      pm25_ugm3_count: 1,
    });
    expect(latestRow(db, '!a')).toMatchObject({ temperature_c: 20, humidity_percent: 55 });
  });

  it('falls back to the careful path when a newer row was stored behind its back', () => {
    writer.write([reading('!a', T0, { temperatureC: 20 })]);
    // Another connection (say, a sync receiver) stores a newer row the writer has not seen.
    db.prepare('INSERT INTO readings (node_id, ts, temperature_c) VALUES (?, ?, ?)').run('!a', T0 + 1_000, 5);
    const added = writer.write([
      reading('!a', T0 + 1_000, { temperatureC: 30, humidityPercent: 40 }),
      reading('!a', T0 + 2_000, { temperatureC: 31 }),
    ]);
    expect(added).toEqual([
      { nodeId: '!a', timestamp: T0 + 1_000, humidityPercent: 40 },
      reading('!a', T0 + 2_000, { temperatureC: 31 }),
    ]);
    expect(rawRows(db, '!a').map((r) => r.temperature_c)).toEqual([20, 5, 31]);
  });
});

describe('ReadingWriter: input hygiene', () => {
  it('stores every metric in its own column', () => {
    writer.write([
      reading('!a', T0, {
        temperatureC: 1,
        humidityPercent: 2,
        pressurePa: 3,
        windSpeedMs: 4,
        windDirection: 5,
        pm25Ugm3: 6,
        pm10Ugm3: 7,
        gasResistanceKohm: 8,
      }),
    ]);
    const columns = {
      temperature_c: 1,
      humidity_percent: 2,
      pressure_pa: 3,
      wind_speed_ms: 4,
      wind_direction: 5,
      pm25_ugm3: 6,
      pm10_ugm3: 7,
      gas_resistance_kohm: 8,
    };
    expect(rawRows(db, '!a')).toEqual([{ node_id: '!a', ts: T0, ...columns }]);
    expect(latestRow(db, '!a')).toMatchObject(columns);
    expect(rollup(db, 'readings_daily', '!a')[0]).toMatchObject({
      temperature_c_sum: 1,
      humidity_percent_sum: 2,
      pressure_pa_sum: 3,
      wind_speed_ms_sum: 4,
      wind_direction_count: 1,
      pm25_ugm3_sum: 6,
      pm10_ugm3_sum: 7,
      gas_resistance_kohm_sum: 8,
    });
  });

  it('keeps zero values: 0 is a measurement, not an absence', () => {
    const zero = reading('!a', T0, { temperatureC: 0, windSpeedMs: 0, windDirection: 0 });
    expect(writer.write([zero])).toEqual([zero]);
    expect(rawRows(db, '!a')[0]).toMatchObject({ temperature_c: 0, wind_speed_ms: 0, wind_direction: 0 });
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({
      temperature_c_count: 1,
      wind_speed_ms_count: 1,
      wind_direction_count: 1,
      wind_direction_cos_sum: 1,
    });
    expect(latestRow(db, '!a')).toMatchObject({ temperature_c: 0, temperature_c_ts: T0 });
  });

  it('drops non-finite numbers and skips readings with nothing left', () => {
    const added = writer.write([
      reading('!a', T0, {
        temperatureC: Number.NaN,
        humidityPercent: 40,
        pressurePa: Number.POSITIVE_INFINITY,
      }),
      reading('!a', T0 + 1, { temperatureC: Number.NaN }),
      reading('!a', Number.NaN, { temperatureC: 1 }),
      reading('', T0, { temperatureC: 1 }),
      { nodeId: '!a', timestamp: T0 + 2, temperatureC: '20' as unknown as number },
    ]);
    expect(added).toEqual([{ nodeId: '!a', timestamp: T0, humidityPercent: 40 }]);
    expect(rawRows(db, '!a')).toHaveLength(1);
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({
      temperature_c_count: 0,
      humidity_percent_count: 1,
    });
  });

  it('floors fractional timestamps to whole milliseconds', () => {
    expect(writer.write([reading('!a', T0 + 0.7, { temperatureC: 1 })])).toEqual([
      reading('!a', T0, { temperatureC: 1 }),
    ]);
    expect(rawRows(db, '!a')[0]!.ts).toBe(T0);
  });
});

describe('ReadingWriter: latest row', () => {
  it('merges field by field, out-of-order readings included', () => {
    writer.write([reading('!a', T0 + 2_000, { temperatureC: 20 })]);
    // Older, but it brings humidity nobody had: humidity takes it, temperature stays.
    writer.write([reading('!a', T0 + 1_000, { temperatureC: 10, humidityPercent: 50 })]);
    expect(latestRow(db, '!a')).toMatchObject({
      ts: T0 + 2_000,
      temperature_c: 20,
      temperature_c_ts: T0 + 2_000,
      humidity_percent: 50,
      humidity_percent_ts: T0 + 1_000,
    });

    writer.write([reading('!a', T0 + 3_000, { humidityPercent: 60 })]);
    writer.write([reading('!a', T0 + 1_500, { humidityPercent: 1, temperatureC: 1 })]);
    expect(latestRow(db, '!a')).toMatchObject({
      ts: T0 + 3_000,
      temperature_c: 20,
      humidity_percent: 60,
      humidity_percent_ts: T0 + 3_000,
    });
  });

  it('within one batch, the newest reading of each field wins whatever the order', () => {
    writer.write([
      reading('!a', T0 + 3_000, { temperatureC: 3 }),
      reading('!a', T0 + 1_000, { temperatureC: 1, pm10Ugm3: 7 }),
      reading('!a', T0 + 2_000, { temperatureC: 2 }),
    ]);
    expect(latestRow(db, '!a')).toMatchObject({
      ts: T0 + 3_000,
      temperature_c: 3,
      pm10_ugm3: 7,
      pm10_ugm3_ts: T0 + 1_000,
    });
  });

  it('remembers field times across a restart', () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'hub.db');
      const first = openDatabase(file);
      new ReadingWriter(first).write([reading('!a', T0 + 5_000, { temperatureC: 25 })]);
      closeDatabase(first);

      const second = openDatabase(file);
      new ReadingWriter(second).write([reading('!a', T0 + 1_000, { temperatureC: 11, humidityPercent: 45 })]);
      expect(latestRow(second, '!a')).toMatchObject({
        ts: T0 + 5_000,
        temperature_c: 25,
        humidity_percent: 45,
      });
      closeDatabase(second);
    } finally {
      t.cleanup();
    }
  });

  it('changes nothing, on disk or in memory, when the transaction fails', () => {
    writer.write([reading('!a', T0, { temperatureC: 20 })]);
    db.exec(
      "CREATE TRIGGER boom BEFORE INSERT ON reading_rows WHEN NEW.node_key = (SELECT node_key FROM reading_nodes WHERE node_id = '!boom') BEGIN SELECT RAISE(ABORT, 'boom'); END",
    );
    expect(() =>
      writer.write([
        reading('!a', T0 + 9_000, { temperatureC: 90 }),
        reading('!boom', T0, { temperatureC: 1 }),
      ]),
    ).toThrow(/boom/);
    expect(rawRows(db, '!a')).toHaveLength(1);
    expect(latestRow(db, '!a')).toMatchObject({ ts: T0, temperature_c: 20 });
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({ temperature_c_count: 1 });

    // The in-memory latest map did not move to T0 + 9000 either: an older reading still lands.
    writer.write([reading('!a', T0 + 5_000, { temperatureC: 50 })]);
    expect(latestRow(db, '!a')).toMatchObject({ ts: T0 + 5_000, temperature_c: 50 });
  });
});

describe('ReadingWriter: rollup buckets', () => {
  it('puts 00:59:59.999 and 01:00:00.000 in different hours, and splits days at UTC midnight', () => {
    const lastMsOfHour = T0 + HOUR - 1;
    const lastMsOfDay = T0 + DAY - 1;
    writer.write([
      reading('!a', lastMsOfHour, { temperatureC: 10 }),
      reading('!a', T0 + HOUR, { temperatureC: 20 }),
      reading('!a', lastMsOfDay, { temperatureC: 30 }),
      reading('!a', T0 + DAY, { temperatureC: 40 }),
    ]);
    expect(
      rollup(db, 'readings_hourly', '!a').map((r) => [
        r.bucket_start,
        r.temperature_c_sum,
        r.temperature_c_count,
      ]),
    ).toEqual([
      [T0, 10, 1],
      [T0 + HOUR, 20, 1],
      [T0 + 23 * HOUR, 30, 1],
      [T0 + DAY, 40, 1],
    ]);
    expect(
      rollup(db, 'readings_daily', '!a').map((r) => [
        r.bucket_start,
        r.temperature_c_sum,
        r.temperature_c_count,
      ]),
    ).toEqual([
      [T0, 60, 3],
      [T0 + DAY, 40, 1],
    ]);
  });

  it('adds across batches: each bucket is the sum of everything stored in it', () => {
    writer.write([reading('!a', T0 + 1, { temperatureC: 10 }), reading('!b', T0 + 1, { temperatureC: 5 })]);
    writer.write([reading('!a', T0 + 2, { temperatureC: 20, humidityPercent: 30 })]);
    expect(rollup(db, 'readings_hourly', '!a')[0]).toMatchObject({
      temperature_c_sum: 30,
      temperature_c_count: 2,
      humidity_percent_sum: 30,
      humidity_percent_count: 1,
    });
    expect(rollup(db, 'readings_hourly', '!b')[0]).toMatchObject({
      temperature_c_sum: 5,
      temperature_c_count: 1,
    });
  });

  it('sums wind direction as sin and cos', () => {
    writer.write([reading('!a', T0, { windDirection: 90 }), reading('!a', T0 + 1, { windDirection: 180 })]);
    const [bucket] = rollup(db, 'readings_hourly', '!a');
    expect(bucket!.wind_direction_count).toBe(2);
    expect(bucket!.wind_direction_sin_sum as number).toBeCloseTo(1, 12);
    expect(bucket!.wind_direction_cos_sum as number).toBeCloseTo(-1, 12);
  });
});

describe('ReadingWriter.writeGroups', () => {
  it('commits several batches in one transaction and returns the new readings of each', () => {
    const a = [reading('!a', T0, { temperatureC: 1 })];
    const b = [reading('!a', T0, { temperatureC: 1 }), reading('!b', T0, { temperatureC: 2 })];
    expect(writer.writeGroups([a, b])).toEqual([a, [b[1]]]);
  });
});
