/**
 * `/api/v1/messages` on the upstream (issue 12): the hub's messaging API (src/messaging/routes.ts)
 * for internet subscribers, with the same endpoints, tokens, checks and JSON, on PostgreSQL.
 * Every route needs a bearer token with the role `subscriber` or `admin`; a subscriber only ever
 * sees their own messages (`messages.subscriber` = their principal id).
 *
 * - POST `/`: `{ target_node_id, text }` → 202, the message record (`status: "queued"`) and
 *   `Location: /api/v1/messages/{id}`. Checks, in order, as on the hub: token (401), role (403),
 *   body (400/413/415), Idempotency-Key replay (the first 202 again; 422 for the same key with
 *   another body), unknown node (404: no site that is not revoked has heard of it), subscription
 *   (403; admins need none), rate limits per subscriber and per node (429 + Retry-After, counted
 *   in PostgreSQL for every upstream process: rate-limits.ts). Then one transaction stores the
 *   message for the site that heard the node most recently, its `queued` transition, its
 *   idempotency key and the site's `text` command; the site takes it on its next pull. A refused
 *   request stores nothing.
 * - GET `/conversations`: one summary per node the caller has messages with, whichever site
 *   carried them, newest first.
 * - GET `/conversations/{node_id}`: the conversation, oldest first; marks inbound messages read.
 * - PATCH `/conversations/{node_id}`: `{ "nickname": "…" | null }` sets the caller's name for the node.
 * - GET `/{id}`: one of the caller's messages with its delivery history (as the site reported it).
 * - GET `/unmatched` (admins): inbound texts nobody at any site could be matched with, newest first.
 * - GET `/stream`, POST `/stream/tickets`: not served upstream (404): statuses and replies reach
 *   the upstream in batches, so a client polls the conversation instead.
 * Lists page with `limit` and an opaque `cursor` announced in `Link: <…>; rel="next"`.
 *
 * The hub's "own node" check (400) has no upstream equivalent: the site refuses a text to its own
 * radio, and `messagingOnAck` then fails the message with the site's reason.
 */
import { type Context, Hono } from 'hono';
import type pg from 'pg';
import { z } from 'zod';
import type { Principal } from '../../../src/auth/hub-identity.js';
import type { TokenVerifier, VerifiedIdentity } from '../../../src/auth/jwt-verifier.js';
import { limitBody } from '../../../src/auth/request-body.js';
import { type AuthEnv, requireAuth, verifiedIdentity } from '../../../src/auth/require-auth.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../../../src/auth/users.js';
import { cursorCodec, readCursor } from '../../../src/http/paging.js';
import { ProblemError } from '../../../src/http/problem.js';
import {
  conversationSummaryJson,
  type Message,
  type MessageDetailJson,
  type MessageTransition,
  messageDetailJson,
  messageRecordJson,
} from '../../../src/messaging/message.js';
import {
  decodeConversationCursor,
  encodeConversationCursor,
  listPage,
  NOT_OURS,
  pageLimit,
} from '../../../src/messaging/paging.js';
import { idempotencyKeyReused, rateProblem, subscriptionRefusal } from '../../../src/messaging/refusals.js';
import { MESSAGE_ID_PATTERN } from '../../../src/messaging/schemas.js';
import { MAX_HOLD_HOURS } from '../../../src/messaging/settings.js';
import {
  idempotencyFor,
  parseMessageIdParam,
  parseNodeIdParam,
  readNickname,
  readSendRequest,
} from '../../../src/messaging/validation.js';
import { type CommandAck, textCommandBody } from '../../protocol.js';
import { withTransaction } from '../db/pool.js';
import {
  nodeScope,
  pruneRateWindows,
  type RateSetting,
  subscriberScope,
  takeRateTokens,
} from './rate-limits.js';
import {
  conversationMessages,
  failRejectedText,
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
} from './store.js';
import { lapsedSubscription, subscriptionAllows } from './subscriptions.js';

export type { RateSetting } from './rate-limits.js';

export interface UpstreamMessagingDeps {
  pool: pg.Pool;
  identity: { verifier: TokenVerifier; principalOf(v: VerifiedIdentity): Principal };
  rates: { perSubscriber: RateSetting; perNode: RateSetting };
  now?: () => number;
}

const MESSAGING_ROLES = [SUBSCRIBER_ROLE, ADMIN_ROLE];
/** How often one process sweeps expired idempotency keys and full rate buckets. */
const PRUNE_EVERY_MS = 60_000;

