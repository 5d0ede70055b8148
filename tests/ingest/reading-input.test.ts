/**
 * The JSON reading rules shared by the MQTT topic and the HTTP endpoint: every rule with the
 * exact problem a sensor gets, and properties over arbitrary input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { METRIC_API_NAMES, READING_METRICS } from '../../src/domain/reading.js';
import { LIMITS, parseIsoDateTime, payloadItems, validateReadings } from '../../src/ingest/reading-input.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const one = (item: unknown) => validateReadings([item], { nowMs: NOW, array: false });

describe('a single reading', () => {
  it('takes the spec fields, with the receive time when there is no timestamp', () => {
    const r = one({ node_id: '!a1b2c3d4', temperature_c: 0, humidity_percent: 100, wind_direction: 360 });
    expect(r.problems).toEqual([]);
    expect(r.readings).toEqual([
      { nodeId: '!a1b2c3d4', timestamp: NOW, temperatureC: 0, humidityPercent: 100, windDirection: 360 },
    ]);
  });

  it('reads a timestamp with Z or an offset', () => {
    expect(
      one({ node_id: 'n', timestamp: '2026-11-21T13:00:00+01:00', pm25_ugm3: 3 }).readings[0]!.timestamp,
    ).toBe(NOW);
    expect(
      one({ node_id: 'n', timestamp: '2026-11-21T12:00:00.250Z', pm25_ugm3: 3 }).readings[0]!.timestamp,
    ).toBe(NOW + 250);
  });

  it.each([
    ['2026-11-21', 'invalid_timestamp'],
    ['2026-11-21T12:00:00', 'invalid_timestamp'],
    ['2026-02-30T00:00:00Z', 'invalid_timestamp'],
    ['2026-11-21T24:00:00Z', 'invalid_timestamp'],
    [1732190400, 'invalid_timestamp'],
    ['2026-11-21T12:06:00Z', 'timestamp_in_future'],
    ['1999-12-31T23:59:59Z', 'timestamp_too_old'],
  ])('refuses timestamp %j (%s)', (timestamp, reason) => {
    const r = one({ node_id: 'n', timestamp, temperature_c: 1 });
    expect(r.readings).toEqual([]);
    expect(r.problems).toMatchObject([{ field: 'timestamp', reason }]);
  });

  it('allows 5 minutes of clock skew', () => {
    expect(one({ node_id: 'n', timestamp: '2026-11-21T12:05:00Z', temperature_c: 1 }).accepted).toBe(1);
  });

  it('needs a node_id of letters, digits and ! . _ : -', () => {
    expect(one({ temperature_c: 1 }).problems).toEqual([
      { index: 0, field: 'node_id', reason: 'missing_node_id', message: 'node_id is required' },
    ]);
    for (const bad of ['', 'a/b', 'a+b', 'a#', 'a b', 'x'.repeat(65), 7, null]) {
      expect(one({ node_id: bad, temperature_c: 1 }).problems[0]).toMatchObject({
        reason: 'invalid_node_id',
      });
    }
  });

  it('names every problem of a reading, and counts the reading once under its first', () => {
    const r = validateReadings(
      [{ node_id: 'n', temperature_c: 'hot', humidity_percent: -1, colour: 'red' }],
      { nowMs: NOW, array: true },
    );
    expect(r.rejected).toBe(1);
    expect(r.rejectedByReason).toEqual({ not_a_number: 1 });
    expect(r.problems).toEqual([
      {
        index: 0,
        field: '[0].temperature_c',
        reason: 'not_a_number',
        message: 'temperature_c must be a number in °C, got a string',
      },
      {
        index: 0,
        field: '[0].humidity_percent',
        reason: 'out_of_range',
        message: 'humidity_percent must be between 0 and 100 %',
      },
      { index: 0, field: '[0].colour', reason: 'unknown_field', message: 'unknown field "colour"' },
    ]);
  });

  it('needs at least one metric', () => {
    expect(one({ node_id: 'n', timestamp: '2026-11-21T12:00:00Z' }).problems[0]).toMatchObject({
      reason: 'no_metrics',
    });
  });

  it('takes each metric at its bounds and refuses it just past them', () => {
    for (const metric of READING_METRICS) {
      const name = METRIC_API_NAMES[metric];
      const { min, max } = LIMITS[metric];
      expect(one({ node_id: 'n', [name]: min }).accepted).toBe(1);
      expect(one({ node_id: 'n', [name]: max }).accepted).toBe(1);
      expect(one({ node_id: 'n', [name]: min - 1 }).problems[0]).toMatchObject({
        field: name,
        reason: 'out_of_range',
      });
      expect(one({ node_id: 'n', [name]: max + 1 }).problems[0]).toMatchObject({
        field: name,
        reason: 'out_of_range',
      });
      expect(one({ node_id: 'n', [name]: `${min}` }).problems[0]).toMatchObject({ reason: 'not_a_number' });
    }
    expect(one({ node_id: 'n', wind_direction: 90.5 }).problems[0]).toMatchObject({
      reason: 'not_an_integer',
    });
  });

  it('is not an object: a clear reason', () => {
    for (const item of [null, 3, 'text', [1]]) {
      expect(one(item).problems[0]).toMatchObject({ field: '(body)', reason: 'not_an_object' });
    }
  });
});

describe('payloads', () => {
  it('treats an object as a batch of one and an array as a batch', () => {
    expect(payloadItems({ a: 1 })).toEqual({ items: [{ a: 1 }], array: false });
    expect(payloadItems([1, 2])).toEqual({ items: [1, 2], array: true });
  });

  it('lists at most maxProblems problems and says so', () => {
    const items = Array.from({ length: 20 }, () => ({ node_id: 'n', temperature_c: 'x' }));
    const r = validateReadings(items, { nowMs: NOW, array: true, maxProblems: 5 });
    expect(r.rejected).toBe(20);
    expect(r.problems).toHaveLength(5);
    expect(r.problemsTruncated).toBe(true);
  });
});

describe('properties', () => {
  it('never throws; every item is counted; every accepted reading obeys the rules', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.anything(), fc.object()), { maxLength: 30 }), (items) => {
        const r = validateReadings(items, { nowMs: NOW, array: true });
        expect(r.accepted + r.rejected).toBe(items.length);
        expect(r.readings).toHaveLength(r.accepted);
        for (const reading of r.readings) {
          expect(reading.nodeId).toMatch(/^[A-Za-z0-9!._:-]{1,64}$/);
          for (const metric of READING_METRICS) {
            const v = reading[metric];
            if (v !== undefined) {
              expect(v).toBeGreaterThanOrEqual(LIMITS[metric].min);
              expect(v).toBeLessThanOrEqual(LIMITS[metric].max);
            }
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('accepts every reading built within the rules, values unchanged', () => {
    const metricArb = (metric: (typeof READING_METRICS)[number]) =>
      LIMITS[metric].integer
        ? fc.integer({ min: LIMITS[metric].min, max: LIMITS[metric].max })
        : fc.double({ min: LIMITS[metric].min, max: LIMITS[metric].max, noNaN: true });
    const reading = fc.record(
      Object.fromEntries(READING_METRICS.map((m) => [METRIC_API_NAMES[m], metricArb(m)])) as Record<
        string,
        fc.Arbitrary<number>
      >,
      { requiredKeys: ['temperature_c'] },
    );
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9!._:-]{1,64}$/),
        fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date(NOW), noInvalidDate: true }),
        reading,
        (nodeId, date, metrics) => {
          const r = one({ node_id: nodeId, timestamp: date.toISOString(), ...metrics });
          expect(r.problems).toEqual([]);
          expect(r.readings[0]).toMatchObject({ nodeId, timestamp: date.getTime() });
          for (const m of READING_METRICS) expect(r.readings[0]![m]).toBe(metrics[METRIC_API_NAMES[m]]);
        },
      ),
    );
  });

  it('parseIsoDateTime agrees with Date.parse on date-times with any offset and precision', () => {
    const two = (n: number) => String(n).padStart(2, '0');
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }),
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        fc.constantFrom('', ':SS', ':SS.f', ':SS.fff', ':SS.ffffff'),
        (d, offset, precision) => {
          const local = new Date(d.getTime() + offset * 60_000).toISOString();
          const seconds = precision.startsWith(':SS') ? local.slice(16, 19) : '';
          const millis = local.slice(20, 23);
          const fraction = {
            '': '',
            ':SS': '',
            ':SS.f': `.${millis[0]}`,
            ':SS.fff': `.${millis}`,
            ':SS.ffffff': `.${millis}123`,
          }[precision];
          const zone = `${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
          const text = `${local.slice(0, 16)}${seconds}${fraction}${zone}`;
          expect(parseIsoDateTime(text)).toBe(Date.parse(text));
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('parseIsoDateTime refuses what is not a date-time with a zone, and never throws', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (text) => {
        const ms = parseIsoDateTime(text);
        if (ms !== undefined) expect(ms).toBe(Date.parse(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('parseIsoDateTime agrees with Date.parse on every valid ISO string', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('1970-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }),
        (d) => {
          expect(parseIsoDateTime(d.toISOString())).toBe(d.getTime());
        },
      ),
    );
  });
});
