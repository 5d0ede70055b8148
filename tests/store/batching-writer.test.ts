import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ReadingSource } from '../../src/domain/events.js';
import type { Reading } from '../../src/domain/reading.js';
import type { ReadingBatch } from '../../src/store/batching-writer.js';
import { BatchingWriter, type StoredReadings, WriterClosedError } from '../../src/store/batching-writer.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { memoryDb, reading, T0 } from './fixtures.js';

let db: Database;
let stored: Array<{ readings: Reading[]; sources: StoredReadings[] }>;
let errors: Error[];

beforeEach(() => {
  db = memoryDb();
  stored = [];
  errors = [];
});
afterEach(() => closeDatabase(db));

function makeWriter(options: { maxBatchRows?: number; maxDelayMs?: number } = {}): BatchingWriter {
  return new BatchingWriter({
    writer: new ReadingWriter(db),
    ...options,
    onStored: (readings, sources) => stored.push({ readings, sources }),
    onError: (error) => errors.push(error),
  });
}

function rows(nodeId: string, count: number, from = T0): Reading[] {
  return Array.from({ length: count }, (_, i) => reading(nodeId, from + i * 1_000, { temperatureC: i }));
}

function storedCount(): number {
  return db.prepare('SELECT count(*) FROM readings').pluck().get() as number;
}

/** A batch whose onCommitted records the call and how many rows were durable at that moment. */
function tracked(readings: Reading[], source: ReadingSource = 'mqtt') {
  const calls: Array<{ error: Error | undefined; rowsAtCall: number }> = [];
  const batch: ReadingBatch = {
    readings,
    source,
    onCommitted: (error) => calls.push({ error, rowsAtCall: storedCount() }),
  };
  return { batch, calls };
}

