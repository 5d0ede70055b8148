/** The signed-in user's conversations, newest first, with unread counts; and starting a new one. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { LoadError, Loading } from '../components/load-states.js';
import { useNow, useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { formatTime } from '../lib/format.js';
import { displayName, nodeIdFromNum, sortedNodes } from '../lib/mesh-state.js';
import { chatPath } from '../lib/routes.js';
import { Link, navigate } from '../router.js';
import { chatStore, loadConversations } from '../state/chat.js';
import { hubStore } from '../state/hub.js';
import { meshStore } from '../state/mesh.js';

function NewConversation() {
  const mesh = useStore(meshStore);
  const hub = useStore(hubStore);
  const [open, setOpen] = useState(false);
  const [choice, setChoice] = useState('');
  const hubNodeId = hub.radio?.myNodeNum !== undefined ? nodeIdFromNum(hub.radio.myNodeNum) : undefined;
  const nodes = sortedNodes(mesh.mesh).filter(
    (n) => n.node_id !== hubNodeId && /^![0-9a-f]{8}$/.test(n.node_id),
  );
  if (!open) {
    return (
      <button type="button" class="button button-small" onClick={() => setOpen(true)}>
        {t('chat.newMessage')}
      </button>
    );
  }
  return (
    <form
      class="new-conversation"
      onSubmit={(e) => {
        e.preventDefault();
        if (!choice) return;
        setOpen(false);
        navigate(chatPath(choice));
      }}
    >
      <label for="new-conversation-node">{t('chat.toNode')}</label>
      <select
        id="new-conversation-node"
        value={choice}
        onChange={(e) => setChoice((e.target as HTMLSelectElement).value)}
      >
        <option value="">{t('chat.chooseNode')}</option>
        {nodes.map((n) => (
          <option key={n.node_id} value={n.node_id}>
            {displayName(n, n.node_id)} ({n.node_id})
          </option>
        ))}
      </select>
      <button type="submit" class="button button-small" disabled={!choice}>
        {t('chat.open')}
      </button>
      <button type="button" class="link-button small" onClick={() => setOpen(false)}>
        {t('common.cancel')}
      </button>
    </form>
  );
}

export function ConversationList({ activeId }: { activeId?: string }) {
  const chat = useStore(chatStore);
  const now = useNow(30_000);
  let body: ComponentChildren;
  if (chat.conversationsError && !chat.conversationsLoaded) {
    body = <LoadError error={chat.conversationsError} onRetry={() => void loadConversations()} small />;
  } else if (!chat.conversationsLoaded) {
    body = <Loading>{t('chat.loadingConversations')}</Loading>;
  } else if (chat.conversations.length === 0) {
    body = <p class="muted">{t('chat.noConversations')}</p>;
  } else {
    body = (
      <ul class="conversation-list">
        {chat.conversations.map((c) => (
          <li key={c.node_id} data-node-id={c.node_id}>
            <Link
              href={chatPath(c.node_id)}
              class={`conversation${c.unread_count > 0 ? ' conversation-unread' : ''}`}
              aria-current={c.node_id === activeId ? 'page' : undefined}
            >
              <span class="conversation-top">
                <span class="conversation-name">{c.nickname || c.node_id}</span>
                <time class="muted small" dateTime={c.latest_at}>
                  {formatTime(Date.parse(c.latest_at), now)}
                </time>
              </span>
              <span class="conversation-bottom">
                <span class="conversation-latest">{c.latest_text}</span>
                {c.waiting_count > 0 && (
                  <span
                    class="badge badge-waiting"
                    data-testid="waiting-badge"
                    title={t('chat.waitingTitle')}
                  >
                    ◷ {t('chat.waitingCount', { count: c.waiting_count })}
                  </span>
                )}
                {c.failed_count > 0 && (
                  <span class="badge badge-failed" data-testid="failed-badge" title={t('chat.failedTitle')}>
                    ⚠ {t('chat.failedCount', { count: c.failed_count })}
                  </span>
                )}
                {c.unread_count > 0 && (
                  <span class="badge" data-testid="unread-badge">
                    {c.unread_count}
                    <span class="visually-hidden"> {t('header.unread')}</span>
                  </span>
                )}
              </span>
            </Link>
          </li>
        ))}
      </ul>
    );
  }
  return (
    <aside class="conversations" aria-labelledby="conversations-heading">
      <div class="conversations-head">
        <h1 id="conversations-heading">{t('header.chat')}</h1>
        <NewConversation />
      </div>
      {body}
    </aside>
  );
}
