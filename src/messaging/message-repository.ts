/**
 * Messages, their transitions, the send queue and idempotency keys in SQLite. A new message
 * updates its `conversations` row in the same transaction (conversation-repository.ts reads
 * them), so listing conversations is one indexed read however many messages exist. Every status
 * change stores a `message_transitions` row with its time. Reads are bounded.
 */
import type { Database } from '../store/database.js';
import type { Message, MessageStatus, MessageTransition } from './message.js';
import { messageId } from './message-id.js';
import { COLUMNS, fromRow, type MessageRow, MessagingTables, TRANSITION_SQL } from './message-rows.js';

/** What a send under an Idempotency-Key stores with its message (validation.ts `idempotencyFor`). */
export interface IdempotencyInput {
  key: string;
  requestHash: string;
  /** The first answer's body, which a retry with the key gets back. */
  response: (message: Message) => string;
}

export interface NewOutbound {
  owner: string;
  ownerName: string;
  nodeId: string;
  senderNodeId: string | null;
  text: string;
  at: number;
  /**
   * The public id to store the message under, when another party chose it (a text that came
   * down from the upstream keeps the upstream's id); a fresh UUIDv7 otherwise.
   */
  publicId?: string;
  /** Stored with the message: a retry with this key gets `response` back. */
  idempotency?: IdempotencyInput;
  /**
   * When its hold ends (ms); `at`: no hold (it fails after the retries); null or absent: the
   * gateway applies MESSAGE_HOLD_HOURS (a text that came down from the upstream).
   */
  holdUntil?: number | null;
}

export interface NewInbound {
  owner: string | null;
  ownerName: string | null;
  nodeId: string;
  targetNodeId: string;
  text: string;
  packetId: number;
  at: number;
}

export interface StatusUpdate {
  status: MessageStatus;
  reason?: string | null;
  failureCode?: string | null;
  /** Leave out to keep; null clears (no attempt waiting for an ACK). */
  ackDeadline?: number | null;
  nextAttemptAt?: number;
  /** Since when it waits for its node to be heard; leave out to keep (cleared when it leaves `queued`). */
  heldSince?: number | null;
  /** The attempt this change concludes, and its code (Routing_Error name, ACK_TIMEOUT, …), for the history. */
  attempt?: number | null;
  code?: string | null;
  at: number;
}

export interface StoredIdempotency {
  requestHash: string;
  response: string;
  messageId: string;
}

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/** A held text is sent again on hearing its node at most once in this long. */
export const WAKE_MIN_GAP_MS = 60_000;

/** `m` is its sender's oldest queued outbound text to its node. */
const HEAD_OF_NODE = `NOT EXISTS (SELECT 1 FROM messages e WHERE e.node_id = m.node_id AND e.owner = m.owner
  AND e.direction = 'outbound' AND e.status = 'queued' AND e.id < m.id)`;

