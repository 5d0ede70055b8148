import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  DrainTimeoutError,
  pause,
  StreamClosedError,
  waitForDrain,
  withTimeout,
} from '../../src/kernel/timing.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Settles `promise` into a readable state without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { done: boolean; value?: T; error?: unknown } = { done: false };
  promise.then(
    (value) => Object.assign(state, { done: true, value }),
    (error: unknown) => Object.assign(state, { done: true, error }),
  );
  return state;
}

/** A writable that holds every chunk until `release()`, so one write fills it. */
function stuckWritable() {
  const held: Array<() => void> = [];
  const stream = new Writable({
    highWaterMark: 1,
    write(_chunk, _encoding, callback) {
      held.push(callback);
    },
  });
  stream.on('error', () => {});
  const full = !stream.write('x');
  const release = () => {
    for (const callback of held.splice(0)) callback();
  };
  return { stream, full, release };
}

describe('pause', () => {
  it('resolves after its time and not before, leaving no timer', async () => {
    const p = track(pause(100));
    await vi.advanceTimersByTimeAsync(99);
    expect(p.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(p).toEqual({ done: true, value: undefined });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves at once when its signal aborts, and clears its timer', async () => {
    const abort = new AbortController();
    const p = track(pause(60_000, abort.signal));
    await vi.advanceTimersByTimeAsync(10);
    expect(p.done).toBe(false);
    abort.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(p).toEqual({ done: true, value: undefined });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not wait at all on a signal that has already aborted', async () => {
    const p = track(pause(60_000, AbortSignal.abort()));
    await vi.advanceTimersByTimeAsync(0);
    expect(p.done).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('withTimeout', () => {
  it('passes the value through and clears its timer', async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000, () => new Error('late'))).resolves.toBe(7);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('passes a rejection through and clears its timer', async () => {
    const failing = withTimeout(Promise.reject(new Error('no')), 1_000, () => new Error('late'));
    await expect(failing).rejects.toThrow('no');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('rejects with the made error at the deadline, not before', async () => {
    const made = new Error('took too long');
    const p = track(withTimeout(new Promise(() => {}), 500, () => made));
    await vi.advanceTimersByTimeAsync(499);
    expect(p.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(p).toEqual({ done: true, error: made });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('waitForDrain', () => {
  it('resolves on drain and leaves no timer or listener', async () => {
    const { stream, full, release } = stuckWritable();
    expect(full).toBe(true);
    const p = track(waitForDrain(stream, 1_000));
    await vi.advanceTimersByTimeAsync(999);
    expect(p.done).toBe(false);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(p).toEqual({ done: true, value: undefined });
    expect(vi.getTimerCount()).toBe(0);
    expect(stream.listenerCount('drain')).toBe(0);
    expect(stream.listenerCount('close')).toBe(0);
  });

  it('rejects with DrainTimeoutError at the deadline, not before', async () => {
    const { stream } = stuckWritable();
    const p = track(waitForDrain(stream, 1_000));
    await vi.advanceTimersByTimeAsync(999);
    expect(p.done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(p.error).toBeInstanceOf(DrainTimeoutError);
    expect((p.error as Error).message).toBe('the stream did not drain within 1000 ms');
    expect(stream.listenerCount('drain')).toBe(0);
  });

  it('rejects with StreamClosedError when the stream closes first', async () => {
    const { stream } = stuckWritable();
    const p = track(waitForDrain(stream, 1_000));
    stream.destroy();
    await vi.advanceTimersByTimeAsync(0);
    expect(p.error).toBeInstanceOf(StreamClosedError);
    expect(vi.getTimerCount()).toBe(0);
    await expect(waitForDrain(stream, 1_000)).rejects.toBeInstanceOf(StreamClosedError);
  });

  it('uses the errors it is given', async () => {
    const { stream } = stuckWritable();
    const timedOut = track(waitForDrain(stream, 10, { timeout: (ms) => new Error(`stuck ${ms}`) }));
    await vi.advanceTimersByTimeAsync(10);
    expect((timedOut.error as Error).message).toBe('stuck 10');
    const closed = track(waitForDrain(stream, 10, { closed: () => new Error('gone') }));
    stream.destroy();
    await vi.advanceTimersByTimeAsync(0);
    expect((closed.error as Error).message).toBe('gone');
  });

  it('waits without a bound when told Infinity', async () => {
    const { stream, release } = stuckWritable();
    const p = track(waitForDrain(stream, Number.POSITIVE_INFINITY));
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(p.done).toBe(false);
    release();
    await vi.advanceTimersByTimeAsync(0);
    expect(p.done).toBe(true);
  });

  it('resolves at once when the stream needs no drain', async () => {
    const stream = new Writable({ write: (_c, _e, cb) => cb() });
    await expect(waitForDrain(stream, 1_000)).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });
});
