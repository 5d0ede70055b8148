/**
 * The upstream's messaging storage (src/messaging/messaging-storage.ts) over PostgreSQL (message-repository.ts,
 * subscriptions.ts, rate-limits.ts), so `/api/v1/messages` is the hub's routes
 * (src/messaging/routes.ts) with the same rules.
 *
 * What only the upstream does sits here: a text goes to the site that heard the node most
 * recently, as a `text` command on the site's downlink (downlink-queue.ts), stored in one
 * transaction with the message, its `queued` transition, its idempotency key and the rate
 * tokens, counted in PostgreSQL for every upstream process. The hub's "own node" check (400) has
 * no upstream equivalent: the site refuses a text to its own radio, and `messagingOnAck`
 * (routes.ts) then fails the message with the site's reason.
 */
import type pg from 'pg';
import { z } from 'zod';
import { cursorCodec, readCursor } from '../../../src/http/paging.js';
import type { ProblemError } from '../../../src/http/problem.js';
import type { Message, MessageTransition } from '../../../src/messaging/message.js';
import type {
  ConversationCursor,
  MessagingStorage,
  PriorSend,
  SendInput,
  SendOutcome,
} from '../../../src/messaging/messaging-storage.js';
import { NOT_OURS } from '../../../src/messaging/paging.js';
import { nodeUnknown } from '../../../src/messaging/refusals.js';
import { MESSAGE_ID_PATTERN } from '../../../src/messaging/schemas.js';
import { withTransaction } from '../db/pool.js';
import {
  conversationMessages,
  findIdempotent,
  getConversation,
  getMessage,
  insertUpstreamText,
  listConversations,
  type MessagePosition,
  markConversationRead,
  messageHistory,
  pruneIdempotencyKeys,
  routeFor,
  type StoredIdempotency,
  setNickname,
  type UpstreamMessage,
  unmatchedMessages,
} from './message-repository.js';
import { pruneRateWindows, takeRateTokens } from './rate-limits.js';
import { lapsedSubscription, subscriptionAllows } from './subscriptions.js';

/** How often one process sweeps expired idempotency keys and full rate buckets. */
const PRUNE_EVERY_MS = 60_000;

/** A message's position (created_at, id): conversations page oldest first, the unmatched list newest first. */
const positionCursor = cursorCodec(z.strictObject({ t: z.int(), i: z.string().regex(MESSAGE_ID_PATTERN) }));

const priorSend = (stored: StoredIdempotency): PriorSend => ({
  requestHash: stored.requestHash,
  answer: () => stored,
});

/** Why a send stopped inside the transaction: rolled back, with `outcome` as the answer instead. */
class Answered extends Error {
  constructor(readonly outcome: SendOutcome<UpstreamMessage>) {
    super('answered without storing');
  }
}

export class PgMessagingStorage implements MessagingStorage<UpstreamMessage, MessagePosition> {
  /** The number of radio attempts is known only at the site (it does not travel in the sync records). */
  readonly knowsAttempts = false;
  readonly positions = {
    encode: (m: Message): string => positionCursor.encode({ t: m.createdAt, i: m.id }),
    decode: (value: string): MessagePosition => {
      const { t, i } = readCursor(positionCursor, value, NOT_OURS);
      return { createdAt: t, id: i };
    },
  };
  private prunedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly pool: pg.Pool) {}

  async findIdempotent(owner: string, key: string, now: number): Promise<PriorSend | undefined> {
    const prior = await findIdempotent(this.pool, owner, key, now);
    return prior && priorSend(prior);
  }

  async targetProblem(nodeId: string): Promise<ProblemError | undefined> {
    return (await routeFor(this.pool, nodeId)) === undefined ? nodeUnknown(nodeId, 'any site') : undefined;
  }

  subscriptionAllows(owner: string, nodeId: string, now: number): Promise<boolean> {
    return subscriptionAllows(this.pool, owner, nodeId, now);
  }

  lapsedSubscription(owner: string, nodeId: string, now: number) {
    return lapsedSubscription(this.pool, owner, nodeId, now);
  }

  private async prune(at: number): Promise<void> {
    if (at - this.prunedAt < PRUNE_EVERY_MS) return;
    this.prunedAt = at;
    // Housekeeping only: a failure here must not fail the send.
    await Promise.all([pruneIdempotencyKeys(this.pool, at), pruneRateWindows(this.pool, at)]).catch(() => {});
  }

  async send(input: SendInput): Promise<SendOutcome<UpstreamMessage>> {
    await this.prune(input.at);
    try {
      const message = await withTransaction(this.pool, async (client) => {
        const at = input.at;
        // Locks the subscriber's and the node's buckets first: every send of this subscriber
        // (and so every retry of this key) runs one after the other from here on.
        const rate = await takeRateTokens(client, input.rates, at);
        if (input.key !== undefined) {
          // A retry that raced the first request past the first look: it has committed by now.
          const prior = await findIdempotent(client, input.owner, input.key, at);
          if (prior) throw new Answered({ kind: 'prior', prior: priorSend(prior) });
        }
        if (!rate.ok) {
          throw new Answered({
            kind: 'rate-limited',
            refused: rate.refused,
            retryAfterSeconds: rate.retryAfterSeconds,
          });
        }
        const siteId = await routeFor(client, input.nodeId);
        if (siteId === undefined) throw nodeUnknown(input.nodeId, 'any site');
        return insertUpstreamText(client, {
          siteId,
          subscriber: input.owner,
          subscriberName: input.ownerName,
          nodeId: input.nodeId,
          text: input.text,
          at,
          ...(input.holdHours === undefined ? {} : { holdHours: input.holdHours }),
          ...(input.idempotency ? { idempotency: input.idempotency } : {}),
        });
      });
      return { kind: 'stored', message };
    } catch (error) {
      if (error instanceof Answered) return error.outcome;
      throw error;
    }
  }

  conversations(owner: string, limit: number, after?: ConversationCursor) {
    return listConversations(this.pool, owner, limit, after);
  }

  conversation(owner: string, nodeId: string) {
    return getConversation(this.pool, owner, nodeId);
  }

  markConversationRead(owner: string, nodeId: string, at: number): Promise<UpstreamMessage[]> {
    return markConversationRead(this.pool, owner, nodeId, at);
  }

  conversationMessages(owner: string, nodeId: string, limit: number, after?: MessagePosition) {
    return conversationMessages(this.pool, owner, nodeId, limit, after);
  }

  setNickname(owner: string, nodeId: string, nickname: string | null): Promise<boolean> {
    return setNickname(this.pool, owner, nodeId, nickname);
  }

  unmatched(limit: number, before?: MessagePosition) {
    return unmatchedMessages(this.pool, limit, before);
  }

  message(id: string): Promise<UpstreamMessage | undefined> {
    return getMessage(this.pool, id);
  }

  /** A subscriber's conversation is theirs; a message carried for a site's own user is nobody's here. */
  siteOf(message: UpstreamMessage): string {
    return message.siteId;
  }

  ownerOf(message: UpstreamMessage): string | null {
    return message.subscriber;
  }

  history(message: UpstreamMessage): Promise<MessageTransition[]> {
    return messageHistory(this.pool, message);
  }
}
