/**
 * Upstream subscriptions reach the sites that carry their nodes (issue 12): a grant (or billing)
 * sends a `subscription` command to every site that has heard a covered node at that time. A
 * site that hears a covered node only later — a node walking into its range, a site registered
 * after an all-nodes grant — gets the subscriptions it lacks here, in the transaction of the
 * batch that brought its first record of the node, so a crash can never keep the node without
 * the command. A subscription already sent to the site is not sent again (its later changes go
 * to every site that has it, from wherever they are made).
 */
import type pg from 'pg';
import { type CommandBody, subscriptionCommandBody } from '../protocol.js';
import { enqueueCommand } from './downlink-queue.js';

/** Queues, for `siteId`, every live subscription covering one of `newNodeIds` it has not had. */
export async function sendSubscriptionsForNewNodes(
  client: pg.PoolClient,
  siteId: string,
  newNodeIds: readonly string[],
  now: number,
): Promise<number> {
  if (newNodeIds.length === 0) return 0;
  const { rows } = await client.query<{
    id: number | string;
    subscriber: string;
    all_nodes: boolean;
    node_ids: string[];
    expires_at: number | string | null;
  }>(
    `SELECT s.id, s.subscriber, s.all_nodes, s.node_ids, s.expires_at FROM subscriptions s
     WHERE s.status = 'active' AND (s.expires_at IS NULL OR s.expires_at > $3)
       AND (s.all_nodes OR s.node_ids && $2::text[])
       AND NOT EXISTS (
         SELECT 1 FROM downlink d
         WHERE d.site_id = $1 AND d.kind = 'subscription' AND d.body->>'upstream_id' = s.id::text)
     ORDER BY s.id`,
    [siteId, newNodeIds, now],
  );
  for (const row of rows) {
    const body: CommandBody<'subscription'> = subscriptionCommandBody.parse({
      upstream_id: String(row.id),
      subscriber: row.subscriber,
      all_nodes: row.all_nodes,
      node_ids: row.node_ids,
      status: 'active',
      expires_at: row.expires_at === null ? null : Number(row.expires_at),
    });
    await enqueueCommand(client, siteId, 'subscription', body, now);
  }
  return rows.length;
}
