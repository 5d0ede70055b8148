/**
 * The site's downlink (sync/site/downlink-client.ts, downlink-apply.ts) against the REAL upstream
 * WebSocket (sync/upstream/routes/downlink-socket.ts, the DownlinkQueue on PostgreSQL) on
 * loopback, with a real SQLite file: a text applied once though delivered twice, a refused text,
 * a subscription, and the connection coming back after the upstream restarts.
 */
import { describe, expect, it } from 'vitest';
import type { MessageChange } from '../../../src/messaging/message.js';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import type { Database } from '../../../src/store/database.js';
import type { CommandBody } from '../../../sync/protocol.js';
import { PgWeatherReads } from '../../../sync/upstream/weather/pg-reads.js';
import { waitFor } from '../../helpers/hub.js';
import { skipWithoutPostgres } from '../../helpers/postgres.js';
import { type LoopbackUpstream, syncTestbed, type TestSite } from '../helpers/loopback-upstream.js';

const skip = await skipWithoutPostgres();
const bed = syncTestbed({ schemaPrefix: 'sitedown', poolMax: 6, skip });
const HUB_NODE_NUM = 0xabcd;
const NODE = '!a1b2c3d4';

interface Site extends TestSite {
  /** Every `message.updated` the site emitted. */
  changes: MessageChange[];
}

/** A hub with its radio's node known, registered upstream with its own key, its sync actor running. */
async function startSite(upstream: LoopbackUpstream): Promise<Site> {
  const site: Site = { ...(await bed.site(upstream, { idPrefix: 'down' })), changes: [] };
  site.ctx.bus.emit('radio.status', {
    state: 'connected',
    transport: 'tcp',
    simulated: true,
    myNodeNum: HUB_NODE_NUM,
  });
  site.ctx.bus.on('test', 'message.updated', (change) => site.changes.push(change));
  await bed.start(site);
  await connected(site, upstream);
  return site;
}

function downlinkState(site: Site): unknown {
  return (site.actor.describe().sync as { downlink: unknown }).downlink;
}

async function connected(site: Site, upstream: LoopbackUpstream): Promise<void> {
  await waitFor(
    () => downlinkState(site) === 'connected' && upstream.connectedSites.includes(site.siteId),
    20_000,
    'the downlink to connect',
  );
}

function textBody(overrides: Partial<CommandBody<'text'>> = {}): CommandBody<'text'> {
  return {
    message_id: '01890a5d-ac96-774b-bcce-b302099a8057',
    owner: 'carol',
    owner_name: 'Carol',
    node_id: NODE,
    text: 'are you at the hut?',
    created_at: Date.now(),
    ...overrides,
  };
}

function messageCount(db: Database): number {
  return (db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number }).n;
}

