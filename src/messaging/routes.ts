/**
 * `/api/v1/messages` (spec "Endpoints", docs/architecture.md "Data flows" 2–3). Every route needs a bearer
 * token with the role `subscriber` or `admin`; a subscriber only ever sees their own messages.
 *
 * - POST `/`: `{ target_node_id, text, hold_hours? }` → 202, the message record (`status: "queued"`) and
 *   `Location: /api/v1/messages/{id}`. Checks, in order: token (401), role (403), body (400),
 *   Idempotency-Key replay (the first 202 again; 422 for the same key with another body),
 *   the hub's own node (400), unknown node (404), subscription (403; admins need none),
 *   rate limits per subscriber and per node (429 + Retry-After). A refused request stores nothing.
 * - GET `/conversations`: one summary per node the caller has talked with, newest first.
 * - GET `/conversations/{node_id}`: the conversation, oldest first; marks inbound messages read.
 * - PATCH `/conversations/{node_id}`: `{ "nickname": "…" | null }` sets the caller's name for the node.
 * - GET `/{id}`: one of the caller's messages with its delivery history.
 * - GET `/stream`, POST `/stream/tickets`: the live stream (live-stream.ts, stream-tickets.ts).
 * - GET `/unmatched` (admins): inbound texts nobody could be matched with, newest first.
 * Lists page with `limit` and an opaque `cursor` announced in `Link: <…>; rel="next"`.
 */
import { type Context, Hono } from 'hono';
import type { HubIdentity, Principal } from '../auth/hub-identity.js';
import { AuthError, bearerToken } from '../auth/jwt-verifier.js';
import { limitBody } from '../auth/request-body.js';
import { type AuthEnv, authProblem, requireAuth, verifiedIdentity } from '../auth/require-auth.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../auth/users.js';
import { ProblemError } from '../http/problem.js';
import type { ConversationRepository } from './conversation-repository.js';
import type { MessageStreams } from './live-stream.js';
import {
  conversationSummaryJson,
  type MessageChange,
  messageDetailJson,
  messageRecordJson,
} from './message.js';
import type { MessageRepository } from './message-repository.js';
import type { OutboundBatcher } from './outbound-batcher.js';
import {
  decodeConversationCursor,
  decodeRowCursor,
  encodeConversationCursor,
  encodeRowCursor,
  listPage,
  pageLimit,
} from './paging.js';
import type { RateLimiter } from './rate-limiter.js';
import { idempotencyKeyReused, rateProblem, subscriptionRefusal } from './refusals.js';
import type { StreamTickets } from './stream-tickets.js';
import type { SubscriptionRepository } from './subscription-repository.js';
import {
  idempotencyFor,
  parseMessageIdParam,
  parseNodeIdParam,
  readNickname,
  readSendRequest,
} from './validation.js';

export interface MessagingRoutesDeps {
  identity: Pick<HubIdentity, 'verifier' | 'principalOf'>;
  messages: MessageRepository;
  conversations: ConversationRepository;
  /** Stores new outbound messages, several per commit. */
  outbound: OutboundBatcher;
  subscriptions: SubscriptionRepository;
  /** Whether the hub has heard of the node (the node table). */
  nodeKnown: (nodeId: string) => boolean;
  /** The hub radio's own node id, when known. */
  hubNodeId: () => string | null;
  perSubscriber: RateLimiter;
  perNode: RateLimiter;
  streams: MessageStreams;
  tickets: StreamTickets;
  publish: (change: MessageChange) => void;
  /** MESSAGE_HOLD_HOURS: the default and the most `hold_hours` may ask for; 0: no holding. */
  maxHoldHours?: number;
  now?: () => number;
}

const MESSAGING_ROLES = [SUBSCRIBER_ROLE, ADMIN_ROLE];

function isAdmin(principal: Principal): boolean {
  return principal.roles.includes(ADMIN_ROLE);
}

