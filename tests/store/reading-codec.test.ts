/**
 * The compact raw rows (src/store/reading-codec.ts): every number a sensor, the decoder or the
 * ingest API can give reads back bit for bit, through the writer, the hub's reads and the
 * `readings` view; values on a metric's resolution are stored as small integers, the rest as REAL.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { READING_METRICS, type Reading } from '../../src/domain/reading.js';
import { f32 } from '../../src/mesh/packet-decoder.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { METRIC_RESOLUTION } from '../../src/store/reading-codec.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';
import { wholeDegrees } from '../../src/weather/weather-reads.js';
import { WeatherService } from '../../src/weather/weather-service.js';

const open: Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) closeDatabase(db);
});

function hub() {
  const db = openDatabase(':memory:');
  open.push(db);
  return { db, writer: new ReadingWriter(db), weather: new WeatherService({ db }) };
}

const T0 = Date.UTC(2026, 5, 1);
const KEYS = READING_METRICS;

/** A float32 sensor value as the decoder keeps it (7 significant digits), or any double. */
const sensorNumber = fc.oneof(
  fc.float({ noNaN: true, noDefaultInfinity: true }).map((v) => f32(v)!),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -100_000, max: 200_000 }).map((v) => v / 100),
  fc.integer({ min: 30_000_00, max: 110_000_00 }).map((v) => v / 100),
  fc.constantFrom(0, 1e30, -1e30, 3.4028234663852886e38, 2 ** 53 + 2, 101_325.12, 1013.25 * 100),
);

