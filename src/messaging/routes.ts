/**
 * `/api/v1/messages` (spec "Endpoints", DESIGN.md "Data flows" 2–3). Every route needs a bearer
 * token with the role `subscriber` or `admin`; a subscriber only ever sees their own messages.
 *
 * - POST `/`: `{ target_node_id, text }` → 202, the message record (`status: "queued"`) and
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
import { limitBody, readJsonBody } from '../auth/request-body.js';
import { type AuthEnv, authProblem, requireAuth, verifiedIdentity } from '../auth/require-auth.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../auth/users.js';
import { nextPageHeaders } from '../http/paging.js';
import { ProblemError } from '../http/problem.js';
import type { ConversationRepository } from './conversation-repository.js';
import type { MessageStreams } from './live-stream.js';
import {
  conversationSummaryJson,
  type Message,
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
  pageLimit,
} from './paging.js';
import type { RateLimiter } from './rate-limiter.js';
import { MESSAGE_ID_PATTERN } from './schemas.js';
import type { StreamTickets } from './stream-tickets.js';
import type { SubscriptionRepository } from './subscription-repository.js';
import {
  bodyProblem,
  nicknameBodySchema,
  outboundMessageSchema,
  parseIdempotencyKey,
  parseNodeIdParam,
  requestHash,
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
  now?: () => number;
}

const MESSAGING_ROLES = [SUBSCRIBER_ROLE, ADMIN_ROLE];

function isAdmin(principal: Principal): boolean {
  return principal.roles.includes(ADMIN_ROLE);
}

function withNext(c: Context, limit: number, cursor: string | undefined): Record<string, string> {
  return nextPageHeaders(c.req.path, { limit: String(limit) }, cursor);
}

export function messagingRoutes(deps: MessagingRoutesDeps): Hono<AuthEnv> {
  const { identity, messages, conversations, subscriptions } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const auth = requireAuth(identity.verifier, { roles: MESSAGING_ROLES });
  const principalOf = (c: Context<AuthEnv>) => identity.principalOf(verifiedIdentity(c));

  app.post('/', limitBody(4096), auth, async (c) => {
    const principal = principalOf(c);
    const key = parseIdempotencyKey(c.req.header('idempotency-key'));
    const parsed = outboundMessageSchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const body = parsed.data;
    const hash = key === undefined ? '' : requestHash(body);
    if (key !== undefined) {
      // A retry: the first request's 202 again, whether it is committed or still waiting to be.
      const waiting = deps.outbound.pending(principal.id, key);
      const prior = waiting ? undefined : messages.findIdempotent(principal.id, key, now());
      const priorHash = waiting?.requestHash ?? prior?.requestHash;
      if (priorHash !== undefined && priorHash !== hash) {
        throw new ProblemError(422, 'this Idempotency-Key was used with a different request body', {
          errors: [{ field: 'Idempotency-Key', message: 'already used for another message' }],
        });
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
      throw refusal(subscriptions, principal.id, target, now());
    }
    // Both limits are checked before either is consumed: a refused request costs nothing.
    const bySubscriber = deps.perSubscriber.check(principal.id);
    if (!bySubscriber.ok)
      throw rateProblem(deps.perSubscriber, 'you may send', bySubscriber.retryAfterSeconds);
    const byNode = deps.perNode.check(target);
    if (!byNode.ok) throw rateProblem(deps.perNode, `${target} may receive`, byNode.retryAfterSeconds);
    deps.perSubscriber.consume(principal.id);
    deps.perNode.consume(target);
    const message = await deps.outbound.submit({
      owner: principal.id,
      ownerName: principal.name,
      nodeId: target,
      senderNodeId: deps.hubNodeId(),
      text: body.text,
      at: now(),
      ...(key === undefined
        ? {}
        : {
            idempotency: {
              key,
              requestHash: hash,
              response: (m: Message) => JSON.stringify(messageRecordJson(m)),
            },
          }),
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
    const more = page.length > limit;
    const rows = more ? page.slice(0, limit) : page;
    const last = rows[rows.length - 1];
    const next =
      more && last ? encodeConversationCursor({ latestAt: last.latestAt, nodeId: last.nodeId }) : undefined;
    const headers = withNext(c, limit, next);
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
    const more = page.length > limit;
    const rows = more ? page.slice(0, limit) : page;
    const next = more ? encodeRowCursor(rows[rows.length - 1]!.rowId) : undefined;
    const headers = withNext(c, limit, next);
    return c.json({ data: rows.map(messageRecordJson) }, 200, headers);
  });

  app.patch('/conversations/:node_id', limitBody(1024), auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const parsed = nicknameBodySchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw bodyProblem(parsed.error);
    const nickname = parsed.data.nickname === null ? null : parsed.data.nickname.trim();
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
    const more = page.length > limit;
    const rows = more ? page.slice(0, limit) : page;
    const next = more ? encodeRowCursor(rows[rows.length - 1]!.rowId) : undefined;
    const headers = withNext(c, limit, next);
    return c.json({ data: rows.map((m) => messageDetailJson(m)) }, 200, headers);
  });

  app.get('/:id', auth, (c) => {
    const principal = principalOf(c);
    const id = c.req.param('id');
    if (!MESSAGE_ID_PATTERN.test(id)) {
      throw new ProblemError(400, 'invalid id', {
        errors: [{ field: 'id', message: 'must be a message id (a UUID)' }],
      });
    }
    const message = messages.get(id);
    const visible =
      message && (message.owner === principal.id || (message.owner === null && isAdmin(principal)));
    if (!message || !visible) throw new ProblemError(404, `no message ${id}`);
    return c.json(messageDetailJson(message, messages.history(message.rowId)));
  });

  return app;
}

function rateProblem(limiter: RateLimiter, who: string, retryAfterSeconds: number): ProblemError {
  const { count, windowMs } = limiter.limit;
  return new ProblemError(
    429,
    `rate limit exceeded: ${who} at most ${count} messages per ${window(windowMs)}; retry in ${retryAfterSeconds} s`,
    { headers: { 'retry-after': String(retryAfterSeconds) } },
  );
}

function window(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}

/** The 403 for a send no subscription allows; a lapsed one says when it ended and how to renew. */
function refusal(
  subscriptions: SubscriptionRepository,
  subscriber: string,
  target: string,
  at: number,
): ProblemError {
  const lapsed = subscriptions.lapsed(subscriber, target, at);
  if (!lapsed) return new ProblemError(403, `your subscription does not allow messaging ${target}`);
  const ended = new Date(lapsed.expiresAt!).toISOString();
  const paid = lapsed.source === 'billing' && lapsed.reference !== null;
  const how = paid
    ? `renew it with POST /api/v1/billing/subscriptions/${lapsed.reference}/renew and pay the invoice`
    : 'ask the hub operator to renew it';
  return new ProblemError(403, `your subscription lapsed at ${ended}; ${how}`, {
    type: 'urn:meshhub:problem:subscription-lapsed',
    lapsed_at: ended,
    ...(paid
      ? {
          billing_subscription_id: lapsed.reference,
          renew: `/api/v1/billing/subscriptions/${lapsed.reference}/renew`,
        }
      : {}),
  });
}
