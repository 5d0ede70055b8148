/** A message's delivery state as people expect it from a messenger, with the failure reason in words. */
import type { MessageRecord } from '../api/types.js';
import { useNow, useStore } from '../hooks.js';
import { displayName } from '../lib/mesh-state.js';
import { meshStore } from '../state/mesh.js';
import { waitingWords } from './held-words.js';

/** The node's name and last-heard time come live from the mesh, so "3 h ago" stays true. */
function HeldStatus({ nodeId, holdUntil }: { nodeId: string; holdUntil: string | null | undefined }) {
  const mesh = useStore(meshStore);
  const now = useNow(30_000);
  const node = mesh.mesh.nodes.get(nodeId);
  const heard = node?.last_heard === undefined ? undefined : Date.parse(node.last_heard);
  const until = holdUntil ? new Date(holdUntil) : undefined;
  return (
    <span
      class="status status-queued status-held"
      title={
        until
          ? `Sent as soon as the node is heard; it gives up at ${until.toLocaleString()}`
          : 'Sent as soon as the node is heard'
      }
    >
      <span aria-hidden="true">◷ </span>
      <span data-testid="waiting-for">{waitingWords(displayName(node, nodeId), heard, now)}</span>
    </span>
  );
}

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
      if (message.waiting_for_node)
        return <HeldStatus nodeId={message.waiting_for_node} holdUntil={message.hold_until} />;
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
