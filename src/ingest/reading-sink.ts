/**
 * Hands readings to the one writer and resolves once they are committed (DESIGN.md "Data
 * flows" 1: an MQTT QoS 1 PUBACK and an HTTP 202 go out only after the commit).
 *
 * Group commit: a sender waiting for durability should not wait out the writer's batching
 * delay. Readings submitted during one event-loop turn — from every connection — are gathered,
 * and on the next turn (setImmediate) handed to the writer as one batch per source, which is
 * then asked to commit at once (`commitNow`). The busier the hub, the bigger the transactions;
 * an idle hub commits a lone reading at once. One batch per turn instead of one per message
 * also keeps the per-message cost down (a publish costs the writer a row, not a batch).
 * A failed commit fails every submission of its batch (each sender then sends again).
 */
import type { HubBus, ReadingSource } from '../events.js';
import type { Reading } from '../weather/reading.js';

export class CommitTimeoutError extends Error {
  override readonly name = 'CommitTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`the readings were not committed within ${timeoutMs} ms`);
  }
}

export class WriterUnavailableError extends Error {
  override readonly name = 'WriterUnavailableError';
  constructor() {
    super('the reading writer is not running');
  }
}

export interface ReadingSink {
  /**
   * Resolves when the readings are committed; rejects when the commit failed or timed out.
   * `defer`: more readings are on their way (other requests are being received): leave the
   * hand-over to the last of them (or to `commitSoon`), so they share one transaction.
   */
  submit(readings: Reading[], source: ReadingSource, options?: { defer?: boolean }): Promise<void>;
  /** Hands over what was submitted with `defer`. */
  commitSoon?(): void;
}

export interface BusReadingSinkOptions {
  bus: HubBus;
  /** Commits what the writer holds now; without it the writer's own batching delay applies. */
  commitNow?: () => void | Promise<void>;
  onCommitError?: (error: unknown) => void;
  /**
   * Bound on the wait for a commit: a writer that is stopped or has dropped the batch never
   * answers, and a sender must not wait forever. Default 30 s.
   */
  timeoutMs?: number;
}

/**
 * The readings of one source gathered in one turn, and the one promise every submission of them
 * shares: at tens of thousands of messages a second, a promise (and a timeout) per message
 * would cost more than the message.
 */
interface Gathered {
  readings: Reading[];
  committed: Promise<void>;
  deadline: number;
  resolve(): void;
  reject(error: Error): void;
}

/** The longest a deferred submission waits for the ones it defers to. */
const DEFER_LIMIT_MS = 100;

export function busReadingSink(options: BusReadingSinkOptions): ReadingSink {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const gathered = new Map<ReadingSource, Gathered>();
  let handOverScheduled = false;
  let fallback: NodeJS.Timeout | undefined;
  // Groups waiting for their commit, oldest first, swept by one timer.
  const waiting = new Set<Gathered>();
  let sweeper: NodeJS.Timeout | undefined;

  const settle = (group: Gathered, error?: Error) => {
    if (!waiting.delete(group)) return;
    if (error) group.reject(error);
    else group.resolve();
  };

  const sweep = () => {
    const now = Date.now();
    for (const group of waiting) {
      if (group.deadline > now) break;
      settle(group, new CommitTimeoutError(timeoutMs));
    }
    if (waiting.size === 0) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  };

  const gather = (source: ReadingSource): Gathered => {
    let resolve!: () => void;
    let reject!: (error: Error) => void;
    const committed = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const group: Gathered = { readings: [], committed, deadline: Date.now() + timeoutMs, resolve, reject };
    gathered.set(source, group);
    waiting.add(group);
    if (!sweeper) {
      sweeper = setInterval(sweep, Math.min(1_000, timeoutMs));
      sweeper.unref();
    }
    return group;
  };

  const handOver = () => {
    handOverScheduled = false;
    clearTimeout(fallback);
    fallback = undefined;
    for (const [source, group] of gathered) {
      options.bus.emit('reading.received', {
        readings: group.readings,
        source,
        onCommitted: (error) => settle(group, error),
      });
    }
    gathered.clear();
    if (options.commitNow) {
      Promise.resolve()
        .then(options.commitNow)
        .catch((error: unknown) => options.onCommitError?.(error));
    }
  };

  const scheduleHandOver = () => {
    if (handOverScheduled || gathered.size === 0) return;
    handOverScheduled = true;
    setImmediate(handOver);
  };

  return {
    commitSoon: scheduleHandOver,
    submit(readings, source, submitOptions) {
      if (readings.length === 0) return Promise.resolve();
      if (options.bus.listenerCount('reading.received') === 0)
        return Promise.reject(new WriterUnavailableError());
      const group = gathered.get(source) ?? gather(source);
      for (const reading of readings) group.readings.push(reading);
      if (!submitOptions?.defer) scheduleHandOver();
      // A deferred batch waits for the others, but never longer than the writer's own batching delay.
      else fallback ??= setTimeout(scheduleHandOver, DEFER_LIMIT_MS);
      return group.committed;
    },
  };
}
