/**
 * Whether an internet subscriber may text a node, from the upstream's own `subscriptions`
 * (granted by the operator or activated by billing on the upstream), with the hub's semantics
 * (src/messaging/subscription-repository.ts): a subscription allows its subscriber to message a
 * node when it is `active`, not expired, and covers the node (all nodes, or the node in
 * `node_ids`); several add up. When none allows it, the 403 is the hub's
 * (src/messaging/refusals.ts `subscriptionRefusal`, given `lapsedSubscription`), including the
 * lapsed wording that says when the subscription ended and how to renew it.
 */
import type pg from 'pg';
import type { LapsedSubscription as Lapsed } from '../../../src/messaging/refusals.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** The subscription that would have covered the node had it not expired (and its upstream id). */
export type LapsedSubscription = Lapsed & { id: number; expiresAt: number };

/** Whether an active, unexpired subscription of `subscriber` covers `nodeId` at `now`. */
export async function subscriptionAllows(
  db: Queryable,
  subscriber: string,
  nodeId: string,
  now: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM subscriptions WHERE subscriber = $1 AND status = 'active'
       AND (expires_at IS NULL OR expires_at > $2) AND (all_nodes OR $3 = ANY (node_ids))
     LIMIT 1`,
    [subscriber, now, nodeId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Why `subscriptionAllows` says no, when the reason is a lapse: the most recently ended active
 * subscription that would cover `nodeId` had it not expired.
 */
export async function lapsedSubscription(
  db: Queryable,
  subscriber: string,
  nodeId: string,
  now: number,
): Promise<LapsedSubscription | undefined> {
  const { rows } = await db.query<{
    id: string;
    expires_at: string;
    source: string;
    reference: string | null;
  }>(
    `SELECT id, expires_at, source, reference FROM subscriptions WHERE subscriber = $1 AND status = 'active'
       AND expires_at IS NOT NULL AND expires_at <= $2 AND (all_nodes OR $3 = ANY (node_ids))
     ORDER BY expires_at DESC LIMIT 1`,
    [subscriber, now, nodeId],
  );
  const row = rows[0];
  return row
    ? { id: Number(row.id), expiresAt: Number(row.expires_at), source: row.source, reference: row.reference }
    : undefined;
}