export function messagingRoutes(deps: MessagingRoutesDeps): Hono<AuthEnv> {
  const { identity, messages, conversations, subscriptions } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const auth = requireAuth(identity.verifier, { roles: MESSAGING_ROLES });
  const principalOf = (c: Context<AuthEnv>) => identity.principalOf(verifiedIdentity(c));

  app.post('/', limitBody(4096), auth, async (c) => {
    const principal = principalOf(c);
    const maxHold = deps.maxHoldHours ?? 0;
    const { key, body, hash } = await readSendRequest(c, maxHold);
    if (key !== undefined) {
      // A retry: the first request's 202 again, whether it is committed or still waiting to be.
      const waiting = deps.outbound.pending(principal.id, key);
      const prior = waiting ? undefined : messages.findIdempotent(principal.id, key, now());
      const priorHash = waiting?.requestHash ?? prior?.requestHash;
      if (priorHash !== undefined && priorHash !== hash) {
        throw idempotencyKeyReused();
      }
      if (waiting || prior) {
        const first = waiting ? await waiting.stored : undefined;
        const response = first ? JSON.stringify(messageRecordJson(first)) : prior!.response;
        return c.body(response, 202, {
          'content-type': 'application/json',
          location: `/api/v1/messages/${first?.id ?? prior!.messageId}`,
          'idempotent-replayed': 'true',
        });
      }
    }
    const target = body.target_node_id;
    if (target === deps.hubNodeId()) {
      throw new ProblemError(400, 'invalid target_node_id', {
        errors: [{ field: 'target_node_id', message: "is the hub's own radio" }],
      });
    }
    if (!deps.nodeKnown(target)) throw new ProblemError(404, `no node ${target} is known to this hub`);
    if (!isAdmin(principal) && !subscriptions.allows(principal.id, target, now())) {
      throw subscriptionRefusal(target, subscriptions.lapsed(principal.id, target, now()));
    }
    // Both limits are checked before either is consumed: a refused request costs nothing.
    const bySubscriber = deps.perSubscriber.check(principal.id);
    if (!bySubscriber.ok)
      throw rateProblem(deps.perSubscriber.limit, 'you may send', bySubscriber.retryAfterSeconds);
    const byNode = deps.perNode.check(target);
    if (!byNode.ok) throw rateProblem(deps.perNode.limit, `${target} may receive`, byNode.retryAfterSeconds);
    deps.perSubscriber.consume(principal.id);
    deps.perNode.consume(target);
    const at = now();
    const holdHours = body.hold_hours ?? maxHold;
    const message = await deps.outbound.submit({
      owner: principal.id,
      ownerName: principal.name,
      nodeId: target,
      senderNodeId: deps.hubNodeId(),
      text: body.text,
      at,
      holdUntil: at + Math.round(holdHours * 3_600_000),
      ...idempotencyFor(key, hash),
    });
    deps.publish({ message, kind: 'created' });
    return c.json(messageRecordJson(message), 202, { location: `/api/v1/messages/${message.id}` });
  });

  app.get('/conversations', auth, (c) => {
    const principal = principalOf(c);
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const after = cursorParam === undefined ? undefined : decodeConversationCursor(cursorParam);
    const page = conversations.conversations(principal.id, limit + 1, after);
    const { rows, headers } = listPage(c.req.path, page, limit, encodeConversationCursor);
    return c.json({ data: rows.map(conversationSummaryJson) }, 200, headers);
  });

  app.get('/conversations/:node_id', auth, (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const afterRowId = cursorParam === undefined ? 0 : decodeRowCursor(cursorParam);
    for (const message of conversations.markConversationRead(principal.id, nodeId, now())) {
      deps.publish({ message, kind: 'status', previousStatus: 'received' });
    }
    const page = conversations.conversationMessages(principal.id, nodeId, limit + 1, afterRowId);
    const { rows, headers } = listPage(c.req.path, page, limit, (last) => encodeRowCursor(last.rowId));
    return c.json({ data: rows.map(messageRecordJson) }, 200, headers);
  });

  app.patch('/conversations/:node_id', limitBody(1024), auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const nickname = await readNickname(c);
    if (!conversations.setNickname(principal.id, nodeId, nickname)) {
      throw new ProblemError(404, `you have no conversation with ${nodeId}`);
    }
    return c.json(conversationSummaryJson(conversations.conversation(principal.id, nodeId)!));
  });

  app.post('/stream/tickets', auth, (c) => {
    const { ticket, expiresIn } = deps.tickets.issue(principalOf(c));
    return c.json({ ticket, expires_in: expiresIn }, 201, { 'cache-control': 'no-store' });
  });

  app.get('/stream', async (c) => {
    const ticket = c.req.query('ticket');
    let principal: Principal;
    if (ticket !== undefined) {
      const redeemed = deps.tickets.redeem(ticket);
      if (!redeemed)
        throw authProblem(new AuthError('malformed', 'the stream ticket is unknown, used or expired'));
      principal = redeemed;
    } else {
      const token = bearerToken(c.req.header('authorization'));
      if (!token)
        throw authProblem(new AuthError('missing', 'a bearer token or a stream ticket is required'));
      try {
        principal = identity.principalOf(await identity.verifier.verify(token));
      } catch (error) {
        if (error instanceof AuthError) throw authProblem(error);
        throw error;
      }
      if (!principal.roles.some((r) => MESSAGING_ROLES.includes(r))) {
        throw new ProblemError(403, 'this needs the role subscriber or admin');
      }
    }
    return deps.streams.open(c, principal, isAdmin(principal));
  });

  app.get('/unmatched', auth, (c) => {
    const principal = principalOf(c);
    if (!isAdmin(principal))
      throw new ProblemError(403, 'only admins see texts nobody could be matched with');
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const before = cursorParam === undefined ? undefined : decodeRowCursor(cursorParam);
    const page = conversations.unmatched(limit + 1, before);
    const { rows, headers } = listPage(c.req.path, page, limit, (last) => encodeRowCursor(last.rowId));
    return c.json({ data: rows.map((m) => messageDetailJson(m)) }, 200, headers);
  });

  app.get('/:id', auth, (c) => {
    const principal = principalOf(c);
    const id = parseMessageIdParam(c.req.param('id'));
    const message = messages.get(id);
    const visible =
      message && (message.owner === principal.id || (message.owner === null && isAdmin(principal)));
    if (!message || !visible) throw new ProblemError(404, `no message ${id}`);
    return c.json(messageDetailJson(message, messages.history(message.rowId)));
  });

  return app;
}
