/**
 * Whether an internet subscriber may text a node, from the upstream's own `subscriptions`
 * (granted by the operator or activated by billing on the upstream), with the hub's semantics
 * (src/messaging/subscription-repository.ts): a subscription allows its subscriber to message a
 * node when it is `active`, not expired, and covers the node (all nodes, or the node in
 * `node_ids`); several add up. When none allows it, the 403 is the hub's, including the
 * lapsed wording that says when the subscription ended and how to renew it.
 */
import type pg from 'pg';
import { ProblemError } from '../../../src/http/problem.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** The subscription that would have covered the node had it not expired. */
export interface LapsedSubscription {
  id: number;
  expiresAt: number;
  source: string;
  reference: string | null;
}

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

/** The hub's 403 for a send no subscription allows; a lapsed one says when it ended and how to renew. */
export async function subscriptionRefusal(
  db: Queryable,
  subscriber: string,
  target: string,
  now: number,
): Promise<ProblemError> {
  const lapsed = await lapsedSubscription(db, subscriber, target, now);
  if (!lapsed) return new ProblemError(403, `your subscription does not allow messaging ${target}`);
  const ended = new Date(lapsed.expiresAt).toISOString();
  const paid = lapsed.source === 'billing' && lapsed.reference !== null;
  const how = paid
    ? `renew it with POST /api/v1/billing/subscriptions/${lapsed.reference}/renew and pay the invoice`
    : 'ask the hub operator to renew it';
  return new ProblemError(403, `your subscription lapsed at ${ended}; ${how}`, {
    type: 'urn:meshhub:problem:subscription-lapsed',
    lapsed_at: ended,
    ...(paid
      ? {
          billing_subscription_id: lapsed.reference,
          renew: `/api/v1/billing/subscriptions/${lapsed.reference}/renew`,
        }
      : {}),
  });
}
