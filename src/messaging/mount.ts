/**
 * /api/v1/messages as a route group of the HTTP server (component `gateway`). The rate limiters
 * and stream tickets live as long as the hub, not the HTTP server, so a server restart does not
 * refill the buckets. Every `message.updated` on the bus reaches the live streams.
 */
import type { Hono } from 'hono';
import type { HubIdentity } from '../auth/hub-identity.js';
import type { RadioStatus } from '../events.js';
import type { RouteProvider } from '../http/routes.js';
import { nodeIdFromNum } from '../mesh/node.js';
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

export interface MessagingMountOptions {
  db: () => Database;
  identity: HubIdentity;
  perSubscriber: RateLimit;
  perNode: RateLimit;
  /** The radio's current status (its node number once connected). */
  radioStatus: () => RadioStatus;
}

export function messagingRouteProvider(options: MessagingMountOptions): RouteProvider {
  const perSubscriber = new RateLimiter(options.perSubscriber);
  const perNode = new RateLimiter(options.perNode);
  const tickets = new StreamTickets();
  return ({ bus, owner }) => {
    const db = options.db();
    const messages = new MessageRepository(db);
    const nodes = new NodeRepository(db);
    const conversations = new ConversationRepository(db);
    const streams = new MessageStreams(() => conversations);
    bus.on(owner, 'message.updated', (change) => streams.publish(change));
    bus.on(owner, 'hub.stopping', () => streams.closeAll());
    const app = messagingRoutes({
      identity: options.identity,
      messages,
      conversations,
      outbound: new OutboundBatcher(db, messages),
      subscriptions: new SubscriptionRepository(db),
      nodeKnown: (nodeId) => nodes.get(nodeId) !== undefined,
      hubNodeId: () => {
        const num = options.radioStatus().myNodeNum ?? messages.hubNodeNum();
        return num === undefined ? null : nodeIdFromNum(num);
      },
      perSubscriber,
      perNode,
      streams,
      tickets,
      publish: (change) => bus.emit('message.updated', change),
    });
    // Hono<AuthEnv> only adds the typed `identity` variable that requireAuth sets itself.
    return { path: '/api/v1/messages', app: app as unknown as Hono, component: 'gateway' };
  };
}
