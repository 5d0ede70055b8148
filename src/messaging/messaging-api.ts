import type { Hono } from 'hono';
import type { AuthEnv } from '../auth/require-auth.js';
import type { HubBus } from '../domain/events.js';
import { nodeIdFromNum } from '../domain/node.js';
import type { RateLimit } from '../kernel/rate-limit.js';
import type { ModuleAuth } from '../module.js';
import type { Database } from '../store/database.js';
import { MessageStreams } from './live-stream.js';
import { messagingRoutes } from './routes.js';
import { SqliteMessagingStorage } from './sqlite-storage.js';
import { StreamTickets } from './stream-tickets.js';

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
  const storage = SqliteMessagingStorage.open(db, () => {
    const num = bus.last('radio.status')?.myNodeNum;
    return num === undefined ? null : nodeIdFromNum(num);
  });
  const streams = new MessageStreams(() => storage.conversationRepository);
  bus.on(owner, 'message.updated', (change) => streams.publish(change));
  bus.on(owner, 'hub.stopping', () => streams.closeAll());
  const app = messagingRoutes({
    identity: options.auth,
    storage,
    rates: { perSubscriber: options.perSubscriber, perNode: options.perNode },
    maxHoldHours: options.maxHoldHours,
    defaultHoldHours: options.maxHoldHours,
    live: { streams, tickets: new StreamTickets() },
    publish: (change) => bus.emit('message.updated', change),
  });
  return app;
}
