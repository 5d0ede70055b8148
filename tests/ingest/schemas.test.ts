/**
 * The ingest body schema (src/ingest/schemas.ts, for the API document) and the hand-written
 * validator the route and the MQTT topic use (reading-input.ts) accept exactly the same readings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateReadings } from '../../src/ingest/reading-input.js';
import { ingestBodySchema, ingestReadingSchema } from '../../src/ingest/schemas.js';

const validatorAccepts = (item: unknown) =>
  validateReadings([item], { nowMs: Date.now(), array: false }).accepted === 1;

const now = () => new Date().toISOString();
const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();

const REPRESENTATIVE: Array<[string, unknown]> = [
  ['one metric', { node_id: '!a1b2c3d4', temperature_c: 21.5 }],
  [
    'every metric',
    {
      node_id: 'greenhouse.1',
      timestamp: '2025-05-01T02:00:00+02:00',
      temperature_c: -12,
      humidity_percent: 100,
      pressure_pa: 101_325,
      wind_speed_ms: 0,
      wind_direction: 360,
      pm25_ugm3: 2000,
      pm10_ugm3: 0,
      gas_resistance_kohm: 100_000,
    },
  ],
  [
    'minute precision and lower-case z',
    { node_id: 'a', timestamp: '2025-05-01T00:00z', humidity_percent: 1 },
  ],
  ['no metric', { node_id: 'a' }],
  ['no node_id', { temperature_c: 1 }],
  ['node_id with a slash', { node_id: 'a/b', temperature_c: 1 }],
  ['node_id too long', { node_id: 'x'.repeat(65), temperature_c: 1 }],
  ['unknown field', { node_id: 'a', temprature_c: 1 }],
  ['a string metric', { node_id: 'a', temperature_c: '21' }],
  ['null metric', { node_id: 'a', temperature_c: null }],
  ['fractional wind direction', { node_id: 'a', wind_direction: 90.5 }],
  ['pressure in hPa', { node_id: 'a', pressure_pa: 1013 }],
  ['humidity over 100', { node_id: 'a', humidity_percent: 100.1 }],
  ['humidity below 0', { node_id: 'a', humidity_percent: -0.5 }],
  ['temperature below -100', { node_id: 'a', temperature_c: -100.5 }],
  ['temperature at -100', { node_id: 'a', temperature_c: -100 }],
  ['date only', { node_id: 'a', timestamp: '2025-05-01', temperature_c: 1 }],
  ['no offset', { node_id: 'a', timestamp: '2025-05-01T00:00:00', temperature_c: 1 }],
  ['30 February', { node_id: 'a', timestamp: '2025-02-30T00:00:00Z', temperature_c: 1 }],
  ['before 2000', { node_id: 'a', timestamp: '1999-12-31T23:59:59Z', temperature_c: 1 }],
  ['six minutes ahead', { node_id: 'a', timestamp: ahead(360_000), temperature_c: 1 }],
  ['four minutes ahead', { node_id: 'a', timestamp: ahead(240_000), temperature_c: 1 }],
  [
    'an hour ahead',
    { node_id: 'a', timestamp: new Date(Date.now() + 3_600_000).toISOString(), temperature_c: 1 },
  ],
  ['now', { node_id: 'a', timestamp: now(), temperature_c: 1 }],
  ['a number', 42],
  ['an array', [{ node_id: 'a', temperature_c: 1 }]],
  ['null', null],
];

describe('ingestReadingSchema and validateReadings', () => {
  it.each(REPRESENTATIVE)('agree on %s', (_name, item) => {
    expect(ingestReadingSchema.safeParse(item).success).toBe(validatorAccepts(item));
  });

  it('agree on generated readings (property)', () => {
    const value = fc.oneof(
      fc.double({ min: -200, max: 200_000, noNaN: true }),
      fc.integer({ min: -10, max: 400 }),
      fc.constantFrom('1', null, true, '2025-05-01T00:00:00Z', now()),
    );
    const key = fc.constantFrom(
      'node_id',
      'timestamp',
      'temperature_c',
      'humidity_percent',
      'pressure_pa',
      'wind_direction',
      'pm10_ugm3',
      'x',
    );
    fc.assert(
      fc.property(fc.dictionary(key, value), fc.option(fc.stringMatching(/^[a-z!:/ ]{0,6}$/)), (item, id) => {
        const reading = id === null ? item : { ...item, node_id: id };
        expect(ingestReadingSchema.safeParse(reading).success).toBe(validatorAccepts(reading));
      }),
      { numRuns: 500 },
    );
  });

  it('the body is one reading or a batch of 1 to 10000', () => {
    const one = { node_id: 'a', temperature_c: 1 };
    expect(ingestBodySchema.safeParse(one).success).toBe(true);
    expect(ingestBodySchema.safeParse([one, one]).success).toBe(true);
    expect(ingestBodySchema.safeParse([]).success).toBe(false);
    expect(ingestBodySchema.safeParse(Array.from({ length: 10_001 }, () => one)).success).toBe(false);
  });
});
