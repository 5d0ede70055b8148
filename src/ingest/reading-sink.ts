/**
 * Hands readings to the one writer and resolves once they are committed (docs/architecture.md
 * "Data flows" 1: an MQTT QoS 1 PUBACK and an HTTP 202 go out only after the commit).
 *
 * The readings of one source submitted during one event-loop turn are gathered (GroupCommit)
 * and committed with one `readings.commit` ask, which the ingest writer answers once they are
 * durable. The ask's timeout bounds the wait: a writer that is stopped or has dropped the batch
 * never answers, and a sender must not wait forever. A failed commit fails every submission of
 * its group (each sender then sends again).
 */
import type { HubBus, ReadingSource } from '../domain/events.js';
import type { Reading } from '../domain/reading.js';
import { AskTimeoutError, NoHandlerError } from '../kernel/bus.js';
import { GroupCommit } from '../kernel/group-commit.js';

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
  /** Bound on the wait for a commit. Default 30 s. */
  timeoutMs?: number;
}

export function busReadingSink(options: BusReadingSinkOptions): ReadingSink {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const groups = new Map<ReadingSource, GroupCommit<Reading>>();
  const groupOf = (source: ReadingSource) => {
    let group = groups.get(source);
    if (!group) {
      group = new GroupCommit<Reading>({
        commit: (readings) =>
          options.bus
            .ask('readings.commit', { readings, source, urgent: true }, { timeoutMs })
            .catch((error) => {
              if (error instanceof NoHandlerError) throw new WriterUnavailableError();
              if (error instanceof AskTimeoutError) throw new CommitTimeoutError(timeoutMs);
              throw error;
            }),
      });
      groups.set(source, group);
    }
    return group;
  };

  return {
    commitSoon() {
      for (const group of groups.values()) group.commitSoon();
    },
    submit(readings, source, submitOptions) {
      if (readings.length === 0) return Promise.resolve();
      return groupOf(source).submitAll(readings, submitOptions);
    },
  };
}
