/**
 * The upstream's messaging in PostgreSQL: texts internet subscribers send (routed to the site
 * that heard the node most recently), their conversations across every site, read marks,
 * nicknames, idempotency keys, and what a site's refusal of a text does to its message.
 *
 * A message belongs to one site (`messages.site_id`, the site that carries it) but its id is
 * unique across sites, and a subscriber's conversation with a node is every message with
 * `subscriber = <principal>` and that `node_id`, whichever site carried each one. Messages are
 * mapped to the hub's `Message` (src/messaging/message.ts) so the hub's JSON shapers serve the
 * same shapes; the fields only a hub's radio knows (row id, packet id, attempts, ACK deadline)
 * are not kept upstream and are left empty.
 *
 * Times are BIGINT ms; they are read with `Number()` so a pool with pg's default (string) int8
 * parser reads them right too.
 */
import type pg from 'pg';
import type {
  ConversationSummary,
  Message,
  MessageStatus,
  MessageTransition,
} from '../../../src/messaging/message.js';
import { messageId } from '../../../src/messaging/message-id.js';
import { IDEMPOTENCY_TTL_MS, type IdempotencyInput } from '../../../src/messaging/message-repository.js';
import {
  type ConversationSummaryRow,
  conversationSummaryFromRow,
  type MessageTextRow,
  messageTextFields,
} from '../../../src/messaging/message-rows.js';
import { type CommandBody, UPSTREAM_PRINCIPAL_PREFIX } from '../../protocol.js';
import { enqueueCommand } from '../downlink-queue.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** A message as the upstream keeps it: the hub's fields, plus the site that carries it. */
export interface UpstreamMessage extends Message {
  siteId: string;
  /** The upstream principal whose conversation it is; null: a site-local message or unmatched. */
  subscriber: string | null;
  origin: 'site' | 'upstream';
}

/** Where a page of a conversation (oldest first) or of the unmatched list (newest first) ends. */
export interface MessagePosition {
  createdAt: number;
  id: string;
}

export type UpstreamConversationSummary = ConversationSummary;

export interface StoredIdempotency {
  requestHash: string;
  response: string;
  messageId: string;
}

interface MessageRow extends MessageTextRow {
  site_id: string;
  id: string;
  origin: 'site' | 'upstream';
  subscriber: string | null;
  created_at: string | number;
  updated_at: string | number;
}

const COLUMNS = `site_id, id::text AS id, origin, subscriber, owner, owner_name, node_id, direction,
  sender_node_id, target_node_id, text, status, failure_code, failure_reason, created_at, updated_at`;

function fromRow(r: MessageRow): UpstreamMessage {
  const createdAt = Number(r.created_at);
  return {
    rowId: 0,
    id: r.id,
    ...messageTextFields(r),
    packetId: null,
    attempts: 0,
    ackDeadline: null,
    nextAttemptAt: createdAt,
    createdAt,
    updatedAt: Number(r.updated_at),
    siteId: r.site_id,
    subscriber: r.subscriber,
    origin: r.origin,
  };
}

/**
 * Appends a transition with the next `seq` of its message. A row the site sent meanwhile under
 * the same seq wins (the site's history is the record; batch-apply also keeps the first row).
 */
const TRANSITION_SQL = `INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at)
  SELECT $1, $2::uuid, coalesce(max(seq), 0) + 1, $3, $4, $5 FROM message_transitions
  WHERE site_id = $1 AND message_id = $2::uuid
  ON CONFLICT DO NOTHING`;

// --- routing ---

/**
 * The site to carry a text to `nodeId`: of the registered sites not revoked, the one that heard
 * the node most recently (`nodes.last_heard`; never heard last; ties by site id). Undefined
 * when no such site knows the node.
 */
export async function routeFor(db: Queryable, nodeId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ site_id: string }>(
    `SELECT n.site_id FROM nodes n JOIN sites s ON s.site_id = n.site_id
     WHERE n.node_id = $1 AND s.revoked_at IS NULL
     ORDER BY n.last_heard DESC NULLS LAST, n.site_id LIMIT 1`,
    [nodeId],
  );
  return rows[0]?.site_id;
}

// --- sending ---

