import cron, { type ScheduledTask } from 'node-cron';
import { Actor } from '../src/kernel/actor.js';
import type { Logger } from '../src/log.js';
import { deleteReadingsOlderThan } from '../src/store/retention.js';
import type { StoreActor } from './store.js';

const DAY_MS = 86_400_000;

/** Deletes raw readings older than READINGS_RETENTION_DAYS on a cron schedule; rollups are kept. */
export class RetentionActor extends Actor {
  readonly name = 'retention';
  override readonly dependsOn = ['store'];
  private task: ScheduledTask | undefined;
  private running: Promise<number> | undefined;
  private lastRun: { at: string; deleted: number } | undefined;

  constructor(
    private readonly deps: { store: StoreActor; log: Logger; retentionDays: number; schedule: string },
  ) {
    super();
  }

  async start(): Promise<void> {
    if (!cron.validate(this.deps.schedule))
      throw new Error(`RETENTION_CRON is not a valid cron expression: ${this.deps.schedule}`);
    this.task = cron.schedule(this.deps.schedule, () => {
      void this.runOnce().catch((err: unknown) => this.deps.log.error({ err }, 'retention run failed'));
    });
  }

  /** One retention pass; concurrent calls share the pass in flight. */
  runOnce(now = Date.now()): Promise<number> {
    if (this.running) return this.running;
    const cutoff = now - this.deps.retentionDays * DAY_MS;
    this.running = deleteReadingsOlderThan(this.deps.store.db, cutoff)
      .then((deleted) => {
        this.lastRun = { at: new Date(now).toISOString(), deleted };
        this.deps.log.info({ deleted, cutoff: new Date(cutoff).toISOString() }, 'retention pass done');
        return deleted;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  override describe(): Record<string, unknown> {
    return this.lastRun ? { last_run: this.lastRun } : {};
  }

  async stop(): Promise<void> {
    await this.task?.destroy();
    this.task = undefined;
    await this.running?.catch(() => 0);
  }
}
