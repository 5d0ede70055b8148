/**
 * What `POST /api/sync/v1/batches` takes of readings (sync/protocol.ts): `readings` rows checked
 * by the hand-written loop exactly as strictly as a schema would (tuple of 10, node id by the
 * ingest's rule, ts an integer ms a Date holds, finite numbers or null, 1..1000 rows), a record
 * standing for a run of entries (`through`) only for readings and only as long as its rows, and
 * every count and sequence number bounded by the INTEGER column it goes to.
 */
import { describe, expect, it } from 'vitest';
import {
  batchCoverageProblem,
  batchSchema,
  MAX_INT4,
  MAX_READINGS_ROWS,
  readingRowsProblem,
  rollupBody,
  syncRecordSchema,
} from '../../../sync/protocol.js';
import { hourRollupBody } from '../helpers/records.js';

const T0 = Date.UTC(2026, 2, 10, 8, 0);
const ok = (): unknown[] => ['!0000000a', T0, 20.5, null, 101_325, null, 270, null, null, 1e-300];

describe('readings rows', () => {
  it('takes rows of a node id, an integer time and 8 finite numbers or nulls', () => {
    expect(readingRowsProblem([ok()])).toBeUndefined();
    expect(readingRowsProblem([['roof-1', 0, ...Array(8).fill(null)]])).toBeUndefined();
    expect(readingRowsProblem([['A.b_c:d-e!9', -8.64e15, ...Array(8).fill(-0)]])).toBeUndefined();
    expect(readingRowsProblem(Array.from({ length: MAX_READINGS_ROWS }, ok))).toBeUndefined();
  });

  it.each([
    ['not an array', 'rows', [], 'expected an array of reading rows'],
    ['no rows', [], [], `expected 1 to ${MAX_READINGS_ROWS} rows, got 0`],
    [
      'too many rows',
      Array.from({ length: MAX_READINGS_ROWS + 1 }, ok),
      [],
      `expected 1 to ${MAX_READINGS_ROWS} rows, got 1001`,
    ],
    ['a row of 9', [ok().slice(0, 9)], [0], 'expected a row of 10 values'],
    ['a row of 11', [[...ok(), null]], [0], 'expected a row of 10 values'],
    ['a row that is an object', [{ 0: 'x' }], [0], 'expected a row of 10 values'],
    [
      'a node id with a space',
      [['roof 1', ...ok().slice(1)]],
      [0, 0],
      'a reading node id: 1–64 letters, digits and "! . _ : -"',
    ],
    [
      'an empty node id',
      [['', ...ok().slice(1)]],
      [0, 0],
      'a reading node id: 1–64 letters, digits and "! . _ : -"',
    ],
    [
      'a node id of 65',
      [['x'.repeat(65), ...ok().slice(1)]],
      [0, 0],
      'a reading node id: 1–64 letters, digits and "! . _ : -"',
    ],
    [
      'a number for a node id',
      [[7, ...ok().slice(1)]],
      [0, 0],
      'a reading node id: 1–64 letters, digits and "! . _ : -"',
    ],
    [
      'a fractional time',
      [['!0000000a', T0 + 0.5, ...ok().slice(2)]],
      [0, 1],
      'expected an integer time in ms a Date can hold',
    ],
    [
      'a time past a Date',
      [['!0000000a', 8.64e15 + 1, ...ok().slice(2)]],
      [0, 1],
      'expected an integer time in ms a Date can hold',
    ],
    [
      'a time as a string',
      [['!0000000a', String(T0), ...ok().slice(2)]],
      [0, 1],
      'expected an integer time in ms a Date can hold',
    ],
    [
      'a value as a string',
      [[...ok().slice(0, 4), '1', ...ok().slice(5)]],
      [0, 4],
      'expected a finite number or null',
    ],
    [
      'an infinite value',
      [[...ok().slice(0, 9), Number.POSITIVE_INFINITY]],
      [0, 9],
      'expected a finite number or null',
    ],
    [
      'NaN',
      [[...ok().slice(0, 2), Number.NaN, ...ok().slice(3)]],
      [0, 2],
      'expected a finite number or null',
    ],
    [
      'a value left out',
      [[...ok().slice(0, 3), undefined, ...ok().slice(4)]],
      [0, 3],
      'expected a finite number or null',
    ],
  ])('refuses %s, naming where', (_what, rows, path, message) => {
    expect(readingRowsProblem(rows)).toEqual({ path, message });
  });

  it('finds a bad node id in any row, also after rows of ids it checked before', () => {
    const rows = [ok(), ok(), ['bad id', ...ok().slice(1)], ok()];
    expect(readingRowsProblem(rows)).toMatchObject({ path: [2, 0] });
    const parsed = syncRecordSchema.safeParse({ seq: 1, kind: 'readings', at: T0, body: { rows } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.path.join('.'))).toEqual(['body.rows.2.0']);
  });

  it('a readings body takes nothing but its rows', () => {
    expect(
      syncRecordSchema.safeParse({ seq: 1, kind: 'readings', at: T0, body: { rows: [ok()] } }).success,
    ).toBe(true);
    const extra = syncRecordSchema.safeParse({
      seq: 1,
      kind: 'readings',
      at: T0,
      body: { rows: [ok()], more: 1 },
    });
    expect(extra.success).toBe(false);
  });
});

