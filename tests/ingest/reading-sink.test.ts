/** Handing readings to the writer and waiting for the commit: group commit, failures, timeouts. */
import { describe, expect, it } from 'vitest';
import type { HubEvents, ReadingBatch } from '../../src/events.js';
import { busReadingSink, CommitTimeoutError, WriterUnavailableError } from '../../src/ingest/reading-sink.js';
import { Bus } from '../../src/kernel/bus.js';

const reading = (t: number) => ({ nodeId: 'n', timestamp: t, temperatureC: 1 });
const turn = () => new Promise((r) => setImmediate(r));

function bus() {
  const b = new Bus<HubEvents>();
  const received: ReadingBatch[] = [];
  b.on('test', 'reading.received', (batch) => received.push(batch));
  return { bus: b as never, received };
}

describe('busReadingSink', () => {
  it('hands what one turn submitted to the writer as one batch per source, then asks for a commit', async () => {
    let commits = 0;
    const { bus: b, received } = bus();
    const sink = busReadingSink({ bus: b, commitNow: () => void commits++ });
    const a = sink.submit([reading(1)], 'mqtt');
    const c = sink.submit([reading(2), reading(3)], 'mqtt');
    const h = sink.submit([reading(4)], 'http');
    expect(received).toHaveLength(0);
    await turn();
    expect(received.map((r) => [r.source, r.readings.map((x) => x.timestamp)])).toEqual([
      ['mqtt', [1, 2, 3]],
      ['http', [4]],
    ]);
    await turn();
    expect(commits).toBe(1);
    received[0]!.onCommitted?.();
    received[1]!.onCommitted?.(new Error('disk I/O error'));
    await expect(a).resolves.toBeUndefined();
    await expect(c).resolves.toBeUndefined();
    await expect(h).rejects.toThrow('disk I/O error');
  });

  it('holds deferred submissions until one that is not, or commitSoon', async () => {
    const { bus: b, received } = bus();
    const sink = busReadingSink({ bus: b });
    void sink.submit([reading(1)], 'http', { defer: true });
    await turn();
    expect(received).toHaveLength(0);
    void sink.submit([reading(2)], 'http');
    await turn();
    expect(received.map((r) => r.readings.length)).toEqual([2]);
    void sink.submit([reading(3)], 'http', { defer: true });
    sink.commitSoon?.();
    await turn();
    expect(received.map((r) => r.readings.length)).toEqual([2, 1]);
  });

  it('hands a deferred submission over on its own when nothing follows', async () => {
    const { bus: b, received } = bus();
    const sink = busReadingSink({ bus: b });
    void sink.submit([reading(1)], 'http', { defer: true });
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toHaveLength(1);
  });

  it('rejects at once when no writer listens, and after the timeout when none answers', async () => {
    await expect(
      busReadingSink({ bus: new Bus<HubEvents>() as never }).submit([reading(1)], 'mqtt'),
    ).rejects.toBeInstanceOf(WriterUnavailableError);
    const { bus: b } = bus();
    await expect(
      busReadingSink({ bus: b, timeoutMs: 50 }).submit([reading(1)], 'mqtt'),
    ).rejects.toBeInstanceOf(CommitTimeoutError);
  });
});
