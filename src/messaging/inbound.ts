/**
 * Whose conversation an inbound text belongs to (docs/architecture.md "Data flows" 3):
 * 1. an `@name` prefix picks a subscriber by name — one who has a conversation with the node, or
 *    whose subscription covers the node (so a field worker can start a conversation);
 * 2. otherwise (or when the name matches nobody) the subscriber who last wrote to the node;
 * 3. otherwise nobody: the text is kept for admins (`GET /api/v1/messages/unmatched`).
 * An `@name` that matches nobody is not an address ("@home soon"): rule 2 applies.
 */
import type { ConversationRepository } from './conversation-repository.js';
import type { SubscriptionRepository } from './subscription-repository.js';

const ADDRESS_PREFIX = /^@([A-Za-z0-9][A-Za-z0-9._:-]{0,63})(?=[\s,:;]|$)/;

export interface Recipient {
  owner: string;
  ownerName: string | null;
}

export function addressedName(text: string): string | undefined {
  const m = ADDRESS_PREFIX.exec(text.trimStart());
  return m?.[1]?.replace(/[.:]+$/, '');
}

export function resolveRecipient(
  text: string,
  nodeId: string,
  conversations: ConversationRepository,
  subscriptions: SubscriptionRepository,
  now: number,
): Recipient | undefined {
  const name = addressedName(text);
  if (name) {
    const correspondent = conversations.correspondentNamed(nodeId, name);
    if (correspondent) return correspondent;
    // Local usernames are lower-case; an identity provider's subject keeps its case.
    const principal = name.startsWith('idp:') ? name : name.toLowerCase();
    if (subscriptions.allows(principal, nodeId, now)) return { owner: principal, ownerName: principal };
  }
  return conversations.lastWriter(nodeId);
}