/** A message's position (created_at, id): conversations page oldest first, the unmatched list newest first. */
const positionCursor = cursorCodec(z.strictObject({ t: z.int(), i: z.string().regex(MESSAGE_ID_PATTERN) }));
const encodePosition = (m: MessagePosition): string => positionCursor.encode({ t: m.createdAt, i: m.id });
function decodePosition(value: string): MessagePosition {
  const { t, i } = readCursor(positionCursor, value, NOT_OURS);
  return { createdAt: t, id: i };
}

function isAdmin(principal: Principal): boolean {
  return principal.roles.includes(ADMIN_ROLE);
}

/**
 * The hub's detail JSON. The number of radio attempts is known only at the site (it does not
 * travel in the sync records), so the upstream leaves `attempts` out (it is optional).
 */
function detailJson(m: Message, history?: MessageTransition[]): MessageDetailJson {
  const { attempts: _siteOnly, ...json } = messageDetailJson(m, history);
  return json;
}

function replay(c: Context, stored: StoredIdempotency): Response {
  return c.body(stored.response, 202, {
    'content-type': 'application/json',
    location: `/api/v1/messages/${stored.messageId}`,
    'idempotent-replayed': 'true',
  });
}

/** Why a send stopped inside the transaction: rolled back, answered with `response` instead. */
class Answered extends Error {
  constructor(readonly response: Response) {
    super('answered without storing');
  }
}

