/**
 * The `messages` row and its mapping, shared by the message and conversation repositories (and,
 * for the columns every `messages` table has, by the upstream's store).
 */
import type { Database, Statement } from '../store/database.js';
import { type Atomically, transactionOn } from './atomically.js';
import type { ConversationSummary, Message, MessageStatus } from './message.js';

export type Stmt<R = unknown> = Statement<unknown[], R>;

/** A repository's prepared statements by name, each typed by its row where it is used. */
export type Statements = <R = unknown>(name: string) => Stmt<R>;

/** A repository of the messaging tables: its statements, prepared once, and its transactions. */
export abstract class MessagingTables {
  protected readonly atomically: Atomically;
  protected readonly stmt: Statements;

  constructor(db: Database, sqls: Record<string, string>) {
    this.atomically = transactionOn(db);
    const prepared = new Map(Object.entries(sqls).map(([name, sql]) => [name, db.prepare(sql)]));
    this.stmt = <R>(name: string) => prepared.get(name) as unknown as Stmt<R>;
  }
}

export const COLUMNS = `id, public_id, owner, owner_name, node_id, direction, sender_node_id, target_node_id, text,
  status, failure_code, failure_reason, packet_id, attempts, ack_deadline, next_attempt_at, created_at, updated_at,
  hold_until, held_since`;

/**
 * The columns a `messages` row has wherever it is kept (the hub's SQLite, the upstream's
 * PostgreSQL), named and typed alike.
 */
export interface MessageTextRow {
  owner: string | null;
  owner_name: string | null;
  node_id: string;
  direction: 'outbound' | 'inbound';
  sender_node_id: string | null;
  target_node_id: string | null;
  text: string;
  status: MessageStatus;
  failure_code: string | null;
  failure_reason: string | null;
}

export interface MessageRow extends MessageTextRow {
  id: number;
  public_id: string;
  packet_id: number | null;
  attempts: number;
  ack_deadline: number | null;
  next_attempt_at: number;
  created_at: number;
  updated_at: number;
  hold_until: number | null;
  held_since: number | null;
}

export type MessageTextFields = Pick<
  Message,
  | 'owner'
  | 'ownerName'
  | 'nodeId'
  | 'direction'
  | 'senderNodeId'
  | 'targetNodeId'
  | 'text'
  | 'status'
  | 'failureCode'
  | 'failureReason'
>;

/** The `Message` fields of the columns every `messages` table has. */
export function messageTextFields(r: MessageTextRow): MessageTextFields {
  return {
    owner: r.owner,
    ownerName: r.owner_name,
    nodeId: r.node_id,
    direction: r.direction,
    senderNodeId: r.sender_node_id,
    targetNodeId: r.target_node_id,
    text: r.text,
    status: r.status,
    failureCode: r.failure_code,
    failureReason: r.failure_reason,
  };
}

export function fromRow(r: MessageRow): Message {
  return {
    rowId: r.id,
    id: r.public_id,
    ...messageTextFields(r),
    packetId: r.packet_id,
    attempts: r.attempts,
    ackDeadline: r.ack_deadline,
    nextAttemptAt: r.next_attempt_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    holdUntil: r.hold_until,
    heldSince: r.held_since,
  };
}

/**
 * Appends a transition (named parameters: id, status, reason, at, attempt, code); `seq` numbers
 * them per message. `attempt`: the attempt it concluded (null when none did); `code`: why, as a
 * Routing_Error name, ACK_TIMEOUT or HOLD_EXPIRED.
 */
export const TRANSITION_SQL = `INSERT INTO message_transitions (message_id, seq, status, reason, at, attempt, code) VALUES
  (@id, (SELECT coalesce(max(seq), 0) + 1 FROM message_transitions WHERE message_id = @id), @status, @reason, @at,
  @attempt, @code)`;

/** A conversation summary row wherever it is read (the hub's SQLite, the upstream's PostgreSQL). */
export interface ConversationSummaryRow {
  node_id: string;
  nickname: string;
  latest_text: string;
  /** BIGINT: a string from a pool with pg's default int8 parser. */
  latest_at: number | string;
  unread_count: number;
  waiting_count: number;
  failed_count: number;
}

export function conversationSummaryFromRow(r: ConversationSummaryRow): ConversationSummary {
  return {
    nodeId: r.node_id,
    nickname: r.nickname,
    latestText: r.latest_text,
    latestAt: Number(r.latest_at),
    unreadCount: r.unread_count,
    waitingCount: Number(r.waiting_count),
    failedCount: Number(r.failed_count),
  };
}
