/**
 * A settled invoice on the upstream lets its subscriber text the plan's nodes: the rows
 * `meshhub upstream subscription grant` writes (commands.ts `grantUpstreamSubscription`), with
 * source `billing` and reference = the billing subscription id, made or extended INSIDE the
 * billing transaction (the caller's client), so a crash can never keep a payment without its
 * grant or a grant without its `subscription` commands.
 *
 * Each change queues one `subscription` command, with the upstream id, for every site (not
 * revoked) that carries a covered node (every site for all nodes) or was sent this subscription
 * before. A site upserts it by that id (sync/site/downlink-apply.ts), so a renewal updates the
 * site's row instead of adding one. A site that hears a covered node only later gets it from the
 * batch apply (subscription-fanout.ts).
 */
import type pg from 'pg';
import { type CommandBody, subscriptionCommandBody } from '../../protocol.js';
import { enqueueCommand } from '../downlink-queue.js';

export const BILLING_SOURCE = 'billing';

export interface BillingGrant {
  subscriber: string;
  nodes: 'all' | readonly string[];
  /** Messaging allowed until (period end + grace), ms since the epoch; null: no end (an operator's grant). */
  expiresAt: number | null;
  /** The billing subscription id (or an operator's own reference). */
  reference: string | null;
  /** Who granted it: `billing` unless said (`meshhub upstream subscription grant` says its own). */
  source?: string;
}

/**
 * Makes (grantId null) or extends and reactivates (grantId given) the upstream subscription, and
 * queues its `subscription` command for the sites concerned. Returns its id and those sites.
 */
export async function grantOrExtend(
  client: pg.PoolClient,
  grantId: number | null,
  grant: BillingGrant,
  at: number,
): Promise<{ id: number; sites: string[] }> {
  type Row = { id: number | string; subscriber: string; all_nodes: boolean; node_ids: string[] };
  let row: Row | undefined;
  if (grantId !== null) {
    ({
      rows: [row],
    } = await client.query<Row>(
      `UPDATE subscriptions SET status = 'active', expires_at = $2, updated_at = $3 WHERE id = $1
       RETURNING id, subscriber, all_nodes, node_ids`,
      [grantId, grant.expiresAt, at],
    ));
  }
  if (!row) {
    const allNodes = grant.nodes === 'all';
    ({
      rows: [row],
    } = await client.query<Row>(
      `INSERT INTO subscriptions (subscriber, all_nodes, node_ids, status, expires_at, source, reference, created_at, updated_at)
       VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $7) RETURNING id, subscriber, all_nodes, node_ids`,
      [
        grant.subscriber,
        allNodes,
        allNodes ? [] : [...new Set(grant.nodes)].sort(),
        grant.expiresAt,
        grant.source ?? BILLING_SOURCE,
        grant.reference,
        at,
      ],
    ));
  }
  const id = Number(row!.id);
  const { rows: sites } = await client.query<{ site_id: string }>(
    `SELECT s.site_id FROM sites s WHERE s.revoked_at IS NULL AND (
       $1::boolean
       OR EXISTS (SELECT 1 FROM nodes n WHERE n.site_id = s.site_id AND n.node_id = ANY ($2::text[]))
       OR EXISTS (SELECT 1 FROM downlink d WHERE d.site_id = s.site_id AND d.kind = 'subscription'
                    AND d.body->>'upstream_id' = $3))
     ORDER BY s.site_id`,
    [row!.all_nodes, row!.node_ids, String(id)],
  );
  const body: CommandBody<'subscription'> = subscriptionCommandBody.parse({
    upstream_id: String(id),
    subscriber: row!.subscriber,
    all_nodes: row!.all_nodes,
    node_ids: row!.node_ids,
    status: 'active',
    expires_at: grant.expiresAt,
  });
  for (const { site_id } of sites) await enqueueCommand(client, site_id, 'subscription', body, at);
  return { id, sites: sites.map((s) => s.site_id) };
}
