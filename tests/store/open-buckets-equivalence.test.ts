/**
 * Issue 26, "open buckets in memory": whatever the writer keeps in memory and whenever it writes
 * it, every reader answers exactly what a model of the hub's rules gives (README "What the hub
 * stores"): raw rows filled field by field, each bucket's sums over the raw rows in it, each
 * field's latest value the newest one. The model was checked against the write-through writer
 * this replaced (the same property passed on it), so "the model" is "today's answers".
 *
 * The data is random and includes late and out-of-order readings, readings into closed buckets,
 * replays that fill fields of a stored row, clean stops, crashes (a writer dropped without its
 * stop: the next one must rebuild the open buckets from the raw rows) and stale-bucket sweeps.
 * Values sit on a grid of quarters and whole numbers, so every sum is exact in any order and the
 * answers can be compared byte for byte; wind directions are multiples of 90°, whose circular
 * means are never a half-degree tie.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { READING_METRICS, type Reading } from '../../src/domain/reading.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import {
  ACC_SIZE,
  accumulate,
  bucketStart,
  type RollupInterval,
  WIND_DIRECTION_SLOT,
} from '../../src/store/rollups.js';
import { bucketJson, EMPTY_BODY, readingJson } from '../../src/weather/weather-reads.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { DAY, memoryDb, T0 } from './fixtures.js';

const NODES = ['!a', '!b', '!c'];
const MINUTE = 60_000;
const SLOTS = READING_METRICS.length;
const SPAN = { start: T0 - 10 * DAY, end: T0 + 30 * DAY };

/** Metric values on an exact grid (quarters, halves, whole numbers; wind in steps of 90°). */
const METRIC_VALUE: fc.Arbitrary<number>[] = [
  fc.integer({ min: -160, max: 240 }).map((q) => q / 4),
  fc.integer({ min: 0, max: 400 }).map((q) => q / 4),
  fc.integer({ min: 90_000, max: 105_000 }),
  fc.integer({ min: 0, max: 160 }).map((q) => q / 4),
  fc.constantFrom(0, 90, 180, 270),
  fc.integer({ min: 0, max: 500 }),
  fc.integer({ min: 0, max: 500 }),
  fc.integer({ min: 0, max: 800 }).map((h) => h / 2),
];

interface Step {
  node: number;
  /** Minutes the clock moves on before this reading. */
  advance: number;
  /** Minutes back from the clock: a late reading (0: live). */
  back: number;
  values: (number | null)[];
}

const step: fc.Arbitrary<Step> = fc.record({
  node: fc.integer({ min: 0, max: NODES.length - 1 }),
  advance: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 1_500 })),
  back: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 3_000 }) },
  ),
  values: fc.tuple(...METRIC_VALUE.map((v) => fc.option(v, { nil: null, freq: 2 }))),
});

type Op =
  | { kind: 'write'; steps: Step[] }
  | { kind: 'stop' }
  | { kind: 'crash' }
  | { kind: 'sweep'; minutesAfterClock: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      steps: fc.array(step, { minLength: 1, maxLength: 12 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stop' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('sweep' as const),
      minutesAfterClock: fc.integer({ min: -120, max: 3_000 }),
    }),
  },
);

/** The hub's rules, over plain maps: raw rows by node and time. */
class Model {
  readonly raw = new Map<string, Map<number, (number | null)[]>>();

  write(r: Reading): void {
    const values = READING_METRICS.map((m) => (r[m] === undefined ? null : (r[m] as number)));
    const rows = this.raw.get(r.nodeId) ?? new Map<number, (number | null)[]>();
    this.raw.set(r.nodeId, rows);
    const row = rows.get(r.timestamp);
    if (!row) rows.set(r.timestamp, values);
    else for (let s = 0; s < SLOTS; s++) if (row[s] === null) row[s] = values[s]!;
  }

  private rows(nodeId: string): [number, (number | null)[]][] {
    return [...(this.raw.get(nodeId) ?? new Map()).entries()].sort((a, b) => a[0] - b[0]);
  }

  latest(nodeId: string): string | undefined {
    const rows = this.rows(nodeId);
    if (rows.length === 0) return undefined;
    const values: (number | null)[] = new Array(SLOTS).fill(null);
    for (const [, row] of rows) for (let s = 0; s < SLOTS; s++) if (row[s] !== null) values[s] = row[s]!;
    return readingJson(nodeId, rows[rows.length - 1]![0], values, 0);
  }

  rawBody(nodeId: string): string {
    return body(this.rows(nodeId).map(([ts, row]) => readingJson(nodeId, ts, row, 0)));
  }

