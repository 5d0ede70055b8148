/**
 * What the messages API (routes.ts) needs of a store: the one interface both applications
 * implement, the hub over SQLite (sqlite-storage.ts) and the upstream over PostgreSQL
 * (sync/upstream/messaging/pg-storage.ts). The rules — validation, the order of the checks,
 * rate limits per subscriber and per node, subscriptions, who sees what, paging and the JSON and
 * problems — are the routes'; a store only reads and writes (docs/architecture.md "The two
 * applications").
 *
 * "Owner" here is the principal whose conversation a message is (`Principal.id`).
 */

import type { ProblemError } from '../http/problem.js';
import type { RateCheck } from '../kernel/rate-limit.js';
import type { ConversationSummary, Message, MessageTransition } from './message.js';
import type { IdempotencyInput } from './message-repository.js';
import type { LapsedSubscription } from './refusals.js';

type Awaitable<T> = T | Promise<T>;

/** Where a page of conversations ends: the next page starts after it. */
export interface ConversationCursor {
  latestAt: number;
  nodeId: string;
}

/** An earlier send under the same Idempotency-Key: its body's fingerprint and, when asked, its 202. */
export interface PriorSend {
  requestHash: string | undefined;
  answer(): Awaitable<{ response: string; messageId: string }>;
}

/** A rate limit of a send: the bucket (`subscriber:…`, `node:…`) and which of the two it is. */
export interface SendRateCheck extends RateCheck {
  of: 'subscriber' | 'node';
}

/** A send that passed every check up to the rate limits. */
export interface SendInput {
  owner: string;
  ownerName: string;
  nodeId: string;
  text: string;
  at: number;
  /** The hours asked for (or the default); undefined: none asked, the carrier decides. */
  holdHours: number | undefined;
  key: string | undefined;
  /** Stored with the message: a retry with the key gets `response` back. */
  idempotency?: IdempotencyInput;
  /** The limits to pass, in order; a refused send takes nothing of any. */
  rates: SendRateCheck[];
}

export type SendOutcome<M extends Message> =
  | { kind: 'stored'; message: M }
  /** A retry that raced the first request past the first look (the upstream looks again). */
  | { kind: 'prior'; prior: PriorSend }
  | { kind: 'rate-limited'; refused: SendRateCheck; retryAfterSeconds: number };

/** The cursor of a list of messages: how a page's last message is written and read back. */
export interface PositionCodec<P> {
  encode(last: Message): string;
  /** 400 naming `cursor` when it is not one of this list's. */
  decode(value: string): P;
}

export interface MessagingStorage<M extends Message = Message, P = unknown> {
  /** Whether the upstream knows the number of radio attempts of a message (only a hub does). */
  readonly knowsAttempts: boolean;
  readonly positions: PositionCodec<P>;

  findIdempotent(owner: string, key: string, now: number): Awaitable<PriorSend | undefined>;
  /** Why a text to `nodeId` cannot be sent (400, 404), or undefined when it can. */
  targetProblem(nodeId: string): Awaitable<ProblemError | undefined>;
  subscriptionAllows(owner: string, nodeId: string, now: number): Awaitable<boolean>;
  lapsedSubscription(owner: string, nodeId: string, now: number): Awaitable<LapsedSubscription | undefined>;
  /** Takes the rate tokens and stores the text (with its idempotency key) together, or neither. */
  send(input: SendInput): Promise<SendOutcome<M>>;

  conversations(owner: string, limit: number, after?: ConversationCursor): Awaitable<ConversationSummary[]>;
  conversation(owner: string, nodeId: string): Awaitable<ConversationSummary | undefined>;
  /** Marks the conversation's unread inbound messages read; returns those it changed. */
  markConversationRead(owner: string, nodeId: string, at: number): Awaitable<M[]>;
  conversationMessages(owner: string, nodeId: string, limit: number, after?: P): Awaitable<M[]>;
  setNickname(owner: string, nodeId: string, nickname: string | null): Awaitable<boolean>;
  /** Inbound texts nobody could be matched with, newest first. */
  unmatched(limit: number, before?: P): Awaitable<M[]>;

  message(id: string): Awaitable<M | undefined>;
  /** The principal whose conversation `message` is; null when nobody's (unmatched, or site-local). */
  ownerOf(message: M): string | null;
  history(message: M): Awaitable<MessageTransition[]>;
  /** The upstream: the site that carries `message` (its chat says when that site is offline). */
  siteOf?(message: M): string;
}

/** The rate-limit bucket of a subscriber's sends. */
export const subscriberScope = (principal: string): string => `subscriber:${principal}`;
/** The rate-limit bucket of the texts to a node. */
export const nodeScope = (nodeId: string): string => `node:${nodeId}`;