/** `/api/v1/messages` for the upstream; mount it at that path. */
export function upstreamMessagingRoutes(deps: UpstreamMessagingDeps): Hono<AuthEnv> {
  const { pool, identity } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const auth = requireAuth(identity.verifier, { roles: MESSAGING_ROLES });
  const principalOf = (c: Context<AuthEnv>) => identity.principalOf(verifiedIdentity(c));
  let prunedAt = Number.NEGATIVE_INFINITY;

  async function prune(at: number): Promise<void> {
    if (at - prunedAt < PRUNE_EVERY_MS) return;
    prunedAt = at;
    // Housekeeping only: a failure here must not fail the send.
    await Promise.all([pruneIdempotencyKeys(pool, at), pruneRateWindows(pool, at)]).catch(() => {});
  }

  app.post('/', limitBody(4096), auth, async (c) => {
    const principal = principalOf(c);
    // hold_hours up to any hub's ceiling; the site holds the text at most its own maximum.
    const { key, body, hash } = await readSendRequest(c, MAX_HOLD_HOURS);
    if (key !== undefined) {
      const prior = await findIdempotent(pool, principal.id, key, now());
      if (prior && prior.requestHash !== hash) throw idempotencyKeyReused();
      if (prior) return replay(c, prior);
    }
    const target = body.target_node_id;
    if ((await routeFor(pool, target)) === undefined) {
      throw new ProblemError(404, `no node ${target} is known to any site`);
    }
    if (!isAdmin(principal) && !(await subscriptionAllows(pool, principal.id, target, now()))) {
      throw subscriptionRefusal(target, await lapsedSubscription(pool, principal.id, target, now()));
    }
    await prune(now());
    try {
      const message = await withTransaction(pool, async (client) => {
        const at = now();
        // Locks the subscriber's and the node's buckets first: every send of this subscriber
        // (and so every retry of this key) runs one after the other from here on.
        const rate = await takeRateTokens(
          client,
          [
            { scope: subscriberScope(principal.id), limit: deps.rates.perSubscriber },
            { scope: nodeScope(target), limit: deps.rates.perNode },
          ],
          at,
        );
        if (key !== undefined) {
          // A retry that raced the first request past the check above: it has committed by now.
          const prior = await findIdempotent(client, principal.id, key, at);
          if (prior && prior.requestHash !== hash) throw idempotencyKeyReused();
          if (prior) throw new Answered(replay(c, prior));
        }
        if (!rate.ok) {
          const who = rate.refused.scope.startsWith('node:') ? `${target} may receive` : 'you may send';
          throw rateProblem(rate.refused.limit, who, rate.retryAfterSeconds);
        }
        const siteId = await routeFor(client, target);
        if (siteId === undefined) throw new ProblemError(404, `no node ${target} is known to any site`);
        return insertUpstreamText(client, {
          siteId,
          subscriber: principal.id,
          subscriberName: principal.name,
          nodeId: target,
          text: body.text,
          at,
          ...(body.hold_hours === undefined ? {} : { holdHours: body.hold_hours }),
          ...idempotencyFor(key, hash),
        });
      });
      return c.json(messageRecordJson(message), 202, { location: `/api/v1/messages/${message.id}` });
    } catch (error) {
      if (error instanceof Answered) return error.response;
      throw error;
    }
  });

  app.get('/conversations', auth, async (c) => {
    const principal = principalOf(c);
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const after = cursorParam === undefined ? undefined : decodeConversationCursor(cursorParam);
    const page = await listConversations(pool, principal.id, limit + 1, after);
    const { rows, headers } = listPage(c.req.path, page, limit, encodeConversationCursor);
    return c.json({ data: rows.map(conversationSummaryJson) }, 200, headers);
  });

  app.get('/conversations/:node_id', auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const after = cursorParam === undefined ? undefined : decodePosition(cursorParam);
    await markConversationRead(pool, principal.id, nodeId, now());
    const page = await conversationMessages(pool, principal.id, nodeId, limit + 1, after);
    const { rows, headers } = listPage(c.req.path, page, limit, encodePosition);
    return c.json({ data: rows.map(messageRecordJson) }, 200, headers);
  });

  app.patch('/conversations/:node_id', limitBody(1024), auth, async (c) => {
    const principal = principalOf(c);
    const nodeId = parseNodeIdParam(c.req.param('node_id'));
    const nickname = await readNickname(c);
    if (!(await setNickname(pool, principal.id, nodeId, nickname))) {
      throw new ProblemError(404, `you have no conversation with ${nodeId}`);
    }
    return c.json(conversationSummaryJson((await getConversation(pool, principal.id, nodeId))!));
  });

  // Before `/:id`, which would otherwise take "stream" for a message id.
  const noStream = () => {
    throw new ProblemError(
      404,
      'the upstream has no live message stream; poll GET /api/v1/messages/conversations/{node_id} instead',
    );
  };
  app.get('/stream', noStream);
  app.post('/stream/tickets', noStream);

  app.get('/unmatched', auth, async (c) => {
    const principal = principalOf(c);
    if (!isAdmin(principal))
      throw new ProblemError(403, 'only admins see texts nobody could be matched with');
    const limit = pageLimit(c.req.query('limit'));
    const cursorParam = c.req.query('cursor');
    const before = cursorParam === undefined ? undefined : decodePosition(cursorParam);
    const page = await unmatchedMessages(pool, limit + 1, before);
    const { rows, headers } = listPage(c.req.path, page, limit, encodePosition);
    return c.json({ data: rows.map((m) => detailJson(m)) }, 200, headers);
  });

  app.get('/:id', auth, async (c) => {
    const principal = principalOf(c);
    const id = parseMessageIdParam(c.req.param('id'));
    const message = await getMessage(pool, id);
    if (!message || !visibleTo(message, principal)) throw new ProblemError(404, `no message ${id}`);
    return c.json(detailJson(message, await messageHistory(pool, message)));
  });

  return app;
}

/** The caller's own messages; for admins also the unmatched ones (as on the hub). */
function visibleTo(message: UpstreamMessage, principal: Principal): boolean {
  if (message.subscriber !== null) return message.subscriber === principal.id;
  return message.owner === null && message.direction === 'inbound' && isAdmin(principal);
}

/**
 * What the downlink does with a site's answer to a command, for messaging: a `text` the site
 * `rejected` (it never will send it) fails its message upstream with `failure_code
 * 'rejected_by_site'` and the site's reason, plus a `failed` transition — unless the site has
 * already reported a later status for it. `applied` and `duplicate` change nothing here: the
 * message's statuses arrive in the site's batches.
 */
export function messagingOnAck(
  pool: pg.Pool,
  options: { now?: () => number } = {},
): (siteId: string, ack: CommandAck, command: { id: number; kind: string; body: unknown }) => Promise<void> {
  const now = options.now ?? Date.now;
  return async (siteId, ack, command) => {
    if (command.kind !== 'text' || ack.result !== 'rejected') return;
    const body = textCommandBody.safeParse(command.body);
    if (!body.success) return;
    await failRejectedText(
      pool,
      siteId,
      body.data.message_id,
      ack.reason ?? 'the site refused the text',
      now(),
    );
  };
}
