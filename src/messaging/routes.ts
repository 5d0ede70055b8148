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
 *
 * The same routes serve the upstream's `/api/v1/messages` (sync/upstream/messaging), over its
 * PostgreSQL storage (messaging-storage.ts is the interface): every check, its order, the JSON and
 * the problems exist here once. Without `live` (the upstream) `/stream` and `/stream/tickets`
 * answer 404.
 */
import { type Context, Hono } from 'hono';
import type { Principal } from '../auth/hub-identity.js';
import { AuthError, bearerToken, type TokenVerifier, type VerifiedIdentity } from '../auth/jwt-verifier.js';
import { limitBody } from '../auth/request-body.js';
import { type AuthEnv, authProblem, requireAuth, verifiedIdentity } from '../auth/require-auth.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../auth/user-service.js';
import {
  AUTH_PROBLEMS,
  BODY_PROBLEMS,
  COMMON_PROBLEMS,
  HEADERS,
  pagedListResponses,
  problem,
} from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { ProblemError } from '../http/problem.js';
import type { RateLimit } from '../kernel/rate-limit.js';
import type { MessageStreams } from './live-stream.js';
import {
  conversationSummaryJson,
  type Message,
  type MessageChange,
  type MessageDetailJson,
  type MessageTransition,
  messageDetailJson,
  messageRecordJson,
} from './message.js';
import {
  type MessagingStorage,
  nodeScope,
  type PriorSend,
  type SendRateCheck,
  subscriberScope,
} from './messaging-storage.js';
import { decodeConversationCursor, encodeConversationCursor, listPage, pageLimit } from './paging.js';
import { idempotencyKeyReused, rateProblem, subscriptionRefusal } from './refusals.js';
import {
  conversationListSchema,
  conversationSummarySchema,
  idempotencyHeaderSchema,
  messageDetailListSchema,
  messageDetailSchema,
  messageIdPathSchema,
  messageRecordListSchema,
  messageRecordSchema,
  nicknameBodySchema,
  nodeIdPathSchema,
  outboundMessageSchema,
  pageQuerySchema,
  streamQuerySchema,
  streamTicketSchema,
} from './schemas.js';
import type { StreamTickets } from './stream-tickets.js';
import {
  idempotencyFor,
  parseMessageIdParam,
  parseNodeIdParam,
  readNickname,
  readSendRequest,
} from './validation.js';

export interface MessagingRoutesDeps<M extends Message, P> {
  identity: { verifier: TokenVerifier; principalOf(v: VerifiedIdentity): Principal };
  storage: MessagingStorage<M, P>;
  /** The limits per subscriber and per node. */
  rates: { perSubscriber: RateLimit; perNode: RateLimit };
  /** The most `hold_hours` may ask for. */
  maxHoldHours: number;
  /** The hold of a send that asks for none; undefined: none (the carrier decides). */
  defaultHoldHours?: number;
  /** The live stream (the hub); without it `/stream` answers 404. */
  live?: { streams: MessageStreams; tickets: StreamTickets };
  /** Told of every message a route creates or changes. */
  publish?: (change: MessageChange) => void;
  now?: () => number;
}

const MESSAGING_ROLES = [SUBSCRIBER_ROLE, ADMIN_ROLE];

function isAdmin(principal: Principal): boolean {
  return principal.roles.includes(ADMIN_ROLE);
}

