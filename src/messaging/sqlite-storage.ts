/**
 * The hub's messaging storage (messaging-storage.ts) over SQLite: the message, conversation and
 * subscription repositories, the outbound batcher that stores new texts several per commit, and
 * the rate limits in memory (src/kernel/rate-limit.ts; a restart refills the buckets).
 */
import { ProblemError } from '../http/problem.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { ConversationRepository } from './conversation-repository.js';
import { type Message, type MessageTransition, messageRecordJson } from './message.js';
import { MessageRepository } from './message-repository.js';
import type {
  ConversationCursor,
  MessagingStorage,
  PriorSend,
  SendInput,
  SendOutcome,
} from './messaging-storage.js';
import { OutboundBatcher } from './outbound-batcher.js';
import { decodeRowCursor, encodeRowCursor } from './paging.js';
import { nodeUnknown } from './refusals.js';
import { SubscriptionRepository } from './subscription-repository.js';

export interface SqliteMessagingStorageDeps {
  messages: MessageRepository;
  conversations: ConversationRepository;
  /** Stores new outbound messages, several per commit. */
  outbound: OutboundBatcher;
  subscriptions: SubscriptionRepository;
  /** Whether the hub has heard of the node (the node table). */
  nodeKnown: (nodeId: string) => boolean;
  /** The hub radio's own node id, when known. */
  hubNodeId: () => string | null;
  /** The rate-limit buckets (per subscriber and per node); their limits come with each check. */
  limiter?: RateLimiter;
}

/** Two buckets per send (subscriber and node), as many keys as the two limiters had before. */
const MAX_BUCKETS = 200_000;

export class SqliteMessagingStorage implements MessagingStorage<Message, number> {
  readonly knowsAttempts = true;
  /** A message row id: conversations page oldest first after it, the unmatched list newest first before it. */
  readonly positions = { encode: (last: Message) => encodeRowCursor(last.rowId), decode: decodeRowCursor };
  private readonly limiter: RateLimiter;

  /** The store of the hub database `db`, whose radio is `hubNodeId` (null while unknown). */
  static open(db: Database, hubNodeId: () => string | null): SqliteMessagingStorage {
    const messages = new MessageRepository(db);
    const nodes = new NodeRepository(db);
    return new SqliteMessagingStorage({
      messages,
      conversations: new ConversationRepository(db),
      outbound: new OutboundBatcher(db, messages),
      subscriptions: new SubscriptionRepository(db),
      nodeKnown: (nodeId) => nodes.get(nodeId) !== undefined,
      hubNodeId,
    });
  }

  /** The conversation repository (the live stream reads summaries from it). */
  get conversationRepository(): ConversationRepository {
    return this.deps.conversations;
  }

  constructor(private readonly deps: SqliteMessagingStorageDeps) {
    this.limiter = deps.limiter ?? new RateLimiter({ maxKeys: MAX_BUCKETS });
  }

  findIdempotent(owner: string, key: string, now: number): PriorSend | undefined {
    const waiting = this.deps.outbound.pending(owner, key);
    if (waiting) {
      return {
        requestHash: waiting.requestHash,
        answer: async () => {
          const first = await waiting.stored;
          return { response: JSON.stringify(messageRecordJson(first)), messageId: first.id };
        },
      };
    }
    const prior = this.deps.messages.findIdempotent(owner, key, now);
    return prior && { requestHash: prior.requestHash, answer: () => prior };
  }

  targetProblem(nodeId: string): ProblemError | undefined {
    if (nodeId === this.deps.hubNodeId()) {
      return new ProblemError(400, 'invalid target_node_id', {
        errors: [{ field: 'target_node_id', message: "is the hub's own radio" }],
      });
    }
    return this.deps.nodeKnown(nodeId) ? undefined : nodeUnknown(nodeId, 'this hub');
  }

  subscriptionAllows(owner: string, nodeId: string, now: number): boolean {
    return this.deps.subscriptions.allows(owner, nodeId, now);
  }

  lapsedSubscription(owner: string, nodeId: string, now: number) {
    return this.deps.subscriptions.lapsed(owner, nodeId, now);
  }

  async send(input: SendInput): Promise<SendOutcome<Message>> {
    const rate = this.limiter.take(input.rates);
    if (!rate.ok)
      return { kind: 'rate-limited', refused: rate.refused, retryAfterSeconds: rate.retryAfterSeconds };
    const message = await this.deps.outbound.submit({
      owner: input.owner,
      ownerName: input.ownerName,
      nodeId: input.nodeId,
      senderNodeId: this.deps.hubNodeId(),
      text: input.text,
      at: input.at,
      holdUntil: input.at + Math.round((input.holdHours ?? 0) * 3_600_000),
      ...(input.idempotency ? { idempotency: input.idempotency } : {}),
    });
    return { kind: 'stored', message };
  }

  conversations(owner: string, limit: number, after?: ConversationCursor) {
    return this.deps.conversations.conversations(owner, limit, after);
  }

  conversation(owner: string, nodeId: string) {
    return this.deps.conversations.conversation(owner, nodeId);
  }

  markConversationRead(owner: string, nodeId: string, at: number): Message[] {
    return this.deps.conversations.markConversationRead(owner, nodeId, at);
  }

  conversationMessages(owner: string, nodeId: string, limit: number, after?: number): Message[] {
    return this.deps.conversations.conversationMessages(owner, nodeId, limit, after);
  }

  setNickname(owner: string, nodeId: string, nickname: string | null): boolean {
    return this.deps.conversations.setNickname(owner, nodeId, nickname);
  }

  unmatched(limit: number, before?: number): Message[] {
    return this.deps.conversations.unmatched(limit, before);
  }

  message(id: string): Message | undefined {
    return this.deps.messages.get(id);
  }

  ownerOf(message: Message): string | null {
    return message.owner;
  }

  history(message: Message): MessageTransition[] {
    return this.deps.messages.history(message.rowId);
  }
}
