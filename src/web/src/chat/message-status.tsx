/** A message's delivery state as people expect it from a messenger, with the failure reason in words. */
import { useState } from 'preact/hooks';
import type { MessageRecord } from '../api/types.js';
import { useNow, useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { formatDateTime } from '../lib/format.js';
import { displayName } from '../lib/mesh-state.js';
import { randomId } from '../lib/random-id.js';
import { sendMessage } from '../state/chat.js';
import { hubStore } from '../state/hub.js';
import { meshStore } from '../state/mesh.js';
import { sitesStore } from '../state/sites.js';
import { refusal } from './composer.js';
import { upstreamWaitingWords, waitingWords } from './held-words.js';

const time = (iso: string | null | undefined) => (iso ? Date.parse(iso) : undefined);

/** The node's name and last-heard time come live from the mesh, so "3 h ago" stays true. */
function HeldStatus({ message }: { message: MessageRecord }) {
  const nodeId = message.waiting_for_node!;
  const mesh = useStore(meshStore);
  const now = useNow(30_000);
  const node = mesh.mesh.nodes.get(nodeId);
  const heard = node?.last_heard === undefined ? undefined : Date.parse(node.last_heard);
  const until = message.hold_until ? new Date(message.hold_until) : undefined;
  const words = waitingWords(displayName(node, nodeId), heard, now, {
    createdAt: time(message.created_at),
    nextAttemptAt: time(message.next_attempt_at),
  });
  return (
    <span
      class="status status-queued status-held"
      title={until ? t('chat.heldUntil', { time: formatDateTime(until.getTime()) }) : t('chat.heldTitle')}
    >
      <span aria-hidden="true">◷ </span>
      <span data-testid="waiting-for">{words}</span>
    </span>
  );
}

/** Queued: on the upstream, why it waits (its site offline, or what the site said); on a hub, for the radio. */
function QueuedStatus({ message }: { message: MessageRecord }) {
  const hub = useStore(hubStore);
  const sites = useStore(sitesStore);
  const now = useNow(30_000) + sites.clockOffsetMs;
  const why = hub.mode === 'upstream' ? upstreamWaitingWords(message, sites.sites, now) : undefined;
  if (why) {
    return (
      <span class="status status-queued status-held" title={t('chat.queuedUpstream')}>
        <span aria-hidden="true">◷ </span>
        <span data-testid="waiting-for">{why}</span>
      </span>
    );
  }
  return (
    <span class="status status-queued" title={t('chat.queuedTitle')}>
      <span aria-hidden="true">◷ </span>
      {t('chat.queued')}
    </span>
  );
}

/** A failed text: the same text to the same node again, as a new message. */
function SendAgain({ message }: { message: MessageRecord }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const nodeId = message.node_id ?? message.target_node_id;
  if (!nodeId) return null;
  const again = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await sendMessage(nodeId, message.text, randomId());
    } catch (caught) {
      setError(refusal(caught, nodeId, nodeId));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {' '}
      <button type="button" class="link-button small" disabled={busy} onClick={() => void again()}>
        {t('chat.sendAgain')}
      </button>
      {error && (
        <span class="send-again-error" role="alert">
          {' '}
          {error}
        </span>
      )}
    </>
  );
}

/** `the radio repeated it … (…) [MAX_RETRANSMIT]` → `The radio repeated it … (…)`, code kept apart. */
export function failureWords(reason: string | undefined): { text: string; code?: string } {
  if (!reason) return { text: t('chat.reasonLookup') };
  const match = /^(.*?)\s*\[([A-Z0-9_]+)\]$/.exec(reason.trim());
  const text = match ? match[1]! : reason;
  return { text: text.charAt(0).toUpperCase() + text.slice(1), ...(match ? { code: match[2]! } : {}) };
}

export function MessageStatus({ message }: { message: MessageRecord }) {
  if (message.direction === 'inbound') return null;
  switch (message.status) {
    case 'queued':
      if (message.waiting_for_node) return <HeldStatus message={message} />;
      return <QueuedStatus message={message} />;
    case 'sent':
      return (
        <span class="status status-sent" title={t('chat.sentTitle')}>
          <span aria-hidden="true">✓ </span>
          {t('chat.sent')}
        </span>
      );
    case 'delivered':
      return (
        <span class="status status-delivered" title={t('chat.deliveredTitle')}>
          <span aria-hidden="true">✓✓ </span>
          {t('chat.delivered')}
        </span>
      );
    case 'failed': {
      const { text, code } = failureWords(message.failure_reason);
      return (
        <span class="status status-failed" title={code ? t('chat.radioError', { code }) : undefined}>
          <span aria-hidden="true">⚠ </span>
          {t('chat.notDelivered')} <span data-testid="failure-reason">{text}</span>
          <SendAgain message={message} />
        </span>
      );
    }
    default:
      return null;
  }
}
