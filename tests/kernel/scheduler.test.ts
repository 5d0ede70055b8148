/** The one scheduler: expressions checked when registered, jobs run only while it runs, never twice at once. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isValidCron, ScheduleError, SchedulerActor } from '../../src/kernel/scheduler.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

afterEach(() => {
  vi.useRealTimers();
});

describe('SchedulerActor', () => {
  it('refuses a bad expression or a name used twice when the job is registered', () => {
    const scheduler = new SchedulerActor({ log: silent });
    expect(() => scheduler.add('x', 'every tuesday', () => {})).toThrow(ScheduleError);
    scheduler.add('x', '*/5 * * * *', () => {});
    expect(() => scheduler.add('x', '*/5 * * * *', () => {})).toThrow(/scheduled twice/);
    expect(isValidCron('17 3 * * *')).toBe(true);
    expect(isValidCron('*/1 * * * * *')).toBe(true);
    expect(isValidCron('61 * * * *')).toBe(false);
  });

  it('runs a job on its schedule only while started', async () => {
    vi.useFakeTimers({ now: new Date('2026-01-01T00:00:30Z') });
    const scheduler = new SchedulerActor({ log: silent });
    let runs = 0;
    scheduler.add('tick', '* * * * *', () => {
      runs++;
    });
    await vi.advanceTimersByTimeAsync(120_000);
    expect(runs).toBe(0);
    await scheduler.start();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(runs).toBe(2);
    await scheduler.stop();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(runs).toBe(2);
  });

  it('never runs a job twice at once, and logs a failing run without stopping the schedule', async () => {
    const errors: unknown[] = [];
    const scheduler = new SchedulerActor({ log: { ...silent, error: (o: object) => errors.push(o) } });
    let release!: () => void;
    let started = 0;
    scheduler.add('slow', '0 0 1 1 *', () => {
      started++;
      return new Promise<void>((r) => {
        release = r;
      });
    });
    scheduler.add('broken', '0 0 1 1 *', () => {
      throw new Error('disk full');
    });
    const first = scheduler.runNow('slow');
    const second = scheduler.runNow('slow');
    expect(started).toBe(1);
    release();
    await Promise.all([first, second]);
    await scheduler.runNow('broken');
    expect(errors).toHaveLength(1);
    expect(scheduler.describe()).toMatchObject({
      jobs: { broken: { last_run: { ok: false, error: 'disk full' } } },
    });
  });
});