/** The first request's answer for `(subscriber, key)` while the key lives (the hub's 24 h). */
export async function findIdempotent(
  db: Queryable,
  subscriber: string,
  key: string,
  now: number,
): Promise<StoredIdempotency | undefined> {
  const { rows } = await db.query<{ request_hash: string; response: string; message_id: string }>(
    `SELECT request_hash, response, message_id::text AS message_id FROM idempotency_keys
     WHERE subscriber = $1 AND key = $2 AND created_at >= $3`,
    [subscriber, key, now - IDEMPOTENCY_TTL_MS],
  );
  const row = rows[0];
  return row
    ? { requestHash: row.request_hash, response: row.response, messageId: row.message_id }
    : undefined;
}

export interface NewUpstreamText {
  siteId: string;
  /** The upstream principal (`Principal.id`). */
  subscriber: string;
  subscriberName: string;
  nodeId: string;
  text: string;
  at: number;
  /** The subscriber's `hold_hours`, passed down to the site. */
  holdHours?: number;
  /** Stored with the message: a retry with this key gets `response` back. */
  idempotency?: IdempotencyInput;
}

/**
 * In the caller's transaction: stores a text as `queued` for its site (origin `upstream`, the
 * site's owner `upstream:<principal>`), its `queued` transition, its idempotency key, and the
 * site's `text` command (downlink-queue.ts, whose NOTIFY goes out when the transaction commits).
 */
export async function insertUpstreamText(
  client: pg.PoolClient,
  input: NewUpstreamText,
): Promise<UpstreamMessage> {
  const id = messageId(input.at);
  const { rows } = await client.query<MessageRow>(
    `INSERT INTO messages (site_id, id, origin, subscriber, owner, owner_name, node_id, direction,
       sender_node_id, target_node_id, text, status, created_at, updated_at, received_at)
     VALUES ($1, $2, 'upstream', $3, $4, $5, $6, 'outbound', NULL, $6, $7, 'queued', $8, $8, $8)
     RETURNING ${COLUMNS}`,
    [
      input.siteId,
      id,
      input.subscriber,
      `${UPSTREAM_PRINCIPAL_PREFIX}${input.subscriber}`,
      input.subscriberName,
      input.nodeId,
      input.text,
      input.at,
    ],
  );
  const message = fromRow(rows[0]!);
  await client.query(TRANSITION_SQL, [input.siteId, id, 'queued', null, input.at]);
  const idem = input.idempotency;
  if (idem) {
    // An expired key of the same name is replaced, as on the hub.
    await client.query(
      `INSERT INTO idempotency_keys (subscriber, key, request_hash, message_id, response, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (subscriber, key) DO UPDATE SET request_hash = excluded.request_hash,
         message_id = excluded.message_id, response = excluded.response, created_at = excluded.created_at`,
      [input.subscriber, idem.key, idem.requestHash, id, idem.response(message), input.at],
    );
  }
  const command: CommandBody<'text'> = {
    message_id: id,
    owner: input.subscriber,
    owner_name: input.subscriberName,
    node_id: input.nodeId,
    text: input.text,
    created_at: input.at,
    ...(input.holdHours === undefined ? {} : { hold_hours: input.holdHours }),
  };
  await enqueueCommand(client, input.siteId, 'text', command, input.at);
  return message;
}

/** Deletes up to 1000 idempotency keys past the hub's 24 h; returns how many. */
export async function pruneIdempotencyKeys(pool: Queryable, now: number): Promise<number> {
  const result = await pool.query(
    `DELETE FROM idempotency_keys WHERE (subscriber, key) IN
       (SELECT subscriber, key FROM idempotency_keys WHERE created_at < $1 LIMIT 1000)`,
    [now - IDEMPOTENCY_TTL_MS],
  );
  return result.rowCount ?? 0;
}

// --- reading ---

