/** The CSV is what the charts show: the same rows, the same values in the units on the axes. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chartSeries, summarise } from '../../src/web/src/lib/chart-series.js';
import { csvFileName, historyCsv, toCsv } from '../../src/web/src/lib/csv.js';
import { METRICS, type ReadingJson } from '../../src/web/src/lib/metrics.js';
import { parseCsv } from '../helpers/csv.js';

const rows: ReadingJson[] = [
  { node_id: '!a1b2c3d4', timestamp: '2026-11-21T10:00:00.000Z', temperature_c: 21.5, pressure_pa: 101325 },
  { node_id: '!a1b2c3d4', timestamp: '2026-11-21T10:05:00.000Z', temperature_c: -3.25 },
  { node_id: '!a1b2c3d4', timestamp: '2026-11-21T10:10:00.000Z', pressure_pa: 101320.1 },
];

describe('the history CSV', () => {
  it('has one row per charted point, in display units, with empty cells for missing values', () => {
    const series = chartSeries(rows, METRICS);
    expect(series.present.map((m) => m.key)).toEqual(['temperature_c', 'pressure_pa']);
    expect(parseCsv(historyCsv(rows, series.present))).toEqual([
      ['timestamp', 'temperature_c', 'pressure_hpa'],
      ['2026-11-21T10:00:00.000Z', '21.5', '1013.25'],
      ['2026-11-21T10:05:00.000Z', '-3.25', ''],
      ['2026-11-21T10:10:00.000Z', '', '1013.201'],
    ]);
  });

  it('quotes any field so that it reads back unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string(), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }),
        (table) => {
          const width = table[0]!.length;
          const square = table.map((r) => Array.from({ length: width }, (_, i) => r[i] ?? ''));
          expect(parseCsv(toCsv(square))).toEqual(square);
        },
      ),
    );
  });

  it('names the file after the node, the range and the interval, with no characters a file system refuses', () => {
    expect(csvFileName('!a1b2c3d4', Date.UTC(2026, 10, 20, 10), Date.UTC(2026, 10, 21, 10), 'raw')).toBe(
      'meshhub-!a1b2c3d4-2026-11-20T10-00Z-2026-11-21T10-00Z-raw.csv',
    );
    expect(csvFileName('../x:y', 0, 1, '1h')).toMatch(/^meshhub-___x_y-/);
  });
});

describe('chart series', () => {
  it('breaks the line where readings stop for much longer than usual', () => {
    const minutes = [0, 5, 10, 15, 120, 125];
    const data = minutes.map((m) => ({
      node_id: 'n',
      timestamp: new Date(m * 60_000).toISOString(),
      temperature_c: m,
    }));
    const series = chartSeries(data, METRICS);
    expect(series.y.temperature_c).toEqual([0, 5, 10, 15, null, 120, 125]);
    expect(series.x).toHaveLength(7);
    expect(summarise(series.y.temperature_c!)).toEqual({ min: 0, max: 125, last: 125 });
    expect(summarise([null, null])).toBeUndefined();
  });
});
