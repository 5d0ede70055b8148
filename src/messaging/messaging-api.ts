import type { Hono } from 'hono';
import type { AuthEnv } from '../auth/require-auth.js';
import type { HubBus } from '../domain/events.js';
import { nodeIdFromNum } from '../domain/node.js';
import type { ModuleAuth } from '../module.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { ConversationRepository } from './conversation-repository.js';
import { MessageStreams } from './live-stream.js';
import { MessageRepository } from './message-repository.js';
import { OutboundBatcher } from './outbound-batcher.js';
import { type RateLimit, RateLimiter } from './rate-limiter.js';
import { messagingRoutes } from './routes.js';
import { StreamTickets } from './stream-tickets.js';
import { SubscriptionRepository } from './subscription-repository.js';

export interface MessagingRoutesOptions {
  db: Database;
  bus: HubBus;
  /** Owner of the streams' bus listeners. */
  owner: string;
  auth: ModuleAuth;
  perSubscriber: RateLimit;
  perNode: RateLimit;
  /** MESSAGE_HOLD_HOURS. */
  maxHoldHours: number;
}

/**
 * /api/v1/messages (component `gateway`). The rate limiters and stream tickets live as long as
 * the hub. Every `message.updated` on the bus reaches the live streams. The hub's own node id
 * comes from the retained `radio.status` (its owner, the radio actor, remembers it across
 * restarts).
 */
export function messagingRoutesFor(options: MessagingRoutesOptions): Hono<AuthEnv> {
  const { db, bus, owner } = options;
  const messages = new MessageRepository(db);
  const nodes = new NodeRepository(db);
  const conversations = new ConversationRepository(db);
  const streams = new MessageStreams(() => conversations);
  bus.on(owner, 'message.updated', (change) => streams.publish(change));
  bus.on(owner, 'hub.stopping', () => streams.closeAll());
  const app = messagingRoutes({
    identity: options.auth,
    messages,
    conversations,
    outbound: new OutboundBatcher(db, messages),
    subscriptions: new SubscriptionRepository(db),
    nodeKnown: (nodeId) => nodes.get(nodeId) !== undefined,
    hubNodeId: () => {
      const num = bus.last('radio.status')?.myNodeNum;
      return num === undefined ? null : nodeIdFromNum(num);
    },
    perSubscriber: new RateLimiter(options.perSubscriber),
    perNode: new RateLimiter(options.perNode),
    streams,
    tickets: new StreamTickets(),
    publish: (change) => bus.emit('message.updated', change),
    maxHoldHours: options.maxHoldHours,
  });
  return app;
}
