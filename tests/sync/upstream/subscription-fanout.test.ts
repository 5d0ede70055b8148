/**
 * Issue 12: "the subscriptions it activates flow down to the sites that carry the nodes" — also
 * to a site that hears a covered node only after the grant (a node walking into its range, a site
 * registered after an all-nodes grant): the batch that brings the site's first record of the node
 * queues the subscription for it, once. Real PostgreSQL, the real BatchApplier and grant.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { grantUpstreamSubscription } from '../../../sync/upstream/commands.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { nodeBody } from '../helpers/records.js';
import { migratedSchema } from './helpers.js';

const skip = await skipWithoutPostgres();

const T0 = Date.UTC(2026, 2, 10, 8, 0);
const A = '!0000000a';
const B = '!0000000b';

describe.skipIf(skip)('upstream subscriptions reach sites that hear a node later', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let applier: BatchApplier;
  const seqs = new Map<string, number>();

  /** A batch of node records from `siteId`, after its last one. */
  async function hears(siteId: string, ...nodeIds: string[]): Promise<void> {
    const first = seqs.get(siteId) ?? 1;
    const at = T0 + first * 1000;
    const batch: Batch = {
      protocol: 1,
      site_id: siteId,
      first_seq: first,
      last_seq: first + nodeIds.length - 1,
      records: nodeIds.map((id, i) => ({ seq: first + i, at, kind: 'node', body: nodeBody(id, at) })),
      dropped: [],
      sent_at: at,
    };
    seqs.set(siteId, first + nodeIds.length);
    expect((await applier.apply(siteId, batch)).kind).toBe('applied');
  }

  /** The subscription commands queued per site: [site, upstream_id, subscriber]. */
  async function commands(): Promise<string[][]> {
    const { rows } = await pool.query<{ site_id: string; id: string; subscriber: string }>(
      `SELECT site_id, body->>'upstream_id' AS id, body->>'subscriber' AS subscriber FROM downlink
       WHERE kind = 'subscription' ORDER BY site_id, id`,
    );
    return rows.map((r) => [r.site_id, r.id, r.subscriber]);
  }

  beforeEach(async () => {
    ({ schema, pool } = await migratedSchema('fanout', ['north', 'south'], 3));
    applier = new BatchApplier(pool, { now: () => T0 + 60_000 });
    seqs.clear();
  });
  afterEach(async () => {
    await pool.end();
    await schema.drop();
  });

  it('sends a grant for a node no site has heard yet to the first site that hears it, once', async () => {
    const grant = await grantUpstreamSubscription(
      pool,
      { subscriber: 'alice', nodes: [A], expiresAt: null, source: 'operator' },
      T0,
    );
    expect(grant.sites).toEqual([]);
    expect(await commands()).toEqual([]);

    await hears('north', B);
    expect(await commands()).toEqual([]);
    await hears('north', A);
    expect(await commands()).toEqual([['north', String(grant.id), 'alice']]);
    // The node again, and later at another site too: north is not sent it twice; south gets it.
    await hears('north', A, B);
    await hears('south', A);
    expect(await commands()).toEqual([
      ['north', String(grant.id), 'alice'],
      ['south', String(grant.id), 'alice'],
    ]);
  });

  it('sends an all-nodes grant to a site that starts reporting after it, and no expired one', async () => {
    await hears('north', A);
    const all = await grantUpstreamSubscription(
      pool,
      { subscriber: 'bob', nodes: 'all', expiresAt: null, source: 'operator' },
      T0,
    );
    await grantUpstreamSubscription(
      pool,
      { subscriber: 'carol', nodes: 'all', expiresAt: T0, source: 'operator' },
      T0 - 1000,
    );
    // The grant itself went to every site (both registered): south has it already.
    const before = await commands();
    expect(before.filter(([, id]) => id === String(all.id)).map(([site]) => site)).toEqual([
      'north',
      'south',
    ]);
    await pool.query("DELETE FROM downlink WHERE site_id = 'south'");
    // South's first node: bob's live grant comes down again; carol's lapsed one does not.
    await hears('south', B);
    expect((await commands()).filter(([site]) => site === 'south')).toEqual([
      ['south', String(all.id), 'bob'],
    ]);
  });
});