/** The refusals of every bearer-protected messaging route. */
const messagingAuth = {
  401: AUTH_PROBLEMS.unauthorized,
  403: AUTH_PROBLEMS.noRole,
  503: AUTH_PROBLEMS.idpDown,
};

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const messagingOperations = describeRoutes('/api/v1/messages', [
  {
    method: 'post',
    path: '/',
    operationId: 'sendMessage',
    tag: 'messaging',
    summary: 'Send a text to a mesh node',
    description:
      'Checked in order: token, role, body, Idempotency-Key replay, the hub’s own node, unknown node, subscription, rate limits. A refused request stores nothing.',
    security: 'bearer',
    params: { header: idempotencyHeaderSchema },
    body: { schema: outboundMessageSchema },
    responses: {
      202: {
        description: 'Accepted and queued: the message record with `status: "queued"`.',
        body: messageRecordSchema,
        headers: {
          Location: { description: '`/api/v1/messages/{id}`: the message’s current state.' },
          'Idempotent-Replayed': { description: '`true` when this answers a retry with the same key.' },
        },
      },
      400: COMMON_PROBLEMS.badInput,
      ...messagingAuth,
      403: problem('A role is missing, or the subscription does not allow messaging this node.'),
      404: problem('No node with this id is known to the hub.'),
      ...BODY_PROBLEMS,
      422: problem('This Idempotency-Key was used with another body.'),
      429: problem('Rate limit exceeded, per subscriber or per node.', {
        'Retry-After': HEADERS.retryAfter,
      }),
    },
  },
  {
    method: 'get',
    path: '/conversations',
    operationId: 'listConversations',
    tag: 'messaging',
    summary: 'One summary per node the caller has talked with, newest first',
    security: 'bearer',
    params: { query: pageQuerySchema },
    responses: {
      ...pagedListResponses(conversationListSchema),
      ...messagingAuth,
    },
  },
  {
    method: 'get',
    path: '/conversations/{node_id}',
    operationId: 'getConversation',
    tag: 'messaging',
    summary: 'The conversation with a node, oldest first; marks its texts to the caller read',
    security: 'bearer',
    params: { path: nodeIdPathSchema, query: pageQuerySchema },
    responses: {
      ...pagedListResponses(messageRecordListSchema),
      ...messagingAuth,
    },
  },
  {
    method: 'patch',
    path: '/conversations/{node_id}',
    operationId: 'setConversationNickname',
    tag: 'messaging',
    summary: 'The caller’s own name for a node',
    security: 'bearer',
    params: { path: nodeIdPathSchema },
    body: { schema: nicknameBodySchema },
    responses: {
      200: { description: 'The conversation summary afterwards.', body: conversationSummarySchema },
      400: COMMON_PROBLEMS.badInput,
      ...messagingAuth,
      404: problem('The caller has no conversation with this node.'),
      ...BODY_PROBLEMS,
    },
  },
  {
    method: 'post',
    path: '/stream/tickets',
    operationId: 'issueStreamTicket',
    tag: 'messaging',
    summary: 'A single-use ticket to open the stream without a token in the URL (EventSource)',
    security: 'bearer',
    responses: {
      201: { description: 'Valid for 30 s, once.', body: streamTicketSchema },
      ...messagingAuth,
    },
  },
  {
    method: 'get',
    path: '/stream',
    operationId: 'streamMessages',
    tag: 'messaging',
    summary: 'The caller’s messages as they change (Server-Sent Events)',
    description:
      '`event: message`: a MessageDetail without `history`; `event: conversation`: that conversation’s summary afterwards; `: ping` comments every 15 s. Authenticate with a bearer token or `?ticket=`.',
    security: 'optional-bearer',
    params: { query: streamQuerySchema },
    responses: {
      200: { description: 'The event stream.', contentType: 'text/event-stream' },
      401: AUTH_PROBLEMS.unauthorized,
      403: AUTH_PROBLEMS.noRole,
      429: problem('Too many streams open for this user.', { 'Retry-After': HEADERS.retryAfter }),
      503: problem('Too many streams open, or the identity provider cannot be reached.', {
        'Retry-After': HEADERS.retryAfter,
      }),
    },
  },
  {
    method: 'get',
    path: '/unmatched',
    operationId: 'listUnmatchedMessages',
    tag: 'messaging',
    summary: 'Admins: inbound texts nobody could be matched with, newest first',
    security: 'bearer',
    params: { query: pageQuerySchema },
    responses: {
      ...pagedListResponses(messageDetailListSchema),
      ...messagingAuth,
    },
  },
  {
    method: 'get',
    path: '/{id}',
    operationId: 'getMessage',
    tag: 'messaging',
    summary: 'One of the caller’s messages with its delivery history',
    security: 'bearer',
    params: { path: messageIdPathSchema },
    responses: {
      200: { description: 'The message.', body: messageDetailSchema },
      400: COMMON_PROBLEMS.badInput,
      ...messagingAuth,
      404: problem('No such message of the caller’s.'),
    },
  },
]);

/** The caller's own messages; for admins also the inbound ones nobody could be matched with. */
function visibleTo(message: Message, owner: string | null, principal: Principal): boolean {
  if (owner !== null) return owner === principal.id;
  return message.owner === null && message.direction === 'inbound' && isAdmin(principal);
}

/** The 202 of an earlier send under the same Idempotency-Key, or 422 when its body was another. */
async function replay(c: Context, prior: PriorSend, hash: string): Promise<Response> {
  if (prior.requestHash !== undefined && prior.requestHash !== hash) throw idempotencyKeyReused();
  const { response, messageId } = await prior.answer();
  return c.body(response, 202, {
    'content-type': 'application/json',
    location: `/api/v1/messages/${messageId}`,
    'idempotent-replayed': 'true',
  });
}