describe('BatchingWriter', () => {
  it('commits once maxBatchRows rows wait, and not before', () => {
    const writer = makeWriter({ maxBatchRows: 10, maxDelayMs: 60_000 });
    const a = tracked(rows('!a', 4));
    const b = tracked(rows('!b', 4));
    const c = tracked(rows('!c', 4));
    writer.enqueue(a.batch);
    writer.enqueue(b.batch);
    expect(storedCount()).toBe(0);
    expect(a.calls).toEqual([]);

    writer.enqueue(c.batch); // 12 waiting: one transaction of 10 now
    expect(storedCount()).toBe(10);
    expect(a.calls).toEqual([{ error: undefined, rowsAtCall: 10 }]);
    expect(b.calls).toEqual([{ error: undefined, rowsAtCall: 10 }]);
    expect(c.calls).toEqual([]); // 2 of its rows still wait
    expect(writer.stats.pendingRows).toBe(2);

    writer.flush();
    expect(c.calls).toEqual([{ error: undefined, rowsAtCall: 12 }]);
    writer.close();
  });

  it('commits maxDelayMs after the first row began waiting', async () => {
    vi.useFakeTimers();
    try {
      const writer = makeWriter({ maxBatchRows: 1000, maxDelayMs: 100 });
      const a = tracked(rows('!a', 3));
      writer.enqueue(a.batch);
      vi.advanceTimersByTime(60);
      writer.enqueue(tracked(rows('!b', 3)).batch); // does not restart the clock
      vi.advanceTimersByTime(39);
      expect(storedCount()).toBe(0);
      vi.advanceTimersByTime(1);
      expect(storedCount()).toBe(6);
      expect(a.calls).toEqual([{ error: undefined, rowsAtCall: 6 }]);
      writer.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('calls onCommitted only after the rows are durable, and onStored with what was new, by source', () => {
    const writer = makeWriter({ maxBatchRows: 100 });
    const first = rows('!a', 2);
    writer.enqueue({ readings: first, source: 'radio' });
    writer.flush();

    const replay = tracked(first, 'mqtt'); // the same packets through another gateway
    const fresh = tracked(rows('!b', 1), 'http');
    writer.enqueue(replay.batch);
    writer.enqueue(fresh.batch);
    writer.flush();

    expect(replay.calls).toEqual([{ error: undefined, rowsAtCall: 3 }]);
    expect(fresh.calls).toEqual([{ error: undefined, rowsAtCall: 3 }]);
    expect(stored).toEqual([
      { readings: first, sources: [{ source: 'radio', readings: first }] },
      { readings: fresh.batch.readings, sources: [{ source: 'http', readings: fresh.batch.readings }] },
    ]);
    writer.close();
  });

  it('caps rows per transaction: a huge batch is written in steps, acknowledged once at the end', async () => {
    const writer = makeWriter({ maxBatchRows: 10, maxDelayMs: 60_000 });
    const big = tracked(rows('!a', 35));
    writer.enqueue(big.batch);
    expect(storedCount()).toBe(10); // one transaction now; the rest after yielding to I/O
    expect(big.calls).toEqual([]);
    await vi.waitFor(() => expect(storedCount()).toBe(30));
    expect(big.calls).toEqual([]);
    writer.flush(); // the last 5 were waiting for the timer
    expect(big.calls).toEqual([{ error: undefined, rowsAtCall: 35 }]);
    expect(writer.stats.transactions).toBe(4);
    writer.close();
  });

  it('isolates a failing batch: the others commit, the failing one hears about it once', () => {
    db.exec(
      "CREATE TRIGGER boom BEFORE INSERT ON reading_rows WHEN NEW.node_key = (SELECT node_key FROM reading_nodes WHERE node_id = '!boom') BEGIN SELECT RAISE(ABORT, 'boom'); END",
    );
    const writer = makeWriter({ maxBatchRows: 100 });
    const good1 = tracked(rows('!a', 3));
    const bad = tracked([...rows('!x', 2), ...rows('!boom', 1)]);
    const good2 = tracked(rows('!b', 3), 'radio');
    writer.enqueue(good1.batch);
    writer.enqueue(bad.batch);
    writer.enqueue(good2.batch);
    writer.flush();

    expect(good1.calls).toEqual([{ error: undefined, rowsAtCall: 6 }]);
    expect(good2.calls).toEqual([{ error: undefined, rowsAtCall: 6 }]);
    expect(bad.calls).toHaveLength(1);
    expect(bad.calls[0]!.error?.message).toMatch(/boom/);
    expect(errors.map((e) => e.message)).toEqual(['boom']);
    expect(writer.stats.failedBatches).toBe(1);
    expect(stored.flatMap((s) => s.sources.map((x) => x.source))).toEqual(['mqtt', 'radio']);
    writer.close();
  });

  it('a throwing callback is reported and does not stop the writer', () => {
    const writer = makeWriter({ maxBatchRows: 100 });
    writer.enqueue({
      readings: rows('!a', 1),
      source: 'http',
      onCommitted: () => {
        throw new Error('client went away');
      },
    });
    const next = tracked(rows('!b', 1));
    writer.enqueue(next.batch);
    writer.flush();
    expect(errors.map((e) => e.message)).toEqual(['client went away']);
    expect(next.calls).toHaveLength(1);
    writer.close();
  });

  it('close flushes what waits, stops the timer, and refuses later batches', () => {
    vi.useFakeTimers();
    try {
      const writer = makeWriter({ maxBatchRows: 100, maxDelayMs: 100 });
      const waiting = tracked(rows('!a', 2));
      writer.enqueue(waiting.batch);
      writer.close();
      expect(waiting.calls).toEqual([{ error: undefined, rowsAtCall: 2 }]);
      expect(vi.getTimerCount()).toBe(0);

      const late = tracked(rows('!b', 1));
      writer.enqueue(late.batch);
      expect(late.calls).toHaveLength(1);
      expect(late.calls[0]!.error).toBeInstanceOf(WriterClosedError);
      expect(storedCount()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('acknowledges an empty batch at once', () => {
    const writer = makeWriter();
    const empty = tracked([]);
    writer.enqueue(empty.batch);
    expect(empty.calls).toEqual([{ error: undefined, rowsAtCall: 0 }]);
    writer.close();
  });
});
