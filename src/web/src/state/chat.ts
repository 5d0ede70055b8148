/**
 * The signed-in user's conversations, kept live by the messaging stream
 * (`GET /api/v1/messages/stream` with a single-use ticket, since EventSource cannot send a
 * bearer header). Runs while signed in, on every page, so the header's unread badge is right.
 * Where there is no stream (the upstream answers 404: its processes share no event bus), the
 * conversations and the open thread are polled every few seconds instead.
 */
import { getJson, request } from '../api/client.js';
import type { ConversationSummary, MessageRecord } from '../api/types.js';
import { tokenRoles } from '../lib/jwt.js';
import { nextLink } from '../lib/link-header.js';
import { ApiError } from '../lib/problem.js';
import { createStore } from '../lib/store.js';
import { ReconnectingStream, type StreamState } from '../live/event-stream.js';
import { hubStore } from './hub.js';
import { currentToken, sessionStore } from './session.js';

export interface ThreadState {
  messages: MessageRecord[];
  loaded: boolean;
  loading: boolean;
  error?: ApiError;
}

export interface ChatState {
  conversations: ConversationSummary[];
  conversationsLoaded: boolean;
  conversationsError?: ApiError;
  threads: Record<string, ThreadState>;
  /** 'polling': no messaging stream here, the lists are fetched again every few seconds. */
  stream: StreamState | 'polling';
}

const EMPTY: ChatState = { conversations: [], conversationsLoaded: false, threads: {}, stream: 'closed' };
export const chatStore = createStore<ChatState>(EMPTY);

let stream: ReconnectingStream | undefined;
let poller: ReturnType<typeof setInterval> | undefined;
export const CHAT_POLL_MS = 4_000;
/** The thread on screen: new replies to it are read at once (while the page is visible). */
let activeThread: string | undefined;

function auth() {
  const token = currentToken();
  return token ? { token } : {};
}

export function totalUnread(state: ChatState): number {
  return state.conversations.reduce((sum, c) => sum + (c.unread_count > 0 ? c.unread_count : 0), 0);
}

function upsertConversation(summary: ConversationSummary): void {
  chatStore.set((s) => {
    const rest = s.conversations.filter((c) => c.node_id !== summary.node_id);
    const conversations = [summary, ...rest].sort((a, b) => b.latest_at.localeCompare(a.latest_at));
    return { ...s, conversations };
  });
}

function upsertMessage(message: MessageRecord): void {
  const nodeId =
    message.node_id ?? (message.direction === 'outbound' ? message.target_node_id : message.sender_node_id);
  if (!nodeId) return;
  chatStore.set((s) => {
    const thread = s.threads[nodeId];
    if (!thread?.loaded) return s;
    const index = thread.messages.findIndex((m) => m.id === message.id);
    const messages = [...thread.messages];
    if (index >= 0) messages[index] = { ...messages[index], ...message };
    else messages.push(message);
    return { ...s, threads: { ...s.threads, [nodeId]: { ...thread, messages } } };
  });
  if (message.direction === 'inbound' && message.status === 'received' && nodeId === activeThread)
    scheduleRead(nodeId);
}

let readTimer: ReturnType<typeof setTimeout> | undefined;
function scheduleRead(nodeId: string): void {
  if (document.visibilityState !== 'visible') return;
  clearTimeout(readTimer);
  readTimer = setTimeout(() => void loadThread(nodeId), 300);
}

document.addEventListener('visibilitychange', () => {
  const thread = activeThread ? chatStore.get().threads[activeThread] : undefined;
  if (
    document.visibilityState === 'visible' &&
    activeThread &&
    thread?.messages.some((m) => m.status === 'received')
  ) {
    scheduleRead(activeThread);
  }
});

