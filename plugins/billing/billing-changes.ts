/** A stored billing change as announced after its commit (`billing.changed` on a hub's bus). */
import type { BillingChange } from '../../src/domain/events.js';
import type { BillingStatus, BillingSubscription } from './billing-store.js';

export function changeOf(
  sub: BillingSubscription,
  from: BillingStatus | null,
  cause: string,
  invoiceId: string | null,
  at: number,
): BillingChange {
  return {
    subscriptionId: sub.id,
    subscriber: sub.subscriber,
    planId: sub.planId,
    from,
    to: sub.status,
    cause,
    invoiceId,
    at,
    currentPeriodEnd: sub.currentPeriodEnd,
  };
}