  buckets(nodeId: string, interval: RollupInterval): string {
    const accs = new Map<number, number[]>();
    for (const [ts, row] of this.rows(nodeId)) {
      const start = bucketStart(ts, interval);
      const acc = accs.get(start) ?? new Array<number>(ACC_SIZE).fill(0);
      accs.set(start, acc);
      accumulate(acc, row);
    }
    return body(
      [...accs.entries()].map(([start, acc]) => {
        // The columns weather-reads.ts's bucketMeanColumns reads: means in slot order, then wind's sums.
        const means = READING_METRICS.map((_, slot) => {
          if (slot === WIND_DIRECTION_SLOT) return null;
          const at = (slot < WIND_DIRECTION_SLOT ? slot : slot - 1) * 2;
          return acc[at + 1] === 0 ? null : acc[at]! / acc[at + 1]!;
        });
        return bucketJson(nodeId, start, [start, ...means, ...acc.slice(ACC_SIZE - 3)], 1);
      }),
    );
  }
}

const body = (parts: string[]) => (parts.length === 0 ? EMPTY_BODY : `{"data":[${parts.join(',')}]}`);
const text = (b: string | Uint8Array) => (typeof b === 'string' ? b : Buffer.from(b).toString());

function toReading(nodeId: string, ts: number, values: (number | null)[]): Reading | undefined {
  const r: Reading = { nodeId, timestamp: ts };
  let any = false;
  values.forEach((v, slot) => {
    if (v === null) return;
    r[READING_METRICS[slot]!] = v;
    any = true;
  });
  return any ? r : undefined;
}

/** What every reader answers, node by node, against the model. */
function expectSameAnswers(service: WeatherService, model: Model): void {
  const latest = NODES.map((n) => model.latest(n)).filter((j): j is string => j !== undefined);
  expect(service.latestJson()).toBe(body(latest));
  for (const nodeId of NODES) {
    expect(service.latestJson(nodeId)).toBe(
      model.latest(nodeId) === undefined ? EMPTY_BODY : body([model.latest(nodeId)!]),
    );
    const q = { nodeId, ...SPAN, limit: 10_000 };
    expect(text(service.history({ ...q, interval: 'raw' }).body)).toBe(model.rawBody(nodeId));
    for (const interval of ['1h', '1d'] as const) {
      expect(text(service.history({ ...q, interval }).body), `${nodeId} ${interval}`).toBe(
        model.buckets(nodeId, interval),
      );
    }
  }
}

interface StoppableWriter {
  close?(): void;
  closeStale?(now: number): void;
}

function run(ops: Op[]): void {
  const db: Database = memoryDb();
  try {
    const model = new Model();
    let writer = new ReadingWriter(db);
    // One long-lived service told of every write (the hub's reading.stored), one made afresh:
    // the cache and a cold read must both agree with the model.
    const cached = new WeatherService({ db });
    let clock = T0;
    for (const o of ops) {
      if (o.kind === 'write') {
        const batch: Reading[] = [];
        for (const s of o.steps) {
          clock += s.advance * MINUTE;
          const r = toReading(NODES[s.node]!, clock - s.back * MINUTE, s.values);
          if (r) batch.push(r);
        }
        cached.invalidate(writer.write(batch));
        for (const r of batch) model.write(r);
      } else if (o.kind === 'stop') {
        (writer as StoppableWriter).close?.();
        writer = new ReadingWriter(db);
      } else if (o.kind === 'crash') {
        // Dropped without its stop: whatever it held in memory is gone.
        writer = new ReadingWriter(db);
        cached.invalidate();
      } else {
        (writer as StoppableWriter).closeStale?.(clock + o.minutesAfterClock * MINUTE);
      }
    }
    expectSameAnswers(cached, model);
    expectSameAnswers(new WeatherService({ db }), model);
    // After a crash at the very end, too.
    writer = new ReadingWriter(db);
    expectSameAnswers(new WeatherService({ db }), model);
  } finally {
    closeDatabase(db);
  }
}

describe('readings: what readers see is what the rules give, however the writer keeps it', () => {
  it('holds on random histories with late readings, replays, stops, crashes and sweeps', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => run(ops)),
      { numRuns: 150 },
    );
  });

  it('holds for a live node crossing hour and day boundaries, then a crash', () => {
    const live: Op[] = [];
    for (let i = 0; i < 60; i++) {
      live.push({
        kind: 'write',
        steps: [
          {
            node: 0,
            advance: 50,
            back: 0,
            values: [i / 4, null, 100_000 + i, null, 90 * (i % 4), null, null, null],
          },
        ],
      });
    }
    live.push({ kind: 'crash' });
    run(live);
  });
});
