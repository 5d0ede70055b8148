/**
 * The live stream of a subscriber's messages (Server-Sent Events, GET /api/v1/messages/stream):
 * - `event: message`: a message was stored or changed status; data is the message detail JSON
 *   (the record plus `node_id`, `updated_at`, `attempts`, `failure_code`, `failure_reason`);
 * - `event: conversation`: the conversation's summary after that change (unread counts move);
 * - `: ping` comments every 15 s keep proxies and the browser from timing the stream out.
 * Only the caller's own messages are sent; admins also get texts nobody could be matched with.
 * The stream holds only what happens while connected: after a reconnect, fetch the
 * conversations again. A client that stops reading is cut off (bounded memory per client).
 */
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import type { Principal } from '../auth/hub-identity.js';
import { ProblemError } from '../http/problem.js';
import type { ConversationRepository } from './conversation-repository.js';
import { conversationSummaryJson, type MessageChange, messageDetailJson } from './message.js';

export interface LiveStreamLimits {
  perPrincipal: number;
  total: number;
  heartbeatMs: number;
  /** Events a client may leave unread before it is cut off. */
  maxPending: number;
}

const DEFAULT_LIMITS: LiveStreamLimits = {
  perPrincipal: 5,
  total: 200,
  heartbeatMs: 15_000,
  maxPending: 256,
};

interface Client {
  principal: Principal;
  admin: boolean;
  stream: SSEStreamingApi;
  pending: number;
  chain: Promise<unknown>;
  close(): void;
}

export class MessageStreams {
  private readonly clients = new Set<Client>();
  private readonly limits: LiveStreamLimits;

  constructor(
    private readonly repo: () => ConversationRepository,
    limits: Partial<LiveStreamLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  get size(): number {
    return this.clients.size;
  }

  publish(change: MessageChange): void {
    if (this.clients.size === 0) return;
    const { message } = change;
    let messageData: string | undefined;
    let conversationData: string | undefined;
    for (const client of this.clients) {
      const mine = message.owner !== null && message.owner === client.principal.id;
      if (!mine && !(message.owner === null && client.admin)) continue;
      messageData ??= JSON.stringify(messageDetailJson(message));
      this.send(client, 'message', messageData);
      if (mine) {
        if (conversationData === undefined) {
          const summary = this.repo().conversation(message.owner!, message.nodeId);
          conversationData = summary ? JSON.stringify(conversationSummaryJson(summary)) : '';
        }
        if (conversationData) this.send(client, 'conversation', conversationData);
      }
    }
  }

  /** Opens a stream for `principal`; 429 past the per-caller limit, 503 past the total. */
  open(c: Context, principal: Principal, admin: boolean): Response {
    const mine = [...this.clients].filter((x) => x.principal.id === principal.id).length;
    if (mine >= this.limits.perPrincipal) {
      throw new ProblemError(429, `at most ${this.limits.perPrincipal} live streams per user`, {
        headers: { 'retry-after': '30' },
      });
    }
    if (this.clients.size >= this.limits.total) {
      throw new ProblemError(503, 'too many live streams are open; try again later', {
        headers: { 'retry-after': '30' },
      });
    }
    c.header('x-accel-buffering', 'no');
    return streamSSE(c, async (stream) => {
      let finish: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const heartbeat = setInterval(() => this.write(client, ': ping\n\n'), this.limits.heartbeatMs);
      const client: Client = {
        principal,
        admin,
        stream,
        pending: 0,
        chain: Promise.resolve(),
        close: () => {
          clearInterval(heartbeat);
          this.clients.delete(client);
          finish();
        },
      };
      this.clients.add(client);
      stream.onAbort(() => client.close());
      this.write(client, 'retry: 5000\n: connected\n\n');
      await done;
    });
  }

  /** Ends every stream (the HTTP server is stopping). */
  closeAll(): void {
    for (const client of [...this.clients]) {
      client.close();
      void client.stream.close();
    }
  }

  private send(client: Client, event: string, data: string): void {
    this.write(client, `event: ${event}\ndata: ${data}\n\n`);
  }

  private write(client: Client, text: string): void {
    if (client.pending >= this.limits.maxPending) {
      client.close();
      void client.stream.close();
      return;
    }
    client.pending++;
    client.chain = client.chain
      .then(() => client.stream.write(text))
      .finally(() => {
        client.pending--;
      });
  }
}
