/** One conversation: its messages oldest first, their delivery state, a nickname, and the composer. */
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { MessageRecord } from '../api/types.js';
import { FormAlert } from '../components/form-alert.js';
import { LoadError, Loading } from '../components/load-states.js';
import { useNow, useStore, useTitle } from '../hooks.js';
import { t } from '../i18n/index.js';
import { formatTime } from '../lib/format.js';
import { displayName } from '../lib/mesh-state.js';
import { plainWords } from '../lib/problem.js';
import { Link } from '../router.js';
import {
  chatStore,
  loadMessageDetail,
  loadThread,
  renameConversation,
  setActiveThread,
} from '../state/chat.js';
import { hubStore } from '../state/hub.js';
import { meshStore } from '../state/mesh.js';
import { Composer } from './composer.js';
import { MessageStatus } from './message-status.js';

/** How often the upstream's chat asks again what a queued text's site said of it (the thread is polled every 4 s). */
const QUEUED_RECHECK_MS = 15_000;

function Bubble({ message, now }: { message: MessageRecord; now: number }) {
  return (
    <li
      class={`message message-${message.direction}`}
      data-status={message.status}
      data-message-id={message.id}
    >
      <p class="message-text">{message.text}</p>
      <p class="message-meta">
        <time dateTime={message.created_at}>{formatTime(Date.parse(message.created_at), now)}</time>
        <MessageStatus message={message} />
      </p>
    </li>
  );
}

function Rename({ nodeId, current, canRename }: { nodeId: string; current: string; canRename: boolean }) {
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(current);
  const [error, setError] = useState<string>();
  if (!canRename) return null;
  if (!editing) {
    return (
      <button
        type="button"
        class="link-button small"
        onClick={() => {
          setValue(current);
          setEditing(true);
        }}
      >
        {t('chat.rename')}
      </button>
    );
  }
  const save = async (nickname: string | null) => {
    try {
      await renameConversation(nodeId, nickname);
      setEditing(false);
      setError(undefined);
    } catch (caught) {
      setError(plainWords(caught));
    }
  };
  return (
    <form
      class="rename"
      onSubmit={(e) => {
        e.preventDefault();
        void save(value.trim() || null);
      }}
    >
      <label for="nickname">{t('chat.nickname')}</label>
      <input
        id="nickname"
        value={value}
        maxLength={40}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
      />
      <button type="submit" class="button button-small">
        {t('chat.save')}
      </button>
      <button type="button" class="link-button small" onClick={() => void save(null)}>
        {t('chat.useNodeName')}
      </button>
      <button type="button" class="link-button small" onClick={() => setEditing(false)}>
        {t('common.cancel')}
      </button>
      <FormAlert message={error} />
    </form>
  );
}

export function Thread({ nodeId }: { nodeId: string }) {
  const chat = useStore(chatStore);
  const mesh = useStore(meshStore);
  const upstream = useStore(hubStore).mode === 'upstream';
  const now = useNow(30_000);
  const list = useRef<HTMLOListElement>(null);
  /** Message id → the lookup last asked for it (its status, and on the upstream the round). */
  const asked = useRef(new Map<string, string>());
  const thread = chat.threads[nodeId];
  const summary = chat.conversations.find((c) => c.node_id === nodeId);
  const name = summary?.nickname || displayName(mesh.mesh.nodes.get(nodeId), nodeId);
  useTitle(t('chat.chatWith', { name }));

  useEffect(() => {
    setActiveThread(nodeId);
    void loadThread(nodeId);
    return () => setActiveThread(undefined);
  }, [nodeId]);

  useEffect(() => {
    // The conversation lists only statuses; a failure's reason, and whether a queued text waits
    // for its node (docs/held-texts.md), come with the message itself.
    for (const message of thread?.messages ?? []) {
      const unexplained =
        (message.status === 'failed' && !message.failure_reason) ||
        (message.status === 'queued' &&
          message.direction === 'outbound' &&
          message.waiting_for_node === undefined);
      // Asked once per status: a text looked up while queued is looked up again once it failed.
      // On the upstream a queued text is looked up again every so often: its site says why it
      // waits in a transition that leaves the listed record as it was.
      const round =
        upstream && message.status === 'queued' ? ` ${Math.floor(Date.now() / QUEUED_RECHECK_MS)}` : '';
      const key = `${message.id} ${message.status}${round}`;
      if (unexplained && asked.current.get(message.id) !== key) {
        asked.current.set(message.id, key);
        loadMessageDetail(message.id).catch(() => asked.current.delete(message.id));
      }
    }
  }, [thread?.messages, upstream]);

  const count = thread?.messages.length ?? 0;
  useLayoutEffect(() => {
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [count, nodeId]);

  let body: ComponentChildren;
  if (!thread || (!thread.loaded && thread.loading)) {
    body = <Loading>{t('chat.loadingThread')}</Loading>;
  } else if (thread.error && !thread.loaded) {
    body = <LoadError error={thread.error} onRetry={() => void loadThread(nodeId)} />;
  } else if (thread.messages.length === 0) {
    body = <p class="muted thread-empty">{t('chat.noMessages')}</p>;
  } else {
    body = null;
  }

  return (
    <section class="thread" aria-labelledby="thread-heading" data-node-id={nodeId}>
      <header class="thread-head">
        <Link href="/chat" class="back-link">
          ← {t('chat.conversations')}
        </Link>
        <div class="thread-title">
          <h2 id="thread-heading">{name}</h2>
          <span class="muted small">{nodeId}</span>
          <Rename
            nodeId={nodeId}
            current={summary?.nickname ?? ''}
            canRename={!!summary}
            key={summary?.nickname}
          />
        </div>
      </header>
      <ol
        class="messages"
        ref={list}
        aria-label={t('chat.messagesWith', { name })}
        aria-live="polite"
        aria-relevant="additions text"
      >
        {thread?.messages.map((message) => (
          <Bubble key={message.id} message={message} now={now} />
        ))}
      </ol>
      {body}
      <Composer nodeId={nodeId} name={name} />
    </section>
  );
}
