/**
 * A clock for the message gateway that tests move on: the real time plus an offset that only
 * grows, so time still flows (sockets, the simulator's ACK delays) and a test can jump an hour
 * ahead at once. Timers and pauses fire when real time or a jump reaches them.
 */
import type { ClockTimer, MessagingClock } from '../../src/messaging/clock.js';

interface Pending {
  due: number;
  fn: () => void;
  handle: NodeJS.Timeout;
}

export class FakeClock implements MessagingClock {
  private offsetMs = 0;
  private readonly pending = new Set<Pending>();

  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock `ms` ahead and runs every timer that is due by then. */
  advance(ms: number): void {
    this.offsetMs += ms;
    const now = this.now();
    for (const p of [...this.pending].sort((a, b) => a.due - b.due)) {
      if (p.due <= now) this.fire(p);
    }
  }

  /** Moves the clock to `at` (never back). */
  advanceTo(at: number): void {
    this.advance(Math.max(0, at - this.now()));
  }

  timer(delayMs: number, fn: () => void): ClockTimer {
    const entry: Pending = {
      due: this.now() + delayMs,
      fn,
      handle: setTimeout(() => this.fire(entry), delayMs),
    };
    this.pending.add(entry);
    return {
      cancel: () => {
        clearTimeout(entry.handle);
        this.pending.delete(entry);
      },
    };
  }

  pause(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = this.timer(ms, done);
      function done() {
        timer.cancel();
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private fire(entry: Pending): void {
    if (!this.pending.delete(entry)) return;
    clearTimeout(entry.handle);
    entry.fn();
  }
}
