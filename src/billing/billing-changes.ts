/** A stored billing change as announced after its commit (`billing.changed` on a hub's bus). */

import type { BillingStatus, BillingSubscription } from './billing-repository.js';
import type { BillingChange } from './events.js';

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