describe('records standing for a run of entries', () => {
  const record = (through: number | undefined, rows: number, kind = 'readings') => ({
    seq: 10,
    at: T0,
    kind,
    ...(through === undefined ? {} : { through }),
    body: kind === 'readings' ? { rows: Array.from({ length: rows }, ok) } : { interval: '1h' },
  });

  it('a readings record may stand for entries seq..through, one row each at least', () => {
    expect(syncRecordSchema.parse(record(12, 3))).toMatchObject({ seq: 10, through: 12 });
    expect(syncRecordSchema.parse(record(10, 1))).toMatchObject({ through: 10 });
    for (const [through, rows] of [
      [13, 3], // more entries than rows
      [9, 3], // backwards
    ] as const) {
      const parsed = syncRecordSchema.safeParse(record(through, rows));
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues[0]?.path).toEqual(['through']);
    }
    const node = syncRecordSchema.safeParse({ ...record(undefined, 0, 'node'), through: 10 });
    expect(node.success).toBe(false);
  });

  it('covers its run in the batch: no gap, no overlap', () => {
    const batch = (records: { seq: number; through?: number }[], dropped: [number, number][] = []) => ({
      first_seq: 10,
      last_seq: 15,
      records,
      dropped,
    });
    expect(batchCoverageProblem(batch([{ seq: 10, through: 12 }, { seq: 13 }], [[14, 15]]))).toBeUndefined();
    expect(batchCoverageProblem(batch([{ seq: 10, through: 12 }, { seq: 12 }], [[13, 15]]))).toBe(
      'sequence 12 appears twice',
    );
    expect(batchCoverageProblem(batch([{ seq: 10, through: 11 }, { seq: 13 }], [[14, 15]]))).toBe(
      'sequence 12 is missing',
    );
    const parsed = batchSchema.safeParse({
      protocol: 1,
      site_id: 'north',
      first_seq: 10,
      last_seq: 12,
      records: [record(11, 2)],
      dropped: [],
      sent_at: T0,
    });
    expect(parsed.error?.issues.map((i) => i.message)).toEqual(['sequence 12 is missing']);
  });
});

describe('values bound for INTEGER columns', () => {
  it('bounds rollup counts and transition numbers by what an INTEGER holds', () => {
    const rollup = (count: number) =>
      rollupBody.safeParse(
        hourRollupBody('roof-1', T0, { temperature_c_sum: 1, temperature_c_count: count }),
      );
    expect(rollup(MAX_INT4).success).toBe(true);
    expect(rollup(MAX_INT4 + 1).success).toBe(false);
    const transition = (seq: number) =>
      syncRecordSchema.safeParse({
        seq: 1,
        at: T0,
        kind: 'message_transition',
        body: {
          message_id: '01950000-0000-7000-8000-000000000001',
          seq,
          status: 'sent',
          reason: null,
          at: T0,
        },
      });
    expect(transition(MAX_INT4).success).toBe(true);
    expect(transition(MAX_INT4 + 1).success).toBe(false);
  });
});
