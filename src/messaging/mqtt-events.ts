/**
 * Message events on MQTT: every `message.updated` becomes one non-retained message on
 * `meshhub/messages/<subscriber>/<node_id>` (unmatched inbound texts: `meshhub/messages/_unmatched/<node_id>`),
 * with the payload `{ "event": "created" | "status" | "retry", "subscriber", "message": <detail JSON> }`.
 * The subscriber segment keeps topic-safe characters and percent-encodes the rest ('/', '+', '#'
 * could otherwise break the topic tree or an ACL). Not retained: the broker keeps retained
 * messages in memory, and messages are unbounded; the API holds their state.
 */
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