export function messagingRoutes<M extends Message, P>(deps: MessagingRoutesDeps<M, P>): Hono<AuthEnv> {
  const { identity, storage, rates } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const auth = requireAuth(identity.verifier, { roles: MESSAGING_ROLES });
  const principalOf = (c: Context<AuthEnv>) => identity.principalOf(verifiedIdentity(c));
  /** The hub knows a message's radio attempts; the upstream leaves the optional `attempts` out. */
  const detailJson = (m: Message, history?: MessageTransition[]): MessageDetailJson => {
    const json = messageDetailJson(m, history);
    if (storage.knowsAttempts) return json;
    const { attempts: _radioOnly, ...rest } = json;
    const siteId = storage.siteOf?.(m as M);
    return siteId === undefined ? rest : { ...rest, site_id: siteId };
  };

  app.post('/', limitBody(4096), auth, async (c) => {
    const principal = principalOf(c);
    const { key, body, hash } = await readSendRequest(c, deps.maxHoldHours);
    if (key !== undefined) {
      // A retry: the first request's 202 again, whether it is committed or still waiting to be.
      const prior = await storage.findIdempotent(principal.id, key, now());
      if (prior) return replay(c, prior, hash);
    }
    const target = body.target_node_id;
    const refused = await storage.targetProblem(target);
    if (refused) throw refused;
    if (!isAdmin(principal) && !(await storage.subscriptionAllows(principal.id, target, now()))) {
      throw subscriptionRefusal(target, await storage.lapsedSubscription(principal.id, target, now()));
    }
    // Both limits are checked before either is taken: a refused request costs nothing.
    const checks: SendRateCheck[] = [
      { of: 'subscriber', key: subscriberScope(principal.id), limit: rates.perSubscriber },
      { of: 'node', key: nodeScope(target), limit: rates.perNode },
    ];
    const outcome = await storage.send({
      owner: principal.id,
      ownerName: principal.name,
      nodeId: target,
      text: body.text,
      at: now(),
      holdHours: body.hold_hours ?? deps.defaultHoldHours,
      key,
      ...idempotencyFor(key, hash),
      rates: checks,
    });
    if (outcome.kind === 'prior') return replay(c, outcome.prior, hash);
    if (outcome.kind === 'rate-limited') {
      const who = outcome.refused.of === 'node' ? `${target} may receive` : 'you may send';
      throw rateProblem(outcome.refused.limit, who, outcome.retryAfterSeconds);
    }
    const { message } = outcome;
    deps.publish?.({ message, kind: 'created' });
    return c.json(messageRecordJson(message), 202, { location: `/api/v1/messages/${message.id}` });
  });

  app.get('/conversations', auth, async (c) => {
    const principal = principalOf(c);
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const after = cursorParam === undefined ? undefined : decodeConversationCursor(cursorParam);
    const page = await storage.conversations(principal.id, limit + 1, after);
    const { rows, headers } = listPage(c.req.path, page, limit, encodeConversationCursor);
    return c.json({ data: rows.map(conversationSummaryJson) }, 200, headers);
  });

  app.get('/conversations/:node_id', auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const after = cursorParam === undefined ? undefined : storage.positions.decode(cursorParam);
    for (const message of await storage.markConversationRead(principal.id, nodeId, now())) {
      deps.publish?.({ message, kind: 'status', previousStatus: 'received' });
    }
    const page = await storage.conversationMessages(principal.id, nodeId, limit + 1, after);
    const { rows, headers } = listPage(c.req.path, page, limit, storage.positions.encode);
    return c.json({ data: rows.map(messageRecordJson) }, 200, headers);
  });

  app.patch('/conversations/:node_id', limitBody(1024), auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const nickname = await readNickname(c);
    if (!(await storage.setNickname(principal.id, nodeId, nickname))) {
      throw new ProblemError(404, `you have no conversation with ${nodeId}`);
    }
    return c.json(conversationSummaryJson((await storage.conversation(principal.id, nodeId))!));
  });

  // Before `/:id`, which would otherwise take "stream" for a message id.
  const live = deps.live;
  if (live) {
    app.post('/stream/tickets', auth, (c) => {
      const { ticket, expiresIn } = live.tickets.issue(principalOf(c));
      return c.json({ ticket, expires_in: expiresIn }, 201, { 'cache-control': 'no-store' });
    });

    app.get('/stream', async (c) => {
      const ticket = c.req.query('ticket');
      let principal: Principal;
      if (ticket !== undefined) {
        const redeemed = live.tickets.redeem(ticket);
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
      return live.streams.open(c, principal, isAdmin(principal));
    });
  } else {
    // The upstream: statuses and replies reach it in batches, so a client polls instead.
    const noStream = () => {
      throw new ProblemError(
        404,
        'the upstream has no live message stream; poll GET /api/v1/messages/conversations/{node_id} instead',
      );
    };
    app.get('/stream', noStream);
    app.post('/stream/tickets', noStream);
  }

  app.get('/unmatched', auth, async (c) => {
    const principal = principalOf(c);
    if (!isAdmin(principal))
      throw new ProblemError(403, 'only admins see texts nobody could be matched with');
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const before = cursorParam === undefined ? undefined : storage.positions.decode(cursorParam);
    const page = await storage.unmatched(limit + 1, before);
    const { rows, headers } = listPage(c.req.path, page, limit, storage.positions.encode);
    return c.json({ data: rows.map((m) => detailJson(m)) }, 200, headers);
  });

  app.get('/:id', auth, async (c) => {
    const principal = principalOf(c);
    const id = parseMessageIdParam(c.req.param('id'));
    const message = await storage.message(id);
    if (!message || !visibleTo(message, storage.ownerOf(message), principal)) {
      throw new ProblemError(404, `no message ${id}`);
    }
    return c.json(detailJson(message, await storage.history(message)));
  });

  return app;
}
