/** A stored billing change, announced on the bus after its commit (`billing.changed`). */
import type { HubBus } from '../../src/events.js';
import type { BillingStatus, BillingSubscription } from './billing-store.js';

export function announceChange(
  bus: HubBus,
  sub: BillingSubscription,
  from: BillingStatus | null,
  cause: string,
  invoiceId: string | null,
  at: number,
): void {
  bus.emit('billing.changed', {
    subscriptionId: sub.id,
    subscriber: sub.subscriber,
    planId: sub.planId,
    from,
    to: sub.status,
    cause,
    invoiceId,
    at,
    currentPeriodEnd: sub.currentPeriodEnd,
  });
}
