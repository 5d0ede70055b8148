/**
 * Message events on MQTT: every `message.updated` becomes one non-retained message on
 * `meshhub/messages/<subscriber>/<node_id>` (unmatched inbound texts: `meshhub/messages/_unmatched/<node_id>`),
 * with the payload `{ "event": "created" | "status" | "retry", "subscriber", "message": <detail JSON> }`.
 * The subscriber segment keeps topic-safe characters and percent-encodes the rest ('/', '+', '#'
 * could otherwise break the topic tree or an ACL). Not retained: the broker keeps retained
 * messages in memory, and messages are unbounded; the API holds their state.
 */
import type { BillingChange } from '../domain/events.js';
import { type MessageChange, messageDetailJson } from './message.js';

export const MESSAGES_TOPIC_ROOT = 'meshhub/messages';
export const UNMATCHED_SEGMENT = '_unmatched';

export function topicSegment(value: string): string {
  return value.replace(/[^A-Za-z0-9._:-]/g, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

export function messageEventTopic(change: MessageChange): string {
  const owner = change.message.owner;
  return `${MESSAGES_TOPIC_ROOT}/${owner === null ? UNMATCHED_SEGMENT : topicSegment(owner)}/${change.message.nodeId}`;
}

export function messageEventPayload(change: MessageChange): string {
  return JSON.stringify({
    event: change.kind,
    subscriber: change.message.owner,
    message: messageDetailJson(change.message),
  });
}

/** Billing changes (issue 11): `meshhub/billing/<subscriber>`, admins only, not retained. */
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
