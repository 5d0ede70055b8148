/**
 * The hub's timing primitives, so every pause, drain wait and deadline clears its timer and
 * its listeners the same way.
 */
import type { Writable } from 'node:stream';

/**
 * Resolves after `ms`, or at once when `signal` aborts (or already has). It never rejects:
 * a caller that must not go on after an abort checks `signal.aborted`.
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * `promise`, or a rejection with `makeError()` after `ms`; the timer is cleared either way.
 * `unref`: the wait alone does not keep the process alive (a bus ask nobody answers).
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  makeError: () => Error,
  options: { unref?: boolean } = {},
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(makeError()), ms);
    if (options.unref) timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class DrainTimeoutError extends Error {
  override readonly name = 'DrainTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`the stream did not drain within ${timeoutMs} ms`);
  }
}

export class StreamClosedError extends Error {
  override readonly name = 'StreamClosedError';
  constructor() {
    super('the stream closed before it drained');
  }
}

export interface DrainErrors {
  timeout?: (timeoutMs: number) => Error;
  closed?: () => Error;
}

/**
 * After a `write()` returned false: resolves on 'drain'; rejects when the stream closes first
 * (`StreamClosedError`) or after `timeoutMs` (`DrainTimeoutError`), unless `errors` names
 * others. `timeoutMs` Infinity waits without a bound, for a peer that has its own liveness
 * check.
 */
export function waitForDrain(stream: Writable, timeoutMs: number, errors: DrainErrors = {}): Promise<void> {
  if (stream.destroyed) return Promise.reject(errors.closed?.() ?? new StreamClosedError());
  if (!stream.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      stream.off('drain', onDrain);
      stream.off('close', onClose);
    };
    const onDrain = () => {
      settle();
      resolve();
    };
    const onClose = () => {
      settle();
      reject(errors.closed?.() ?? new StreamClosedError());
    };
    const timer =
      timeoutMs === Number.POSITIVE_INFINITY
        ? undefined
        : setTimeout(() => {
            settle();
            reject(errors.timeout?.(timeoutMs) ?? new DrainTimeoutError(timeoutMs));
          }, timeoutMs);
    stream.on('drain', onDrain);
    stream.on('close', onClose);
  });
}