export class MessageRepository extends MessagingTables {
  constructor(db: Database) {
    super(db, {
      insert: `INSERT INTO messages (public_id, owner, owner_name, node_id, direction, sender_node_id,
        target_node_id, text, status, packet_id, next_attempt_at, created_at, updated_at, hold_until, held_since)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
      // A new text to a node that the sender's texts already wait for waits behind them.
      heldSinceOf: `SELECT min(held_since) AS at FROM messages WHERE node_id = ? AND owner = ?
        AND direction = 'outbound' AND status = 'queued' AND held_since IS NOT NULL`,
      transition: TRANSITION_SQL,
      conversation: `INSERT INTO conversations (owner, owner_name, node_id, latest_message_id, latest_text, latest_at,
          last_outbound_at, unread_count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (owner, node_id) DO UPDATE SET
          owner_name = coalesce(excluded.owner_name, owner_name),
          latest_message_id = excluded.latest_message_id, latest_text = excluded.latest_text,
          latest_at = max(latest_at, excluded.latest_at),
          last_outbound_at = coalesce(excluded.last_outbound_at, last_outbound_at),
          unread_count = unread_count + excluded.unread_count`,
      byPublicId: `SELECT ${COLUMNS} FROM messages WHERE public_id = ?`,
      byRowId: `SELECT ${COLUMNS} FROM messages WHERE id = ?`,
      history:
        'SELECT status, reason, at, attempt, code FROM message_transitions WHERE message_id = ? ORDER BY seq LIMIT 1000',
      idempotencyGet: `SELECT k.request_hash, k.response, m.public_id FROM idempotency_keys k
        JOIN messages m ON m.id = k.message_id WHERE k.owner = ? AND k.key = ? AND k.created_at >= ?`,
      idempotencyPut: `INSERT OR REPLACE INTO idempotency_keys (owner, key, request_hash, message_id, response, created_at)
        VALUES (?, ?, ?, ?, ?, ?)`,
      idempotencyPrune: `DELETE FROM idempotency_keys WHERE (owner, key) IN
        (SELECT owner, key FROM idempotency_keys WHERE created_at < ? LIMIT 1000)`,
      // Only the oldest queued text of each sender to each node may go (a conversation keeps its
      // order); while it waits for an acknowledgement, the later ones wait too.
      nextDue: `SELECT ${COLUMNS} FROM messages m WHERE direction = 'outbound' AND status = 'queued'
        AND ack_deadline IS NULL AND next_attempt_at <= ? AND ${HEAD_OF_NODE}
        ORDER BY next_attempt_at, id LIMIT 1`,
      earliestDue: `SELECT min(next_attempt_at) AS at FROM messages m WHERE direction = 'outbound'
        AND status = 'queued' AND ack_deadline IS NULL AND ${HEAD_OF_NODE}`,
      holdFollowers: `UPDATE messages SET held_since = ? WHERE node_id = ? AND owner = ?
        AND direction = 'outbound' AND status = 'queued' AND held_since IS NULL AND id > ?`,
      releaseHeldSince: `UPDATE messages SET held_since = NULL, next_attempt_at = ? WHERE direction = 'outbound'
        AND status = 'queued' AND held_since IS NOT NULL AND held_since >= ? AND ack_deadline IS NULL`,
      // A held text whose last attempt went out while our radio was silent, and the sender's later
      // texts to its node held behind it.
      releaseSentDuring: `UPDATE messages SET held_since = NULL, next_attempt_at = :at WHERE direction = 'outbound'
        AND status = 'queued' AND held_since IS NOT NULL AND ack_deadline IS NULL AND EXISTS (
          SELECT 1 FROM messages h JOIN message_packets p ON p.message_id = h.id AND p.attempt = h.attempts
          WHERE h.node_id = messages.node_id AND h.owner = messages.owner AND h.id <= messages.id
            AND h.direction = 'outbound' AND h.status = 'queued' AND h.held_since IS NOT NULL
            AND h.ack_deadline IS NULL AND p.sent_at BETWEEN :from AND :until)`,
      wakeHeld: `UPDATE messages SET next_attempt_at = max(:at, updated_at + :gap) WHERE node_id = :node
        AND direction = 'outbound' AND status = 'queued' AND held_since IS NOT NULL AND ack_deadline IS NULL
        AND next_attempt_at > max(:at, updated_at + :gap)`,
      heldNodes: `SELECT DISTINCT node_id FROM messages WHERE direction = 'outbound' AND status = 'queued'
        AND held_since IS NOT NULL LIMIT 10000`,
      holdEnded: `SELECT ${COLUMNS} FROM messages WHERE direction = 'outbound' AND status = 'queued'
        AND hold_until IS NOT NULL AND hold_until <= ? AND hold_until > created_at AND ack_deadline IS NULL
        ORDER BY hold_until, id LIMIT 100`,
      earliestHoldEnd: `SELECT min(hold_until) AS at FROM messages WHERE direction = 'outbound'
        AND status = 'queued' AND hold_until IS NOT NULL AND hold_until > created_at AND ack_deadline IS NULL`,
      defaultHold: `UPDATE messages SET hold_until = created_at + :hold WHERE direction = 'outbound'
        AND status = 'queued' AND (hold_until IS NULL OR hold_until > created_at + :hold)`,
      beginAttempt: `UPDATE messages SET attempts = attempts + 1, packet_id = ?, ack_deadline = ?, updated_at = ?
        WHERE id = ? AND status = 'queued' AND ack_deadline IS NULL`,
      packetInsert:
        'INSERT INTO message_packets (packet_id, message_id, attempt, sent_at) VALUES (?, ?, ?, ?)',
      packetExists: 'SELECT 1 FROM message_packets WHERE packet_id = ?',
      packetDelete: 'DELETE FROM message_packets WHERE packet_id = ?',
      abandonAttempt: `UPDATE messages SET attempts = attempts - 1, ack_deadline = NULL, updated_at = ?
        WHERE id = ? AND packet_id = ? AND status = 'queued' AND ack_deadline IS NOT NULL`,
      byPacket: `SELECT p.attempt, m.* FROM message_packets p JOIN messages m ON m.id = p.message_id
        WHERE p.packet_id = ?`,
      update: `UPDATE messages SET status = ?, failure_code = ?, failure_reason = ?, ack_deadline = ?,
        next_attempt_at = ?, held_since = ?, updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
      expired: `SELECT ${COLUMNS} FROM messages WHERE ack_deadline IS NOT NULL AND ack_deadline <= ?
        ORDER BY ack_deadline LIMIT 100`,
      earliestDeadline: 'SELECT min(ack_deadline) AS at FROM messages WHERE ack_deadline IS NOT NULL',
    });
  }

  private addTransition(
    id: number,
    status: MessageStatus,
    reason: string | null,
    at: number,
    attempt: number | null = null,
    code: string | null = null,
  ): void {
    this.stmt('transition').run({ id, status, reason, at, attempt, code });
  }

  /** A new message is the latest of its conversation; an outbound one is its last write, an inbound one unread. */
  private touchConversation(
    owner: string,
    ownerName: string | null,
    message: Message,
    direction: 'outbound' | 'inbound',
  ): void {
    const at = message.createdAt;
    const outbound = direction === 'outbound';
    this.stmt('conversation').run(
      owner,
      ownerName,
      message.nodeId,
      message.rowId,
      message.text,
      at,
      outbound ? at : null,
      outbound ? 0 : 1,
    );
  }

  /** Stores a new outbound message as `queued` (and its idempotency key), in one transaction. */
  createOutbound(input: NewOutbound): Message {
    return this.atomically(() => {
      const heldSince =
        this.stmt<{ at: number | null }>('heldSinceOf').get(input.nodeId, input.owner)?.at ?? null;
      const row = this.stmt<MessageRow>('insert').get(
        input.publicId ?? messageId(input.at),
        input.owner,
        input.ownerName,
        input.nodeId,
        'outbound',
        input.senderNodeId,
        input.nodeId,
        input.text,
        'queued',
        null,
        input.at,
        input.at,
        input.at,
        input.holdUntil ?? null,
        heldSince,
      )!;
      const message = fromRow(row);
      this.addTransition(message.rowId, 'queued', null, input.at);
      this.touchConversation(input.owner, input.ownerName, message, 'outbound');
      const idem = input.idempotency;
      if (idem) {
        this.stmt('idempotencyPut').run(
          input.owner,
          idem.key,
          idem.requestHash,
          message.rowId,
          idem.response(message),
          input.at,
        );
      }
      return message;
    });
  }

  /** Stores an inbound text; undefined when this packet was stored before (heard twice). */
  createInbound(input: NewInbound): Message | undefined {
    return this.atomically(() => {
      let row: MessageRow | undefined;
      try {
        row = this.stmt<MessageRow>('insert').get(
          messageId(input.at),
          input.owner,
          input.ownerName,
          input.nodeId,
          'inbound',
          input.nodeId,
          input.targetNodeId,
          input.text,
          'received',
          input.packetId,
          0,
          input.at,
          input.at,
          null,
          null,
        );
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return undefined;
        throw error;
      }
      const message = fromRow(row!);
      this.addTransition(message.rowId, 'received', null, input.at);
      if (input.owner !== null) {
        this.touchConversation(input.owner, input.ownerName, message, 'inbound');
      }
      return message;
    });
  }

  findIdempotent(owner: string, key: string, now = Date.now()): StoredIdempotency | undefined {
    const row = this.stmt<{ request_hash: string; response: string; public_id: string }>(
      'idempotencyGet',
    ).get(owner, key, now - IDEMPOTENCY_TTL_MS);
    return row
      ? { requestHash: row.request_hash, response: row.response, messageId: row.public_id }
      : undefined;
  }

  /** Deletes up to 1000 expired idempotency keys; returns how many. */
  pruneIdempotencyKeys(now = Date.now()): number {
    return this.stmt('idempotencyPrune').run(now - IDEMPOTENCY_TTL_MS).changes;
  }

  get(publicId: string): Message | undefined {
    const row = this.stmt<MessageRow>('byPublicId').get(publicId);
    return row ? fromRow(row) : undefined;
  }

  getByRowId(rowId: number): Message | undefined {
    const row = this.stmt<MessageRow>('byRowId').get(rowId);
    return row ? fromRow(row) : undefined;
  }

  history(rowId: number): MessageTransition[] {
    return this.stmt<MessageTransition>('history').all(rowId);
  }

  // --- held texts ---

  /**
   * Gives queued texts that have no hold yet (from the upstream, from before holds) `holdMs`,
   * and cuts longer ones (a subscriber's `hold_hours` through the upstream) to it.
   */
  applyDefaultHold(holdMs: number): number {
    return this.stmt('defaultHold').run({ hold: Math.max(0, Math.round(holdMs)) }).changes;
  }

  /** Marks the sender's later queued texts to the node as waiting for it too (they go out after this one). */
  holdFollowers(message: Message, at: number): void {
    this.stmt('holdFollowers').run(at, message.nodeId, message.owner, message.rowId);
  }

  /**
   * Texts held since `from` are held no longer and due at `at`: they missed their ACK while our
   * own radio was silent or away, which says nothing of their node. Returns how many.
   */
  releaseHeldSince(from: number, at: number): number {
    return this.stmt('releaseHeldSince').run(at, from).changes;
  }

  /**
   * Held texts whose last attempt was handed to our radio between `from` and `until`, while it
   * was silent, are held no longer and due at `at` (with the sender's later texts to the node):
   * that attempt most likely never reached the air, and its missing ACK says nothing of the node.
   * Covers the attempt still in flight when the radio answered again, which times out after.
   * Returns how many.
   */
  releaseSentDuring(from: number, until: number, at: number): number {
    return this.stmt('releaseSentDuring').run({ from, until, at }).changes;
  }

  /**
   * The node was heard: its held texts are due now, or, when their last attempt ended less than
   * WAKE_MIN_GAP_MS ago, once that minute is over (a node we hear but cannot reach must not cost
   * an attempt per packet, nor wait for its slow backoff). Returns how many were brought forward.
   */
  wakeHeld(nodeId: string, at: number): number {
    return this.stmt('wakeHeld').run({ at, node: nodeId, gap: WAKE_MIN_GAP_MS }).changes;
  }

  /** The nodes that texts wait for. */
  heldNodes(): string[] {
    return this.stmt<{ node_id: string }>('heldNodes')
      .all()
      .map((r) => r.node_id);
  }

  /** Queued texts (not waiting for an acknowledgement) whose hold has ended (at most 100). */
  holdEnded(now: number): Message[] {
    return this.stmt<MessageRow>('holdEnded').all(now).map(fromRow);
  }

  earliestHoldEnd(): number | undefined {
    return this.stmt<{ at: number | null }>('earliestHoldEnd').get()?.at ?? undefined;
  }

  // --- the send queue ---

  /** The next queued message due at `now` and not waiting for an ACK. */
  nextDue(now: number): Message | undefined {
    const row = this.stmt<MessageRow>('nextDue').get(now);
    return row ? fromRow(row) : undefined;
  }

  /** When the earliest queued message becomes due, or undefined when none waits. */
  earliestDue(): number | undefined {
    return this.stmt<{ at: number | null }>('earliestDue').get()?.at ?? undefined;
  }

  packetIdInUse(packetId: number): boolean {
    return this.stmt('packetExists').get(packetId) !== undefined;
  }

  /** Records an attempt before it goes to the radio, so an ACK arriving at once finds it. */
  beginAttempt(message: Message, packetId: number, now: number, ackDeadline: number): boolean {
    return this.atomically(() => {
      if (this.stmt('beginAttempt').run(packetId, ackDeadline, now, message.rowId).changes !== 1)
        return false;
      this.stmt('packetInsert').run(packetId, message.rowId, message.attempts + 1, now);
      return true;
    });
  }

  /** Undoes an attempt the radio never took (the link was down): it does not count. */
  abandonAttempt(message: Message, packetId: number, now: number): void {
    this.atomically(() => {
      // An ACK that came in meanwhile proves the packet went out: then the attempt stands.
      if (this.stmt('abandonAttempt').run(now, message.rowId, packetId).changes === 1) {
        this.stmt('packetDelete').run(packetId);
      }
    });
  }

  /** The message an ACK/NAK refers to, with the attempt number of that packet. */
  byPacketId(packetId: number): { message: Message; attempt: number } | undefined {
    const row = this.stmt<MessageRow & { attempt: number }>('byPacket').get(packetId);
    return row ? { message: fromRow(row), attempt: row.attempt } : undefined;
  }

  /** Applies a status (or a retry that stays `queued`) and stores the transition. */
  update(message: Message, change: StatusUpdate): Message {
    return this.atomically(() => {
      const row = this.stmt<MessageRow>('update').get(
        change.status,
        change.failureCode === undefined ? message.failureCode : change.failureCode,
        change.failureCode === undefined
          ? message.failureReason
          : change.failureCode === null
            ? null
            : (change.reason ?? null),
        change.ackDeadline === undefined ? message.ackDeadline : change.ackDeadline,
        change.nextAttemptAt ?? message.nextAttemptAt,
        change.status !== 'queued'
          ? null
          : change.heldSince === undefined
            ? (message.heldSince ?? null)
            : change.heldSince,
        change.at,
        message.rowId,
      )!;
      this.addTransition(
        message.rowId,
        change.status,
        change.reason ?? null,
        change.at,
        change.attempt ?? null,
        change.code ?? null,
      );
      return fromRow(row);
    });
  }

  /** In-flight messages whose ACK deadline has passed (at most 100). */
  expiredInFlight(now: number): Message[] {
    return this.stmt<MessageRow>('expired').all(now).map(fromRow);
  }

  earliestDeadline(): number | undefined {
    return this.stmt<{ at: number | null }>('earliestDeadline').get()?.at ?? undefined;
  }
}
