/** Handing readings to the writer and waiting for the commit: group commit, failures, timeouts. */
import { describe, expect, it, vi } from 'vitest';
import type { HubBus, HubEvents, HubRequests, ReadingSource } from '../../src/domain/events.js';
import type { Reading } from '../../src/domain/reading.js';
import { busReadingSink, CommitTimeoutError, WriterUnavailableError } from '../../src/ingest/reading-sink.js';
import { Bus } from '../../src/kernel/bus.js';

const reading = (t: number) => ({ nodeId: 'n', timestamp: t, temperatureC: 1 });
const turn = () => new Promise((r) => setImmediate(r));

interface Asked {
  readings: Reading[];
  source: ReadingSource;
  urgent?: boolean;
  answer(error?: Error): void;
}

/** A bus whose `readings.commit` handler records each ask and lets the test answer it. */
function bus() {
  const b: HubBus = new Bus<HubEvents, HubRequests>();
  const asked: Asked[] = [];
  b.handle(
    'writer',
    'readings.commit',
    (request) =>
      new Promise<void>((resolve, reject) => {
        asked.push({ ...request, answer: (error) => (error ? reject(error) : resolve()) });
      }),
  );
  return { bus: b, asked };
}

describe('busReadingSink', () => {
  it('asks the writer once per source for what one turn submitted, urgently', async () => {
    const { bus: b, asked } = bus();
    const sink = busReadingSink({ bus: b });
    const a = sink.submit([reading(1)], 'mqtt');
    const c = sink.submit([reading(2), reading(3)], 'mqtt');
    const h = sink.submit([reading(4)], 'http');
    expect(asked).toHaveLength(0);
    await turn();
    await turn();
    expect(asked.map((r) => [r.source, r.urgent, r.readings.map((x) => x.timestamp)])).toEqual([
      ['mqtt', true, [1, 2, 3]],
      ['http', true, [4]],
    ]);
    asked[0]!.answer();
    asked[1]!.answer(new Error('disk I/O error'));
    await expect(a).resolves.toBeUndefined();
    await expect(c).resolves.toBeUndefined();
    await expect(h).rejects.toThrow('disk I/O error');
  });

  it('holds deferred submissions until one that is not, or commitSoon', async () => {
    const { bus: b, asked } = bus();
    const sink = busReadingSink({ bus: b });
    void sink.submit([reading(1)], 'http', { defer: true });
    await turn();
    await turn();
    expect(asked).toHaveLength(0);
    void sink.submit([reading(2)], 'http');
    await turn();
    await turn();
    expect(asked.map((r) => r.readings.length)).toEqual([2]);
    void sink.submit([reading(3)], 'http', { defer: true });
    sink.commitSoon?.();
    await turn();
    await turn();
    expect(asked.map((r) => r.readings.length)).toEqual([2, 1]);
  });

  it('hands a deferred submission over on its own when nothing follows', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      const { bus: b, asked } = bus();
      const sink = busReadingSink({ bus: b });
      void sink.submit([reading(1)], 'http', { defer: true });
      await turn();
      expect(asked).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(100);
      await turn();
      await turn();
      expect(asked).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects when no writer answers asks, and after the timeout when the writer never answers', async () => {
    await expect(busReadingSink({ bus: new Bus() }).submit([reading(1)], 'mqtt')).rejects.toBeInstanceOf(
      WriterUnavailableError,
    );
    const { bus: b } = bus();
    await expect(
      busReadingSink({ bus: b, timeoutMs: 50 }).submit([reading(1)], 'mqtt'),
    ).rejects.toBeInstanceOf(CommitTimeoutError);
  });
});