describe.skipIf(skip)('site downlink against the real upstream', () => {
  it('a site that stops cleanly is offline upstream at once; a dropped connection is not a stop', async () => {
    const upstream = await bed.upstream({ downlink: true });
    const site = await startSite(upstream);
    const reads = new PgWeatherReads(upstream.pool);
    const listed = async () => (await reads.sites()).find((s) => s.site_id === site.siteId)!;
    expect((await listed()).stopped_at).toBeNull();

    // A network blip: the site reconnects; that is no stop. (Counted by connections, not by
    // watching for the gap: with full jitter the reconnect can come before the next look.)
    const before = upstream.upgrades;
    upstream.cutDownlinks();
    await waitFor(
      () => (upstream.upgrades > before ? true : undefined),
      20_000,
      'the reconnect after the cut',
    );
    await connected(site, upstream);
    expect((await listed()).stopped_at).toBeNull();

    // A clean stop closes the downlink saying so: GET /api/v1/sites has it stopped after its last contact.
    await site.actor.stop();
    const stopped = await waitFor(
      async () => {
        const s = await listed();
        return s.stopped_at ? s : undefined;
      },
      20_000,
      'the stop recorded',
    );
    expect(Date.parse(stopped.stopped_at!)).toBeGreaterThanOrEqual(Date.parse(stopped.last_contact_at!));
  }, 60_000);

  it('applies a text once, though it is delivered twice (the first ack lost), and the gateway is told once', async () => {
    const upstream = await bed.upstream({ downlink: true });
    const site = await startSite(upstream);
    const body = textBody({ message_id: '01890a5d-ac96-774b-bcce-b302099a0001' });
    const id = await upstream.enqueue(site.siteId, 'text', body);

    await waitFor(async () => (await upstream.command(id)).result === 'applied', 10_000, 'the applied ack');
    expect(new MessageRepository(site.db).get(body.message_id)).toMatchObject({
      owner: 'upstream:carol',
      ownerName: 'Carol',
      nodeId: NODE,
      senderNodeId: '!0000abcd',
      status: 'queued',
      direction: 'outbound',
    });

    // As if the ack never arrived: the upstream sends the command again on the next connection.
    await bed.pool.query('UPDATE downlink SET acked_at = NULL, result = NULL WHERE id = $1', [id]);
    upstream.cutDownlinks();
    await waitFor(
      async () => (await upstream.command(id)).result === 'duplicate',
      20_000,
      'the duplicate ack',
    );

    expect((await upstream.command(id)).sent_count).toBe(2);
    expect(messageCount(site.db)).toBe(1);
    expect(site.changes.filter((c) => c.kind === 'created').map((c) => c.message.id)).toEqual([
      body.message_id,
    ]);
    const metrics = await site.metricsText();
    expect(metrics).toContain('meshhub_sync_downlink_commands_total{kind="text",result="applied"} 1');
    expect(metrics).toContain('meshhub_sync_downlink_commands_total{kind="text",result="duplicate"} 1');
    // And its record went up through the outbox.
    await waitFor(async () => {
      const { rows } = await bed.pool.query(
        'SELECT owner, status FROM messages WHERE site_id = $1 AND id = $2',
        [site.siteId, body.message_id],
      );
      return rows[0]?.owner === 'upstream:carol' ? rows[0] : undefined;
    });
  });

  it('rejects a text to its own radio with a reason the upstream records; nothing is stored', async () => {
    const upstream = await bed.upstream({ downlink: true });
    const site = await startSite(upstream);
    const id = await upstream.enqueue(
      site.siteId,
      'text',
      textBody({ message_id: '01890a5d-ac96-774b-bcce-b302099a0002', node_id: '!0000abcd' }),
    );
    await waitFor(async () => (await upstream.command(id)).result !== null, 10_000, 'the ack');
    expect(await upstream.command(id)).toMatchObject({
      result: 'rejected',
      reason: "!0000abcd is this site's own radio",
    });
    expect(messageCount(site.db)).toBe(0);
    expect(site.changes).toEqual([]);
  });

  it('applies a subscription as the site subscription of the upstream principal', async () => {
    const upstream = await bed.upstream({ downlink: true });
    const site = await startSite(upstream);
    const id = await upstream.enqueue(site.siteId, 'subscription', {
      upstream_id: 'up-sub-7',
      subscriber: 'carol',
      all_nodes: false,
      node_ids: [NODE],
      status: 'active',
      expires_at: null,
    });
    await waitFor(async () => (await upstream.command(id)).result === 'applied', 10_000, 'the applied ack');
    const subscriptions = new SubscriptionRepository(site.db);
    expect(subscriptions.list()).toEqual([
      expect.objectContaining({ subscriber: 'upstream:carol', source: 'upstream', reference: 'up-sub-7' }),
    ]);
    expect(subscriptions.allows('upstream:carol', NODE)).toBe(true);
    // It has no bus event of its own, yet goes up at once, not at the next probe.
    const up = await waitFor(async () => {
      const { rows } = await bed.pool.query(
        'SELECT subscriber, reference FROM site_subscriptions WHERE site_id = $1',
        [site.siteId],
      );
      return rows[0];
    });
    expect(up).toEqual({ subscriber: 'upstream:carol', reference: 'up-sub-7' });
  });

  it('reconnects after the upstream restarts and applies what was queued meanwhile', async () => {
    const upstream = await bed.upstream({ downlink: true });
    const site = await startSite(upstream);

    await upstream.stop();
    await waitFor(() => downlinkState(site) !== 'connected', 10_000, 'the downlink to notice');
    const body = textBody({ message_id: '01890a5d-ac96-774b-bcce-b302099a0003' });
    const id = await upstream.enqueue(site.siteId, 'text', body);
    await upstream.start();

    await connected(site, upstream);
    await waitFor(async () => (await upstream.command(id)).result === 'applied', 10_000, 'the applied ack');
    expect(new MessageRepository(site.db).get(body.message_id)?.status).toBe('queued');
    expect(await site.metricsText()).toContain('meshhub_sync_downlink_connected 1');
  });
});
