/** A message's delivery state as people expect it from a messenger, with the failure reason in words. */
import type { MessageRecord } from '../api/types.js';

/** `the radio repeated it … (…) [MAX_RETRANSMIT]` → `The radio repeated it … (…)`, code kept apart. */
export function failureWords(reason: string | undefined): { text: string; code?: string } {
  if (!reason) return { text: 'The reason is being looked up…' };
  const match = /^(.*?)\s*\[([A-Z0-9_]+)\]$/.exec(reason.trim());
  const text = match ? match[1]! : reason;
  return { text: text.charAt(0).toUpperCase() + text.slice(1), ...(match ? { code: match[2]! } : {}) };
}

export function MessageStatus({ message }: { message: MessageRecord }) {
  if (message.direction === 'inbound') return null;
  switch (message.status) {
    case 'queued':
      return (
        <span class="status status-queued" title="Waiting for the radio and its airtime">
          <span aria-hidden="true">◷ </span>Queued
        </span>
      );
    case 'sent':
      return (
        <span class="status status-sent" title="The mesh repeated it; waiting for the node to confirm">
          <span aria-hidden="true">✓ </span>Sent
        </span>
      );
    case 'delivered':
      return (
        <span class="status status-delivered" title="The node confirmed it received the message">
          <span aria-hidden="true">✓✓ </span>Delivered
        </span>
      );
    case 'failed': {
      const { text, code } = failureWords(message.failure_reason);
      return (
        <span class="status status-failed" title={code ? `Radio error ${code}` : undefined}>
          <span aria-hidden="true">⚠ </span>Not delivered: <span data-testid="failure-reason">{text}</span>
        </span>
      );
    }
    default:
      return null;
  }
}