describe('compact raw readings', () => {
  it('give every number back bit for bit, through the hub and the readings view', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.option(sensorNumber, { nil: undefined }), { minLength: 8, maxLength: 8 }), {
          minLength: 1,
          maxLength: 30,
        }),
        (rows) => {
          const { db, writer, weather } = hub();
          const written: Reading[] = rows.map((values, i) => {
            const r: Reading = { nodeId: '!0000abcd', timestamp: T0 + i * 1000 };
            values.forEach((v, slot) => {
              if (v !== undefined) (r as unknown as Record<string, number>)[KEYS[slot]!] = v;
            });
            return r;
          });
          writer.write(written);
          const stored = written.filter((r) => KEYS.some((k) => r[k] !== undefined));
          const viewRows = db
            .prepare(
              `SELECT ts, ${METRIC_COLUMNS.join(', ')} FROM readings WHERE node_id = '!0000abcd' ORDER BY ts`,
            )
            .raw(true)
            .all() as (number | null)[][];
          expect(viewRows).toHaveLength(stored.length);
          stored.forEach((r, i) => {
            const expected = [r.timestamp, ...KEYS.map((k) => r[k] ?? null)];
            // === keeps -0 and 0 alike (both are 0 in JSON); anything else must be the same double.
            viewRows[i]!.forEach((v, j) => {
              expect(v === expected[j] || Object.is(v, expected[j])).toBe(true);
            });
          });
          const history = weather.history({
            nodeId: '!0000abcd',
            interval: 'raw',
            start: T0,
            end: T0 + 3_600_000,
            limit: 1000,
          });
          const data = JSON.parse(String(history.body)).data as Record<string, number>[];
          expect(data).toHaveLength(stored.length);
          stored.forEach((r, i) => {
            METRIC_COLUMNS.forEach((c, slot) => {
              const v = r[KEYS[slot]!];
              // The API gives wind direction in whole degrees (weather-reads.ts), and -0 as 0.
              const served =
                v === undefined ? undefined : c === 'wind_direction' ? wholeDegrees(v) : v === 0 ? 0 : v;
              expect(data[i]![c]).toBe(served);
            });
          });
          closeDatabase(db);
          open.splice(open.indexOf(db), 1);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('stores values on a metric’s resolution as integers, finer or huge ones as REAL', () => {
    const { db, writer } = hub();
    writer.write([
      {
        nodeId: '!a',
        timestamp: T0,
        temperatureC: 21.37,
        humidityPercent: 45.5,
        pressurePa: 101_325.12,
        windSpeedMs: 3.4,
        windDirection: 270,
        pm25Ugm3: 12,
        pm10Ugm3: 20,
        gasResistanceKohm: 123.456,
      },
      {
        nodeId: '!a',
        timestamp: T0 + 1,
        temperatureC: 21.123456,
        humidityPercent: 45.12305,
        pressurePa: 1e30,
      },
    ]);
    const types = db
      .prepare(`SELECT ${METRIC_COLUMNS.map((c) => `typeof(${c})`).join(', ')} FROM reading_rows ORDER BY ts`)
      .raw(true)
      .all();
    expect(types).toEqual([
      ['integer', 'integer', 'integer', 'integer', 'integer', 'integer', 'integer', 'integer'],
      ['real', 'real', 'real', 'null', 'null', 'null', 'null', 'null'],
    ]);
    // A count of the resolution: 21.37 °C is 2137 hundredths; pressure counts from 100,000 Pa.
    expect(
      db.prepare('SELECT temperature_c, pressure_pa FROM reading_rows ORDER BY ts LIMIT 1').raw(true).get(),
    ).toEqual([2137, 132_512]);
    expect(METRIC_RESOLUTION.pressure_pa).toEqual({ step: 0.01, offset: 100_000 });
    expect(db.prepare('SELECT pressure_pa FROM readings ORDER BY ts').pluck().all()).toEqual([
      101_325.12, 1e30,
    ]);
  });

  it('keeps a node id once, as a small key, and its rows under it', () => {
    const { db, writer } = hub();
    writer.write([
      { nodeId: '!a', timestamp: T0, temperatureC: 1 },
      { nodeId: 'garden-1', timestamp: T0, temperatureC: 2 },
      { nodeId: '!a', timestamp: T0 + 1, temperatureC: 3 },
    ]);
    expect(
      db.prepare('SELECT node_id, node_key FROM reading_nodes ORDER BY node_key').raw(true).all(),
    ).toEqual([
      ['!a', 1],
      ['garden-1', 2],
    ]);
    expect(
      db.prepare('SELECT node_key, count(*) FROM reading_rows GROUP BY node_key').raw(true).all(),
    ).toEqual([
      [1, 2],
      [2, 1],
    ]);
  });

  it('forgets a node key made by a transaction that failed, so two nodes never share one', () => {
    const { db, writer, weather } = hub();
    db.exec(
      "CREATE TRIGGER boom BEFORE INSERT ON reading_rows WHEN NEW.ts = 13 BEGIN SELECT RAISE(ABORT, 'boom'); END",
    );
    expect(() => writer.write([{ nodeId: '!x', timestamp: 13, temperatureC: 1 }])).toThrow(/boom/);
    writer.write([{ nodeId: '!y', timestamp: 14, temperatureC: 2 }]);
    writer.write([{ nodeId: '!x', timestamp: 15, temperatureC: 3 }]);
    expect(
      db.prepare('SELECT node_id, node_key FROM reading_nodes ORDER BY node_key').raw(true).all(),
    ).toEqual([
      ['!y', 1],
      ['!x', 2],
    ]);
    const raw = (nodeId: string) =>
      JSON.parse(
        String(weather.history({ nodeId, interval: 'raw', start: 0, end: 100, limit: 10 }).body),
      ).data.map((r: { temperature_c: number }) => r.temperature_c);
    expect(raw('!x')).toEqual([3]);
    expect(raw('!y')).toEqual([2]);
  });

  it('lets people write, correct and delete rows through the readings view', () => {
    const { db } = hub();
    db.prepare(
      "INSERT INTO readings (node_id, ts, temperature_c, pressure_pa) VALUES ('!b', 5, 20.5, 99999.9)",
    ).run();
    db.prepare("UPDATE readings SET temperature_c = 21.25 WHERE node_id = '!b' AND ts = 5").run();
    expect(db.prepare('SELECT temperature_c, pressure_pa FROM readings').raw(true).get()).toEqual([
      21.25, 99_999.9,
    ]);
    expect(db.prepare('SELECT typeof(temperature_c) FROM reading_rows').pluck().get()).toBe('integer');
    db.prepare("DELETE FROM readings WHERE node_id = '!b'").run();
    expect(db.prepare('SELECT count(*) FROM reading_rows').pluck().get()).toBe(0);
  });
});
