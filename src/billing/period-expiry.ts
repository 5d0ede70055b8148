/**
 * The paid periods' clock (issue 11): `active` past its end → `past_due`; `past_due` past end +
 * grace → `expired`. Times are absolute in SQLite, so this is exact across restarts: the hub runs
 * it at start and on BILLING_EXPIRY_CRON. Work goes in chunks, one transaction each, yielding to
 * the event loop between (1,000 periods ending in one minute never hold it long: BENCHMARKS.md).
 * Messaging rights do not wait for this: they end with the grant's own `expires_at`.
 * The same clock runs on the upstream over PostgreSQL (BillingStorage.moveDue skips rows another
 * process holds, and the upstream runs each job under an advisory lock).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { changeOf } from './billing-changes.js';
import type { BillingStatus } from './billing-repository.js';
import type { BillingStorage } from './billing-storage.js';
import type { BillingChange } from './events.js';

/** How long applied webhook deliveries are remembered (BTCPay redelivers for about an hour). */
export const DELIVERY_MEMORY_MS = 30 * 86_400_000;

export class PeriodExpiry {
  private readonly now: () => number;

  constructor(
    private readonly deps: {
      storage: BillingStorage;
      onChange: (change: BillingChange) => void;
      graceMs: number;
      now?: () => number;
    },
  ) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Moves ended periods along: `active` past its end → `past_due`; `past_due` past end + grace →
   * `expired`. In chunks of `chunk`, one transaction each, yielding to the event loop between.
   */
  async expireDue(chunk = 100): Promise<number> {
    let moved = 0;
    const steps: Array<{ from: BillingStatus; to: BillingStatus; before: () => number; cause: string }> = [
      { from: 'active', to: 'past_due', before: () => this.now(), cause: 'period ended' },
      {
        from: 'past_due',
        to: 'expired',
        before: () => this.now() - this.deps.graceMs,
        cause: 'grace period ended',
      },
    ];
    for (const step of steps) {
      for (;;) {
        const at = this.now();
        const batch = await this.deps.storage.moveDue(
          { from: step.from, to: step.to, before: step.before(), cause: step.cause },
          at,
          chunk,
        );
        if (!batch.length) break;
        for (const sub of batch)
          this.deps.onChange(changeOf({ ...sub, status: step.to }, step.from, step.cause, null, at));
        moved += batch.length;
        await yieldToLoop();
      }
    }
    return moved;
  }

  /**
   * Forgets applied webhook deliveries after DELIVERY_MEMORY_MS: BTCPay stops redelivering within
   * about an hour (10 s, 1 min, then 6 × 10 min), so a month is far more than a redelivery needs.
   */
  async forgetOldDeliveries(chunk = 1000): Promise<number> {
    let forgotten = 0;
    for (;;) {
      const n = await this.deps.storage.pruneDeliveries(this.now() - DELIVERY_MEMORY_MS, chunk);
      forgotten += n;
      if (n < chunk) return forgotten;
      await yieldToLoop();
    }
  }
}
