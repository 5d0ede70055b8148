/**
 * Messages to and from mesh nodes, and their JSON (spec "Resources and their fields").
 *
 * Status (docs/architecture.md "Decisions"): outbound `queued` → `sent` (implicit ACK: a relay was heard
 * repeating it) → `delivered` (the destination's own ACK) | `failed` (a routing error another
 * attempt cannot mend, or its hold ended: docs/held-texts.md); inbound `received` → `read`.
 */
import type {
  ConversationSummaryJson,
  MessageDetailJson,
  MessageRecordJson,
  MessageStatus,
} from './schemas.js';

export type { ConversationSummaryJson, MessageDetailJson, MessageRecordJson, MessageStatus };
export type MessageDirection = 'outbound' | 'inbound';
export type OutboundStatus = 'queued' | 'sent' | 'delivered' | 'failed';
export type InboundStatus = 'received' | 'read';

export interface Message {
  /** Internal row id: orders messages as they were stored. */
  rowId: number;
  /** The public id (a UUID). */
  id: string;
  /** The subscriber (principal id) whose conversation holds it; null: an unmatched inbound text. */
  owner: string | null;
  ownerName: string | null;
  /** The node at the other end of the conversation. */
  nodeId: string;
  direction: MessageDirection;
  senderNodeId: string | null;
  targetNodeId: string | null;
  text: string;
  status: MessageStatus;
  /** Routing_Error name (`MAX_RETRANSMIT`, …) or `ACK_TIMEOUT`, when failed. */
  failureCode: string | null;
  failureReason: string | null;
  /** Outbound: MeshPacket.id of the latest attempt; inbound: the received packet's id. */
  packetId: number | null;
  attempts: number;
  /** While an attempt waits for any acknowledgement: when it times out (ms). */
  ackDeadline: number | null;
  /** A queued message is not sent before this (ms); retries wait here. */
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
  /**
   * Outbound, at the hub: when its hold ends (ms): a text not yet through by then fails
   * (HOLD_EXPIRED); `createdAt` (or earlier): no hold, it fails after the retries; null: not
   * given yet (the gateway applies MESSAGE_HOLD_HOURS). Absent where unknown (upstream).
   */
  holdUntil?: number | null;
  /** Outbound, at the hub: since when it waits for its node to be heard again (ms); null: it does not. */
  heldSince?: number | null;
}

export interface MessageTransition {
  status: MessageStatus;
  reason: string | null;
  at: number;
  /** The attempt this transition concluded (1, 2, …); null or absent when none did. */
  attempt?: number | null;
  /** Routing_Error name, ACK_TIMEOUT or HOLD_EXPIRED, when the transition had one. */
  code?: string | null;
}

/** What `message.updated` carries: the message after the change. */
export interface MessageChange {
  message: Message;
  /** `created`: newly stored; `status`: a new status; `retry`: still queued, another attempt scheduled. */
  kind: 'created' | 'status' | 'retry';
  previousStatus?: MessageStatus;
}

export interface ConversationSummary {
  nodeId: string;
  nickname: string;
  latestText: string;
  latestAt: number;
  unreadCount: number;
  /** Outbound texts still queued (waiting for the radio, or held for their node). */
  waitingCount: number;
  /** Outbound texts that failed since the node last got a text through or replied. */
  failedCount: number;
}

export const iso = (ms: number): string => new Date(ms).toISOString();

/** The text has a hold (it waits for its node until `holdUntil` instead of failing after the retries). */
export function hasHold(m: Pick<Message, 'holdUntil' | 'createdAt'>): boolean {
  return m.holdUntil !== undefined && m.holdUntil !== null && m.holdUntil > m.createdAt;
}

export function messageRecordJson(m: Message): MessageRecordJson {
  return {
    id: m.id,
    direction: m.direction,
    sender_node_id: m.senderNodeId,
    target_node_id: m.targetNodeId,
    text: m.text,
    status: m.status,
    created_at: iso(m.createdAt),
  };
}

export function messageDetailJson(m: Message, history?: MessageTransition[]): MessageDetailJson {
  const out: MessageDetailJson = { ...messageRecordJson(m), node_id: m.nodeId, updated_at: iso(m.updatedAt) };
  if (m.direction === 'outbound') out.attempts = m.attempts;
  if (m.failureCode !== null) out.failure_code = m.failureCode;
  if (m.failureReason !== null) out.failure_reason = m.failureReason;
  // Only a hub knows these (the upstream's records leave them undefined, and so out).
  // A text that is through (or failed) is held no longer: only a queued one has a hold.
  if (m.direction === 'outbound' && m.holdUntil !== undefined)
    out.hold_until = m.status === 'queued' && hasHold(m) ? iso(m.holdUntil!) : null;
  if (m.direction === 'outbound' && m.heldSince !== undefined) {
    out.waiting_for_node = m.status === 'queued' && m.heldSince !== null ? m.nodeId : null;
    out.next_attempt_at = m.status === 'queued' ? iso(m.nextAttemptAt) : null;
  }
  if (history) {
    out.history = history.map((t) => ({
      status: t.status,
      at: iso(t.at),
      ...(t.reason === null ? {} : { reason: t.reason }),
      ...(t.attempt === null || t.attempt === undefined ? {} : { attempt: t.attempt }),
      ...(t.code === null || t.code === undefined ? {} : { code: t.code }),
    }));
  }
  return out;
}

export function conversationSummaryJson(s: ConversationSummary): ConversationSummaryJson {
  return {
    node_id: s.nodeId,
    nickname: s.nickname,
    latest_text: s.latestText,
    latest_at: iso(s.latestAt),
    unread_count: s.unreadCount,
    waiting_count: s.waitingCount,
    failed_count: s.failedCount,
  };
}