export async function loadConversations(): Promise<void> {
  try {
    const { data } = await getJson<{ data: ConversationSummary[] }>(
      '/api/v1/messages/conversations?limit=200',
      auth(),
    );
    chatStore.set((s) => ({
      ...s,
      conversations: data,
      conversationsLoaded: true,
      conversationsError: undefined,
    }));
  } catch (error) {
    chatStore.set((s) => ({ ...s, conversationsError: error as ApiError }));
  }
}

/**
 * The list's records with what the thread already knew beyond them (a failure's reason, fetched
 * from the message itself) while the status is the same: reloading the thread (the stream
 * reconnecting, the upstream's polling) must not take a shown reason away again.
 */
function keepDetails(before: readonly MessageRecord[] | undefined, listed: MessageRecord[]): MessageRecord[] {
  if (!before?.length) return listed;
  const known = new Map(before.map((m) => [m.id, m]));
  return listed.map((m) => {
    const old = known.get(m.id);
    return old && old.status === m.status ? { ...old, ...m } : m;
  });
}

/** Loads the whole conversation (following the Link pages); the hub marks it read. */
export async function loadThread(nodeId: string): Promise<void> {
  chatStore.set((s) => ({
    ...s,
    threads: {
      ...s.threads,
      [nodeId]: {
        messages: s.threads[nodeId]?.messages ?? [],
        loaded: s.threads[nodeId]?.loaded ?? false,
        loading: true,
      },
    },
  }));
  try {
    const messages: MessageRecord[] = [];
    let path: string | undefined = `/api/v1/messages/conversations/${encodeURIComponent(nodeId)}?limit=200`;
    for (let page = 0; path && page < 50; page++) {
      const response: { body: { data: MessageRecord[] }; headers: Headers } = await request(path, auth());
      messages.push(...response.body.data);
      path = nextLink(response.headers.get('link'));
    }
    chatStore.set((s) => ({
      ...s,
      threads: {
        ...s.threads,
        [nodeId]: {
          messages: keepDetails(s.threads[nodeId]?.messages, messages),
          loaded: true,
          loading: false,
        },
      },
    }));
    const summary = chatStore.get().conversations.find((c) => c.node_id === nodeId);
    if (summary && summary.unread_count > 0) upsertConversation({ ...summary, unread_count: 0 });
  } catch (error) {
    chatStore.set((s) => ({
      ...s,
      threads: {
        ...s.threads,
        [nodeId]: {
          ...(s.threads[nodeId] ?? { messages: [], loaded: false }),
          loading: false,
          error: error as ApiError,
        },
      },
    }));
  }
}

export function setActiveThread(nodeId: string | undefined): void {
  activeThread = nodeId;
}

/**
 * Posts a text; the 202's record joins the thread at once, the stream moves its status on.
 * `idempotencyKey` stays the same while the user retries the same text, so a send whose answer
 * was lost (Wi-Fi dropped after the hub took it) is not sent over the radio twice.
 */
export async function sendMessage(
  nodeId: string,
  text: string,
  idempotencyKey: string,
): Promise<MessageRecord> {
  const { body } = await request<MessageRecord>('/api/v1/messages', {
    method: 'POST',
    body: { target_node_id: nodeId, text },
    headers: { 'idempotency-key': idempotencyKey },
    ...auth(),
  });
  chatStore.set((s) => {
    const thread = s.threads[nodeId] ?? { messages: [], loaded: true, loading: false };
    if (thread.messages.some((m) => m.id === body.id)) return s;
    return {
      ...s,
      threads: {
        ...s.threads,
        [nodeId]: { ...thread, loaded: true, messages: [...thread.messages, { ...body, node_id: nodeId }] },
      },
    };
  });
  if (!chatStore.get().conversations.some((c) => c.node_id === nodeId)) void loadConversations();
  return body;
}

/** The failure reason of a failed message (the conversation list carries only its status). */
export async function loadMessageDetail(id: string): Promise<void> {
  const detail = await getJson<MessageRecord>(`/api/v1/messages/${encodeURIComponent(id)}`, auth());
  upsertMessage(detail);
}

