/**
 * Group commit: what is submitted during one event-loop turn — from every connection — is
 * handed to `commit` together on the next turn (setImmediate), and every submitter waits on the
 * one promise of its group. The busier the hub, the bigger the transactions; an idle hub commits
 * a lone item at once. One promise per group, not per item: at tens of thousands of items a
 * second, a promise per item would cost more than the item.
 *
 * `defer`: more items are on their way (the caller is mid-way through a burst): leave the
 * hand-over to the last of them, or to `commitSoon()`, but never wait longer than `deferLimitMs`.
 *
 * Used by the reading sink (MQTT and HTTP ingest) and the messaging POST batcher.
 */
import { deferred } from './deferred.js';

interface Group<T> {
  items: T[];
  committed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

export interface GroupCommitOptions<T> {
  /** Commits one group; a throw or rejection fails every submission of the group. */
  commit(items: T[]): void | Promise<void>;
  /** The longest a deferred submission waits for the ones it defers to. Default 100 ms. */
  deferLimitMs?: number;
}

export class GroupCommit<T> {
  private group: Group<T> | undefined;
  private scheduled = false;
  private fallback: NodeJS.Timeout | undefined;
  private readonly deferLimitMs: number;

  constructor(private readonly options: GroupCommitOptions<T>) {
    this.deferLimitMs = options.deferLimitMs ?? 100;
  }

  /** Adds items to this turn's group; resolves once the group is committed. */
  submitAll(items: readonly T[], submitOptions?: { defer?: boolean }): Promise<void> {
    if (!this.group) this.group = GroupCommit.open<T>();
    const group = this.group;
    for (const item of items) group.items.push(item);
    if (!submitOptions?.defer) this.commitSoon();
    else this.fallback ??= setTimeout(() => this.commitSoon(), this.deferLimitMs);
    return group.committed;
  }

  /** Hands the open group over on the next turn. */
  commitSoon(): void {
    if (this.scheduled || !this.group) return;
    this.scheduled = true;
    setImmediate(() => this.handOver());
  }

  private handOver(): void {
    this.scheduled = false;
    clearTimeout(this.fallback);
    this.fallback = undefined;
    const group = this.group;
    this.group = undefined;
    if (!group) return;
    Promise.resolve()
      .then(() => this.options.commit(group.items))
      .then(group.resolve, group.reject);
  }

  private static open<T>(): Group<T> {
    // A group nobody awaits (every submitter gave up) must not be an unhandled rejection: deferred() sees to it.
    const { promise: committed, resolve, reject } = deferred();
    return { items: [], committed, resolve, reject };
  }
}
