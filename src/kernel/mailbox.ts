/**
 * A bounded inbox, handled one message at a time.
 *
 * Overflow policies (docs/architecture.md "Actors" 2):
 * - `drop-oldest`: for telemetry, where the newest value matters most; the oldest waiting
 *   message is discarded to make room and counted.
 * - `reject`: for commands; `post` returns false and the sender must answer its caller.
 */

export type OverflowPolicy = 'drop-oldest' | 'reject';

export interface MailboxOptions<T> {
  capacity: number;
  overflow: OverflowPolicy;
  /** Handles one message; the next is not started until this settles. */
  handle: (message: T) => void | Promise<void>;
  /** A handler that throws or rejects: the actor decides (usually: crash and be restarted). */
  onError: (error: unknown, message: T) => void;
}

export class Mailbox<T> {
  private readonly queue: T[] = [];
  private head = 0;
  private running = false;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  dropped = 0;
  rejected = 0;

  constructor(private readonly options: MailboxOptions<T>) {
    if (!(options.capacity >= 1)) throw new RangeError('mailbox capacity must be at least 1');
  }

  get depth(): number {
    return this.queue.length - this.head;
  }

  get capacity(): number {
    return this.options.capacity;
  }

  /** Returns false when the message was not accepted (rejected on overflow, or closed). */
  post(message: T): boolean {
    if (this.closed) {
      this.rejected++;
      return false;
    }
    if (this.depth >= this.options.capacity) {
      if (this.options.overflow === 'reject') {
        this.rejected++;
        return false;
      }
      this.release();
      this.dropped++;
    }
    this.queue.push(message);
    if (!this.running) this.drain();
    return true;
  }

  /** Stops accepting messages; those already queued are still handled. */
  close(): void {
    this.closed = true;
  }

  reopen(): void {
    this.closed = false;
  }

  /** Discards every waiting message; returns how many were discarded. */
  clear(): number {
    const n = this.depth;
    this.queue.length = 0;
    this.head = 0;
    this.notifyIdle();
    return n;
  }

  /** Resolves once every queued message has been handled. */
  idle(): Promise<void> {
    if (!this.running && this.depth === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private drain(): void {
    this.running = true;
    // Handle synchronous handlers in a loop; hop to the microtask queue only when one returns a promise.
    while (this.head < this.queue.length) {
      const message = this.queue[this.head] as T;
      this.release();
      let result: void | Promise<void>;
      try {
        result = this.options.handle(message);
      } catch (error) {
        this.options.onError(error, message);
        continue;
      }
      if (result && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(
          () => this.drain(),
          (error: unknown) => {
            this.options.onError(error, message);
            this.drain();
          },
        );
        return;
      }
    }
    this.running = false;
    this.notifyIdle();
  }

  /**
   * Takes the message at the head out of the queue. Its slot is emptied at once, so a handled (or
   * dropped) message is never kept alive by the queue: after a burst, the readings it carried are
   * garbage as soon as they are stored, not once a later burst reuses the array.
   */
  private release(): void {
    this.queue[this.head] = undefined as T;
    this.head++;
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      // Amortised O(1) shift: drop the consumed prefix once it dominates the array.
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private notifyIdle(): void {
    if (this.running || this.depth > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
