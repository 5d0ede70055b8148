/** Billing changes on MQTT (issue 11): `meshhub/billing/<subscriber>`, admins only, not retained. */
import { topicSegment } from '../messaging/mqtt-events.js';
import type { BillingChange } from './events.js';

/** The topics' root. */
export const BILLING_TOPIC_ROOT = 'meshhub/billing';

export function billingEventTopic(change: BillingChange): string {
  return `${BILLING_TOPIC_ROOT}/${topicSegment(change.subscriber)}`;
}

export function billingEventPayload(change: BillingChange): string {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return JSON.stringify({
    subscription_id: change.subscriptionId,
    subscriber: change.subscriber,
    plan_id: change.planId,
    from: change.from,
    to: change.to,
    cause: change.cause,
    invoice_id: change.invoiceId,
    at: iso(change.at),
    current_period_end: iso(change.currentPeriodEnd),
  });
}