export async function getMessage(db: Queryable, id: string): Promise<UpstreamMessage | undefined> {
  const { rows } = await db.query<MessageRow>(`SELECT ${COLUMNS} FROM messages WHERE id = $1::uuid`, [id]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

/** A message's transitions in order (at most 1000), as its site and the upstream recorded them. */
export async function messageHistory(db: Queryable, message: UpstreamMessage): Promise<MessageTransition[]> {
  const { rows } = await db.query<{ status: MessageStatus; reason: string | null; at: string | number }>(
    `SELECT status, reason, at FROM message_transitions WHERE site_id = $1 AND message_id = $2::uuid
     ORDER BY seq LIMIT 1000`,
    [message.siteId, message.id],
  );
  return rows.map((r) => ({ status: r.status, reason: r.reason, at: Number(r.at) }));
}

const SUMMARY_SQL = `
  SELECT c.node_id, coalesce(k.nickname, n.long_name, n.short_name, c.node_id) AS nickname,
    c.latest_text, c.latest_at, c.unread_count, c.waiting_count,
    (SELECT count(*)::int FROM messages f WHERE f.subscriber = $1 AND f.node_id = c.node_id
      AND f.direction = 'outbound' AND f.status = 'failed' AND f.created_at > c.reached_at) AS failed_count
  FROM (
    SELECT node_id, max(created_at) AS latest_at,
      (array_agg(text ORDER BY created_at DESC, id DESC))[1] AS latest_text,
      count(*) FILTER (WHERE direction = 'inbound' AND status = 'received')::int AS unread_count,
      count(*) FILTER (WHERE direction = 'outbound' AND status = 'queued')::int AS waiting_count,
      coalesce(max(created_at) FILTER (WHERE status = 'delivered' OR direction = 'inbound'), 0) AS reached_at
    FROM messages WHERE subscriber = $1 AND ($2::text IS NULL OR node_id = $2) GROUP BY node_id
  ) c
  LEFT JOIN conversation_nicknames k ON k.subscriber = $1 AND k.node_id = c.node_id
  LEFT JOIN LATERAL (
    SELECT long_name, short_name FROM nodes WHERE node_id = c.node_id
    ORDER BY last_heard DESC NULLS LAST, site_id LIMIT 1
  ) n ON true`;

/**
 * One summary per node the subscriber has messages with, on any site, newest first (ties by
 * node id), after `after`. Nickname: the subscriber's own, else the node's name as the site that
 * heard it last knows it, else its id.
 */
export async function listConversations(
  db: Queryable,
  subscriber: string,
  limit: number,
  after?: { latestAt: number; nodeId: string },
): Promise<UpstreamConversationSummary[]> {
  const { rows } = await db.query<ConversationSummaryRow>(
    `${SUMMARY_SQL}
     WHERE c.latest_at < $3 OR (c.latest_at = $3 AND c.node_id > $4)
     ORDER BY c.latest_at DESC, c.node_id LIMIT $5`,
    [subscriber, null, after?.latestAt ?? Number.MAX_SAFE_INTEGER, after?.nodeId ?? '', limit],
  );
  return rows.map(conversationSummaryFromRow);
}

/** The subscriber's conversation with one node, or undefined when they have no message with it. */
export async function getConversation(
  db: Queryable,
  subscriber: string,
  nodeId: string,
): Promise<UpstreamConversationSummary | undefined> {
  const { rows } = await db.query<ConversationSummaryRow>(SUMMARY_SQL, [subscriber, nodeId]);
  return rows[0] ? conversationSummaryFromRow(rows[0]) : undefined;
}

/**
 * A page of messages matching `where` (its parameters `$1…` are `params`), by position: oldest
 * first after `from`, or newest first before it.
 */
async function messagesPage(
  db: Queryable,
  where: string,
  params: unknown[],
  order: 'oldest first' | 'newest first',
  limit: number,
  from: MessagePosition | undefined,
): Promise<UpstreamMessage[]> {
  const asc = order === 'oldest first';
  const n = params.length;
  const { rows } = await db.query<MessageRow>(
    `SELECT ${COLUMNS} FROM messages WHERE ${where}
       AND (created_at, id) ${asc ? '>' : '<'} ($${n + 1}::bigint, $${n + 2}::uuid)
     ORDER BY created_at ${asc ? '' : 'DESC'}, id ${asc ? '' : 'DESC'} LIMIT $${n + 3}`,
    [
      ...params,
      from?.createdAt ?? (asc ? Number.MIN_SAFE_INTEGER : Number.MAX_SAFE_INTEGER),
      from?.id ?? (asc ? '00000000-0000-0000-0000-000000000000' : 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
      limit,
    ],
  );
  return rows.map(fromRow);
}

/** The subscriber's messages with `nodeId`, from every site, oldest first, after `after`. */
export function conversationMessages(
  db: Queryable,
  subscriber: string,
  nodeId: string,
  limit: number,
  after?: MessagePosition,
): Promise<UpstreamMessage[]> {
  return messagesPage(
    db,
    'subscriber = $1 AND node_id = $2',
    [subscriber, nodeId],
    'oldest first',
    limit,
    after,
  );
}

/**
 * Marks every inbound `received` message of the subscriber's conversation with `nodeId` read,
 * each with a `read` transition, in one statement; returns those it changed. Only rows with
 * `subscriber` = the caller are touched, so nobody else's read state moves.
 */
export async function markConversationRead(
  db: Queryable,
  subscriber: string,
  nodeId: string,
  at: number,
): Promise<UpstreamMessage[]> {
  const { rows } = await db.query<MessageRow>(
    `WITH changed AS (
       UPDATE messages SET status = 'read', updated_at = greatest(updated_at, $3)
       WHERE subscriber = $1 AND node_id = $2 AND direction = 'inbound' AND status = 'received'
       RETURNING ${COLUMNS}
     ), transitions AS (
       INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at)
       SELECT c.site_id, c.id::uuid, coalesce((SELECT max(t.seq) FROM message_transitions t
           WHERE t.site_id = c.site_id AND t.message_id = c.id::uuid), 0) + 1, 'read', NULL, $3
       FROM changed c
       ON CONFLICT DO NOTHING
     )
     SELECT * FROM changed`,
    [subscriber, nodeId, at],
  );
  return rows.map(fromRow);
}

/**
 * Sets (or with null clears) the subscriber's nickname for a node; false when they have no
 * message with it (no conversation to name).
 */
export async function setNickname(
  db: Queryable,
  subscriber: string,
  nodeId: string,
  nickname: string | null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    'SELECT 1 FROM messages WHERE subscriber = $1 AND node_id = $2 LIMIT 1',
    [subscriber, nodeId],
  );
  if (!rowCount) return false;
  if (nickname === null) {
    await db.query('DELETE FROM conversation_nicknames WHERE subscriber = $1 AND node_id = $2', [
      subscriber,
      nodeId,
    ]);
  } else {
    await db.query(
      `INSERT INTO conversation_nicknames (subscriber, node_id, nickname) VALUES ($1, $2, $3)
       ON CONFLICT (subscriber, node_id) DO UPDATE SET nickname = excluded.nickname`,
      [subscriber, nodeId, nickname],
    );
  }
  return true;
}

/** Inbound texts nobody could be matched with at any site (no owner there, no subscriber here), newest first. */
export function unmatchedMessages(
  db: Queryable,
  limit: number,
  before?: MessagePosition,
): Promise<UpstreamMessage[]> {
  const where = "direction = 'inbound' AND subscriber IS NULL AND owner IS NULL";
  return messagesPage(db, where, [], 'newest first', limit, before);
}

// --- a site's answer to a text ---

/**
 * A site refused the text command of message `id` (it never will send it): the message becomes
 * `failed` with `failure_code = 'rejected_by_site'` and the site's reason, plus a transition.
 * Only while it is still `queued` upstream: a later status the site already reported stands.
 * Returns whether it changed.
 */
export async function failRejectedText(
  db: Queryable,
  siteId: string,
  id: string,
  reason: string,
  at: number,
): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `WITH changed AS (
       UPDATE messages SET status = 'failed', failure_code = 'rejected_by_site', failure_reason = $3,
         updated_at = greatest(updated_at, $4)
       WHERE site_id = $1 AND id = $2::uuid AND status = 'queued'
       RETURNING site_id, id
     ), transitions AS (
       INSERT INTO message_transitions (site_id, message_id, seq, status, reason, at)
       SELECT c.site_id, c.id, coalesce((SELECT max(t.seq) FROM message_transitions t
           WHERE t.site_id = c.site_id AND t.message_id = c.id), 0) + 1, 'failed', $3, $4
       FROM changed c
       ON CONFLICT DO NOTHING
     )
     SELECT id::text AS id FROM changed`,
    [siteId, id, reason, at],
  );
  return rows.length > 0;
}
