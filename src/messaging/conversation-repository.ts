/**
 * Conversations: one summary row per (subscriber, node), kept in step with the messages by the
 * message repository; the messages of one conversation; read marks; nicknames; and whose
 * conversation an inbound text joins (inbound.ts). Reads are bounded.
 */
import type { Database } from '../store/database.js';
import type { ConversationSummary, Message } from './message.js';
import {
  COLUMNS,
  type ConversationSummaryRow,
  conversationSummaryFromRow,
  fromRow,
  type MessageRow,
  MessagingTables,
  TRANSITION_SQL,
} from './message-rows.js';
import type { ConversationCursor } from './messaging-storage.js';

/**
 * A conversation's summary: its texts still queued (waiting_count) and those that failed since
 * the node last got a text through or replied (failed_count), beside the stored summary row.
 */
const SUMMARY = `SELECT c.node_id, coalesce(c.nickname, n.long_name, n.short_name, c.node_id) AS nickname,
  c.latest_text, c.latest_at, c.unread_count,
  (SELECT count(*) FROM messages q WHERE q.owner = c.owner AND q.node_id = c.node_id
    AND q.direction = 'outbound' AND q.status = 'queued') AS waiting_count,
  (SELECT count(*) FROM messages f WHERE f.owner = c.owner AND f.node_id = c.node_id
    AND f.direction = 'outbound' AND f.status = 'failed' AND f.id > coalesce((SELECT max(r.id) FROM messages r
      WHERE r.owner = c.owner AND r.node_id = c.node_id AND (r.status = 'delivered' OR r.direction = 'inbound')), 0)
  ) AS failed_count
  FROM conversations c LEFT JOIN nodes n ON n.node_id = c.node_id`;

export class ConversationRepository extends MessagingTables {
  constructor(db: Database) {
    super(db, {
      lastWriter: `SELECT owner, owner_name FROM conversations WHERE node_id = ? AND last_outbound_at IS NOT NULL
        ORDER BY last_outbound_at DESC LIMIT 1`,
      correspondent: `SELECT owner, owner_name FROM conversations WHERE node_id = ?
        AND (owner = ? OR lower(owner_name) = ?) ORDER BY latest_at DESC LIMIT 1`,
      conversations: `${SUMMARY}
        WHERE c.owner = ? AND (c.latest_at < ? OR (c.latest_at = ? AND c.node_id > ?))
        ORDER BY c.latest_at DESC, c.node_id LIMIT ?`,
      conversationOne: `${SUMMARY} WHERE c.owner = ? AND c.node_id = ?`,
      conversationMessages: `SELECT ${COLUMNS} FROM messages WHERE owner = ? AND node_id = ? AND id > ?
        ORDER BY id LIMIT ?`,
      unreadIds: `SELECT id FROM messages WHERE owner = ? AND node_id = ? AND direction = 'inbound'
        AND status = 'received' ORDER BY id`,
      markRead: `UPDATE messages SET status = 'read', updated_at = ? WHERE id = ? RETURNING ${COLUMNS}`,
      clearUnread: 'UPDATE conversations SET unread_count = 0 WHERE owner = ? AND node_id = ?',
      nickname: 'UPDATE conversations SET nickname = ? WHERE owner = ? AND node_id = ?',
      unmatched: `SELECT ${COLUMNS} FROM messages WHERE owner IS NULL AND id < ? ORDER BY id DESC LIMIT ?`,
      transition: TRANSITION_SQL,
    });
    // Raw rows (arrays): a thousand summaries per page, no per-row object to build twice.
    this.stmt('conversations').raw(true);
  }

  // --- inbound addressing ---

  /** The subscriber who last wrote to `nodeId`. */
  lastWriter(nodeId: string): { owner: string; ownerName: string | null } | undefined {
    const row = this.stmt<{ owner: string; owner_name: string | null }>('lastWriter').get(nodeId);
    return row ? { owner: row.owner, ownerName: row.owner_name } : undefined;
  }

  /** A subscriber with a conversation with `nodeId` whose id or name is `name` (any case). */
  correspondentNamed(nodeId: string, name: string): { owner: string; ownerName: string | null } | undefined {
    const lower = name.toLowerCase();
    const row = this.stmt<{ owner: string; owner_name: string | null }>('correspondent').get(
      nodeId,
      lower,
      lower,
    );
    return row ? { owner: row.owner, ownerName: row.owner_name } : undefined;
  }

  // --- conversations ---

  conversations(owner: string, limit: number, after?: ConversationCursor): ConversationSummary[] {
    const rows = this.stmt<[string, string, string, number, number, number, number]>('conversations').all(
      owner,
      after?.latestAt ?? Number.MAX_SAFE_INTEGER,
      after?.latestAt ?? Number.MAX_SAFE_INTEGER,
      after?.nodeId ?? '',
      limit,
    );
    return rows.map(([nodeId, nickname, latestText, latestAt, unreadCount, waitingCount, failedCount]) => ({
      nodeId,
      nickname,
      latestText,
      latestAt,
      unreadCount,
      waitingCount,
      failedCount,
    }));
  }

  conversation(owner: string, nodeId: string): ConversationSummary | undefined {
    const row = this.stmt<ConversationSummaryRow>('conversationOne').get(owner, nodeId);
    return row ? conversationSummaryFromRow(row) : undefined;
  }

  /** Messages of one conversation, oldest first, after the row id `afterRowId`. */
  conversationMessages(owner: string, nodeId: string, limit: number, afterRowId = 0): Message[] {
    return this.stmt<MessageRow>('conversationMessages').all(owner, nodeId, afterRowId, limit).map(fromRow);
  }

  /** Marks every unread inbound message of the conversation read; returns those it changed. */
  markConversationRead(owner: string, nodeId: string, at: number): Message[] {
    return this.atomically(() => {
      const ids = this.stmt<{ id: number }>('unreadIds').all(owner, nodeId);
      const changed: Message[] = [];
      for (const { id } of ids) {
        const row = this.stmt<MessageRow>('markRead').get(at, id);
        if (!row) continue;
        this.stmt('transition').run({ id, status: 'read', reason: null, at, attempt: null, code: null });
        changed.push(fromRow(row));
      }
      this.stmt('clearUnread').run(owner, nodeId);
      return changed;
    });
  }

  /** Sets (or with null clears) the subscriber's nickname for a node; false when there is no such conversation. */
  setNickname(owner: string, nodeId: string, nickname: string | null): boolean {
    return this.stmt('nickname').run(nickname, owner, nodeId).changes === 1;
  }

  /** Inbound texts nobody could be matched with, newest first. */
  unmatched(limit: number, beforeRowId = Number.MAX_SAFE_INTEGER): Message[] {
    return this.stmt<MessageRow>('unmatched').all(beforeRowId, limit).map(fromRow);
  }
}
