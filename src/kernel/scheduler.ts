/**
 * The hub's one scheduler: every periodic job of every module (retention, audit fetches and
 * maintenance, billing expiry, …) is registered here with a cron expression, through the
 * module context's `schedule(name, cron, job)`.
 *
 * Built on croner, which reads the local clock with plain `Date` and loads time-zone data only
 * when a zone is configured (SCHEDULE_TIMEZONE): node-cron formatted every tick with `Intl` and a
 * zone, which cost 8.5 MB of ICU data on every Pi (BENCHMARKS.md).
 *
 * Expressions are checked when a job is registered (at start-up, with the rest of the config),
 * jobs run only while the scheduler actor runs, a job still running when its next tick comes is
 * not started twice, and a failing job is logged with its name and tried again next tick.
 */
import { Cron } from 'croner';
import { z } from 'zod';
import { Actor, type KernelLogger } from './actor.js';

export type ScheduledJob = () => unknown;

export class ScheduleError extends Error {
  override readonly name = 'ScheduleError';
}

/** Five fields (minute precision) or six (seconds first), as croner and node-cron read them. */
export function isValidCron(expression: string): boolean {
  try {
    new Cron(expression, { paused: true }).stop();
    return true;
  } catch {
    return false;
  }
}

/** A settings field holding a cron expression: validated with the rest of the config. */
export const cronSetting = z
  .string()
  .trim()
  .refine(isValidCron, 'expected a cron expression like "*/10 * * * *" (minute hour day month weekday)');

interface Registration {
  name: string;
  expression: string;
  job: ScheduledJob;
  task?: Cron;
  runs: number;
  lastRun?: { at: string; ok: boolean; error?: string };
}

export class SchedulerActor extends Actor {
  readonly name = 'scheduler';
  private readonly jobs = new Map<string, Registration>();
  private running = false;
  /** The run in flight of each job: a tick (or runNow) during a run shares it. */
  private readonly runs = new Map<string, Promise<void>>();
  /** The run in flight of each job: a tick (or runNow) during a run shares it. */
  constructor(private readonly deps: { log: KernelLogger; timezone?: string }) {
    super();
  }

  /** Registers a job; throws ScheduleError for a bad expression or a name used twice. */
  add(name: string, expression: string, job: ScheduledJob): void {
    if (this.jobs.has(name)) throw new ScheduleError(`job "${name}" is scheduled twice`);
    if (!isValidCron(expression))
      throw new ScheduleError(`${name}: "${expression}" is not a valid cron expression`);
    const registration: Registration = { name, expression, job, runs: 0 };
    this.jobs.set(name, registration);
    if (this.running) this.arm(registration);
  }

  async start(): Promise<void> {
    this.running = true;
    for (const registration of this.jobs.values()) this.arm(registration);
  }

  async stop(): Promise<void> {
    this.running = false;
    for (const registration of this.jobs.values()) {
      registration.task?.stop();
      registration.task = undefined;
    }
    // A job in flight finishes (its owner bounds it); none starts after this.
    await Promise.allSettled([...this.runs.values()]);
  }

  /** Runs a job now, outside its schedule (tests, "fetch now"); shares a run already in flight. */
  async runNow(name: string): Promise<void> {
    const registration = this.jobs.get(name);
    if (!registration) throw new ScheduleError(`no job "${name}"`);
    await this.run(registration);
  }

  override describe(): Record<string, unknown> {
    return {
      jobs: Object.fromEntries(
        [...this.jobs.values()].map((r) => [
          r.name,
          {
            cron: r.expression,
            ...(r.task?.nextRun() ? { next_run: r.task.nextRun()!.toISOString() } : {}),
            ...(r.lastRun ? { last_run: r.lastRun } : {}),
          },
        ]),
      ),
    };
  }

  private arm(registration: Registration): void {
    registration.task = new Cron(
      registration.expression,
      { protect: true, ...(this.deps.timezone ? { timezone: this.deps.timezone } : {}) },
      () => this.run(registration),
    );
  }

  private run(registration: Registration): Promise<void> {
    const current = this.runs.get(registration.name);
    if (current) return current;
    const at = new Date().toISOString();
    const done = (async () => {
      try {
        await registration.job();
        registration.lastRun = { at, ok: true };
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        registration.lastRun = { at, ok: false, error: message };
        this.deps.log.error({ job: registration.name, err: error }, 'scheduled job failed');
      } finally {
        registration.runs++;
        this.runs.delete(registration.name);
      }
    })();
    this.runs.set(registration.name, done);
    return done;
  }
}
