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
 * The routes are the hub's (src/messaging/routes.ts) over the PostgreSQL storage
 * (pg-storage.ts); what only the upstream does (routing to a site, the downlink command,
 * a site's refusal of a text: `messagingOnAck`) is layered on in those files.
 */
import type { Hono } from 'hono';
import type pg from 'pg';
import type { Principal } from '../../../src/auth/hub-identity.js';
import type { TokenVerifier, VerifiedIdentity } from '../../../src/auth/jwt-verifier.js';
import type { AuthEnv } from '../../../src/auth/require-auth.js';
import type { RateLimit } from '../../../src/kernel/rate-limit.js';
import { messagingRoutes } from '../../../src/messaging/routes.js';
import { MAX_HOLD_HOURS } from '../../../src/messaging/settings.js';
import { type CommandAck, textCommandBody } from '../../protocol.js';
import { failRejectedText } from './message-repository.js';
import { PgMessagingStorage } from './pg-storage.js';

/** What `MESSAGE_RATE_PER_SUBSCRIBER` / `MESSAGE_RATE_PER_NODE` parse to: `{ count, windowMs }`. */
export type RateSetting = RateLimit;

export interface UpstreamMessagingDeps {
  pool: pg.Pool;
  identity: { verifier: TokenVerifier; principalOf(v: VerifiedIdentity): Principal };
  rates: { perSubscriber: RateSetting; perNode: RateSetting };
  now?: () => number;
}

/** `/api/v1/messages` for the upstream; mount it at that path. */
export function upstreamMessagingRoutes(deps: UpstreamMessagingDeps): Hono<AuthEnv> {
  return messagingRoutes({
    identity: deps.identity,
    storage: new PgMessagingStorage(deps.pool),
    rates: deps.rates,
    // hold_hours up to any hub's ceiling; the site holds the text at most its own maximum.
    maxHoldHours: MAX_HOLD_HOURS,
    ...(deps.now ? { now: deps.now } : {}),
  });
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
