/**
 * A renumbered node's texts follow it (`node.renumbered`, src/nodes/renumber.ts), in one
 * transaction: its messages (queued and held texts are then sent to the new number, the first
 * time it is heard), its conversations (merged with any already under the new id: the newer
 * latest text, unread counts added, a nickname kept) and the subscriptions that name it. Message
 * rows keep their public ids and transitions, so nothing is sent twice and the sync outbox gets
 * no new message entry (node ids are not what it watches).
 */
import type { Database } from '../store/database.js';

export interface RenumberedTexts {
  messages: number;
  conversations: number;
  /** Queued texts made due at once: the new number was just heard and never tried. */
  due: number;
}

export function renumberTexts(db: Database, oldId: string, newId: string, now: number): RenumberedTexts {
  if (oldId === newId) return { messages: 0, conversations: 0, due: 0 };
  const args = { old: oldId, new: newId };
  return db.transaction(() => {
    // The pause between attempts of a held text is for a node that does not answer; the new
    // number has not been asked yet, so its texts go now (in their turn for airtime).
    const due = db
      .prepare(
        `UPDATE messages SET next_attempt_at = :now WHERE node_id = :old AND direction = 'outbound'
         AND status = 'queued' AND ack_deadline IS NULL AND next_attempt_at > :now`,
      )
      .run({ old: oldId, now }).changes;
    // OR IGNORE: an inbound text the new id already has under the same packet id stays where it is.
    const messages = db
      .prepare('UPDATE OR IGNORE messages SET node_id = :new WHERE node_id = :old')
      .run(args).changes;
    db.prepare('UPDATE messages SET target_node_id = :new WHERE target_node_id = :old').run(args);
    db.prepare('UPDATE messages SET sender_node_id = :new WHERE sender_node_id = :old').run(args);
    // SET expressions read the row as it was, so the CASEs compare with the new id's own latest text.
    const conversations = db
      .prepare(
        `INSERT INTO conversations (owner, owner_name, node_id, nickname, latest_message_id, latest_text,
           latest_at, last_outbound_at, unread_count)
         SELECT owner, owner_name, :new, nickname, latest_message_id, latest_text, latest_at, last_outbound_at,
           unread_count FROM conversations WHERE node_id = :old
         ON CONFLICT (owner, node_id) DO UPDATE SET
           nickname = coalesce(nickname, excluded.nickname),
           latest_message_id = CASE WHEN excluded.latest_at > latest_at THEN excluded.latest_message_id ELSE latest_message_id END,
           latest_text = CASE WHEN excluded.latest_at > latest_at THEN excluded.latest_text ELSE latest_text END,
           latest_at = max(latest_at, excluded.latest_at),
           last_outbound_at = max(coalesce(last_outbound_at, excluded.last_outbound_at),
             coalesce(excluded.last_outbound_at, last_outbound_at)),
           unread_count = unread_count + excluded.unread_count`,
      )
      .run(args).changes;
    db.prepare('DELETE FROM conversations WHERE node_id = :old').run(args);
    db.prepare(
      `INSERT OR IGNORE INTO subscription_nodes (subscription_id, node_id)
       SELECT subscription_id, :new FROM subscription_nodes WHERE node_id = :old`,
    ).run(args);
    db.prepare('DELETE FROM subscription_nodes WHERE node_id = :old').run(args);
    return { messages, conversations, due };
  })();
}