export async function renameConversation(nodeId: string, nickname: string | null): Promise<void> {
  const { body } = await request<ConversationSummary>(
    `/api/v1/messages/conversations/${encodeURIComponent(nodeId)}`,
    {
      method: 'PATCH',
      body: { nickname },
      ...auth(),
    },
  );
  upsertConversation(body);
}

function startStream(): void {
  stream?.stop();
  stream = new ReconnectingStream({
    url: async () => {
      const { body } = await request<{ ticket: string }>('/api/v1/messages/stream/tickets', {
        method: 'POST',
        ...auth(),
      });
      return `/api/v1/messages/stream?ticket=${encodeURIComponent(body.ticket)}`;
    },
    onState: (state) => chatStore.set((s) => ({ ...s, stream: state })),
    onUrlError: (error) => {
      // No messaging stream at all (the upstream): poll instead of retrying forever.
      if (error instanceof ApiError && error.status === 404) startPolling();
    },
    onOpen: () => {
      // The stream holds only what happens while connected: catch up on the rest.
      void loadConversations();
      if (activeThread) void loadThread(activeThread);
    },
    events: {
      message: (data) => upsertMessage(data as MessageRecord),
      conversation: (data) => upsertConversation(data as ConversationSummary),
    },
  });
  stream.start();
}

/** Fetches the conversations, and the open thread while it is on screen (that marks it read, as the stream does). */
function startPolling(): void {
  stream?.stop();
  stream = undefined;
  clearInterval(poller);
  chatStore.set((s) => ({ ...s, stream: 'polling' }));
  let busy = false;
  let lastAt = 0;
  const poll = async () => {
    const visible = document.visibilityState === 'visible';
    // A hidden tab keeps its unread badge roughly right without asking every few seconds.
    if (busy || (!visible && Date.now() - lastAt < 30_000)) return;
    busy = true;
    lastAt = Date.now();
    try {
      const thread = activeThread;
      await Promise.all([loadConversations(), visible && thread ? loadThread(thread) : undefined]);
    } finally {
      busy = false;
    }
  };
  poller = setInterval(() => void poll(), CHAT_POLL_MS);
  void poll();
}

function stopStream(): void {
  stream?.stop();
  stream = undefined;
  clearInterval(poller);
  poller = undefined;
  chatStore.set(EMPTY);
}

/** The roles the messaging API serves (src/messaging/routes.ts). */
const MESSAGING_ROLES = ['subscriber', 'admin'];

type Following = 'nothing' | 'waiting' | 'stream' | 'polling';

/**
 * Chat follows the session: a stream while signed in, nothing (and no leftovers) after. Which
 * server this is comes with the live stream's hello: a hub streams, the upstream is polled (it
 * has no messaging stream; asking for one anyway would log a 404 on every page).
 */
export function initChat(): void {
  let signedInAs: string | undefined;
  let following: Following = 'nothing';
  const follow = () => {
    // By user, not by token: a refreshed token (every few minutes) keeps the stream as it is.
    // Only a subscriber or an admin may text (and open the messages stream): an operator or an
    // ingest login signed in to the UI gets no chat, rather than a refused stream on every page.
    const session = sessionStore.get().session;
    const user =
      session && tokenRoles(session.token).some((r) => MESSAGING_ROLES.includes(r))
        ? session.username
        : undefined;
    const mode = hubStore.get().mode;
    const way: Following = !user
      ? 'nothing'
      : mode === undefined
        ? 'waiting'
        : mode === 'upstream'
          ? 'polling'
          : 'stream';
    if (user === signedInAs && way === following) return;
    signedInAs = user;
    following = way;
    if (way === 'nothing') stopStream();
    else if (way === 'stream') startStream();
    else if (way === 'polling') startPolling();
  };
  sessionStore.subscribe(follow);
  hubStore.subscribe(follow);
  follow();
}
