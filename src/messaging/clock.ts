/**
 * The time the message gateway lives by: `now`, one-shot timers and the airtime pause. The hub
 * runs on `systemClock`; tests hand the gateway a clock they move on (a node away for an hour, a
 * hold of a day, the airtime pauses of 200 texts) without waiting for it.
 */
import { pause } from '../kernel/timing.js';

export interface ClockTimer {
  cancel(): void;
}

export interface MessagingClock {
  now(): number;
  /** Runs `fn` once, `delayMs` from now. */
  timer(delayMs: number, fn: () => void): ClockTimer;
  /** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
  pause(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: MessagingClock = {
  now: () => Date.now(),
  timer(delayMs, fn) {
    const handle = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(handle) };
  },
  pause,
};
