/**
 * The billing jobs on the upstream (poll open invoices, move ended periods), on the same cron
 * settings as a hub's (BILLING_POLL_CRON, BILLING_EXPIRY_CRON). Every upstream process schedules
 * them; a run first takes a session advisory lock named after the job and the schema
 * (`pg_try_advisory_lock`), on a connection of its own for the run, so while one process runs a
 * job the others skip that tick. The work would be safe without it (the stores lock rows), but
 * N processes asking BTCPay about the same invoices N times is not. The lock goes with the
 * connection: a process dying mid-run frees it.
 */
import { Cron } from 'croner';
import type pg from 'pg';
import type { Logger } from '../../../src/log.js';

/** First half of the advisory lock key: "bill" in ASCII (db/migrate.ts uses "mhub"). */
const BILLING_LOCK = 0x62696c6c;

export type BillingJobName = 'poll' | 'expiry';

export class BillingJobs {
  private readonly tasks: Cron[] = [];
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly jobs: Record<BillingJobName, { cron: string; run: () => Promise<unknown> }>,
    private readonly log: Logger,
  ) {}

  /** Schedules every job (a job never overlaps itself in a process: croner's `protect`). */
  start(): void {
    for (const name of Object.keys(this.jobs) as BillingJobName[]) {
      this.tasks.push(
        new Cron(this.jobs[name].cron, { protect: true }, async () => {
          await this.runNow(name).catch((err: unknown) =>
            this.log.warn({ err, job: name }, 'a billing job failed; it runs again at its next time'),
          );
        }),
      );
    }
  }

  /** Stops scheduling and waits for runs in progress. */
  async stop(): Promise<void> {
    for (const task of this.tasks.splice(0)) task.stop();
    await Promise.allSettled([...this.running]);
  }

  /**
   * Runs the job now unless another process (or this one) runs it: true when it ran. Throws what
   * the job throws, after freeing the lock.
   */
  async runNow(name: BillingJobName): Promise<boolean> {
    const run = this.locked(name);
    this.running.add(run);
    try {
      return await run;
    } finally {
      this.running.delete(run);
    }
  }

  private async locked(name: BillingJobName): Promise<boolean> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken ??= error;
    };
    client.on('error', onError);
    const key = [BILLING_LOCK, `billing.${name}`];
    try {
      const { rows } = await client.query<{ ok: boolean }>(
        `SELECT pg_try_advisory_lock($1, hashtext(current_schema() || ':' || $2)) AS ok`,
        key,
      );
      if (!rows[0]?.ok) return false;
      try {
        await this.jobs[name].run();
        return true;
      } finally {
        try {
          await client.query(`SELECT pg_advisory_unlock($1, hashtext(current_schema() || ':' || $2))`, key);
        } catch (error) {
          // The connection is gone, and its lock with it; it must not go back to the pool.
          broken ??= error as Error;
        }
      }
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }
}
