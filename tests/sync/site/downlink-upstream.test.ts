/**
 * The site's downlink (sync/site/downlink-client.ts, downlink-apply.ts) against the REAL upstream
 * WebSocket (sync/upstream/routes/downlink-socket.ts, the DownlinkQueue on PostgreSQL) on
 * loopback, with a real SQLite file: a text applied once though delivered twice, a refused text,
 * a subscription, and the connection coming back after the upstream restarts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { standaloneModuleHost } from '../../../hub/module-host.js';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { loadSlices } from '../../../src/config/load.js';
import type { MessageChange } from '../../../src/messaging/message.js';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { defineModule, type ModuleContext } from '../../../src/module.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { type CommandBody, SYNC_API } from '../../../sync/protocol.js';
import { SyncMetrics } from '../../../sync/site/metrics.js';
import { syncModule } from '../../../sync/site/module.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';
import { SyncPushActor } from '../../../sync/site/push-actor.js';
import { syncConfigFrom } from '../../../sync/site/settings.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { DownlinkQueue, enqueueCommand } from '../../../sync/upstream/downlink-queue.js';
import {
  type DownlinkUpgradeHandler,
  downlinkUpgradeHandler,
} from '../../../sync/upstream/routes/downlink-socket.js';
import { syncRoutes } from '../../../sync/upstream/routes/sync-routes.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { waitFor } from '../../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();
const log = pino({ level: 'silent' });
const HUB_NODE_NUM = 0xabcd;
const NODE = '!a1b2c3d4';

/** The upstream's sync endpoints and downlink on a loopback port that survives a restart. */
class LoopbackUpstream {
  readonly sites: SiteRegistry;
  readonly queue: DownlinkQueue;
  private server: Server | undefined;
  private downlink: DownlinkUpgradeHandler | undefined;
  private readonly upgraded = new Set<Duplex>();
  port = 0;

  constructor(
    readonly pool: pg.Pool,
    databaseUrl: string,
  ) {
    this.sites = new SiteRegistry(pool);
    this.queue = new DownlinkQueue(pool, databaseUrl);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get connectedSites(): string[] {
    return this.downlink?.stats().connectedSites ?? [];
  }

  async start(): Promise<void> {
    await this.queue.start();
    const app = new Hono();
    app.route(SYNC_API, syncRoutes({ sites: this.sites, applier: new BatchApplier(this.pool) }));
    const server = createServer(getRequestListener(app.fetch));
    const downlink = downlinkUpgradeHandler({ sites: this.sites, queue: this.queue, heartbeatMs: 1_000 });
    server.on('upgrade', (request, socket: Duplex, head: Buffer) => {
      this.upgraded.add(socket);
      socket.once('close', () => this.upgraded.delete(socket));
      downlink(request, socket, head);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    this.downlink = downlink;
  }

  /** As a process that dies: every socket cut, nothing said. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    for (const socket of this.upgraded) socket.destroy();
    await closed;
    await this.queue.stop();
  }

  /** Drops the downlink connections (the site reconnects); the server stays. */
  cutDownlinks(): void {
    for (const socket of this.upgraded) socket.destroy();
  }

  enqueue<K extends 'text' | 'subscription' | 'user'>(
    siteId: string,
    kind: K,
    body: CommandBody<K>,
  ): Promise<number> {
    return enqueueCommand(this.pool, siteId, kind, body);
  }

  async command(id: number): Promise<{ result: string | null; reason: string | null; sent_count: number }> {
    const { rows } = await this.pool.query('SELECT result, reason, sent_count FROM downlink WHERE id = $1', [
      id,
    ]);
    return rows[0];
  }
}

let schema: TestSchema;
let pool: pg.Pool;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  if (skip) return;
  schema = await createTestSchema('sitedown');
  pool = openPool(schema.url, { max: 6 });
  await migrateUpstream(pool);
});
afterAll(async () => {
  if (skip) return;
  await pool.end();
  await schema.drop();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let siteCounter = 0;

interface Site {
  siteId: string;
  db: Database;
  ctx: ModuleContext;
  actor: SyncPushActor;
  /** Every `message.updated` the site emitted. */
  changes: MessageChange[];
  metricsText(): Promise<string>;
}

/** A hub with its radio's node known, registered upstream with its own key, its sync actor running. */
async function startSite(upstream: LoopbackUpstream): Promise<Site> {
  const siteId = `down-${process.pid}-${++siteCounter}`;
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-sync-downlink-'));
  const db = openDatabase(join(dir, 'meshhub.sqlite'));
  cleanups.push(() => {
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  });
  enableOutbox(db);
  const host = await standaloneModuleHost({ db, dataDir: dir, log });
  let ctx: ModuleContext | undefined;
  await host.host.create(
    defineModule({
      name: 'sync-test',
      settings: z.object({}),
      create(c) {
        ctx = c;
        return {};
      },
    }),
    {},
  );
  ctx!.bus.emit('radio.status', {
    state: 'connected',
    transport: 'tcp',
    simulated: true,
    myNodeNum: HUB_NODE_NUM,
  });
  const changes: MessageChange[] = [];
  ctx!.bus.on('test', 'message.updated', (change) => changes.push(change));
  await upstream.sites.add({ siteId, publicJwks: (await LocalIssuer.open(dir)).jwks() });
  const settings = loadSlices(
    { SYNC_UPSTREAM_URL: upstream.url, SYNC_SITE_ID: siteId, SYNC_RETRY_MAX: '2s' },
    [syncModule],
  ).get('sync') as Parameters<typeof syncConfigFrom>[0];
  const actor = new SyncPushActor({
    config: syncConfigFrom(settings)!,
    db,
    bus: ctx!.bus,
    log,
    signer: ctx!.auth.signer,
    metrics: new SyncMetrics(ctx!.metrics),
  });
  await actor.start();
  cleanups.push(() => actor.stop());
  const site: Site = {
    siteId,
    db,
    ctx: ctx!,
    actor,
    changes,
    metricsText: async () => (await host.metrics.render()).body,
  };
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
  it('applies a text once, though it is delivered twice (the first ack lost), and the gateway is told once', async () => {
    const upstream = new LoopbackUpstream(pool, schema.url);
    await upstream.start();
    cleanups.push(() => upstream.stop());
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
    await pool.query('UPDATE downlink SET acked_at = NULL, result = NULL WHERE id = $1', [id]);
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
      const { rows } = await pool.query('SELECT owner, status FROM messages WHERE site_id = $1 AND id = $2', [
        site.siteId,
        body.message_id,
      ]);
      return rows[0]?.owner === 'upstream:carol' ? rows[0] : undefined;
    });
  });

  it('rejects a text to its own radio with a reason the upstream records; nothing is stored', async () => {
    const upstream = new LoopbackUpstream(pool, schema.url);
    await upstream.start();
    cleanups.push(() => upstream.stop());
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
    const upstream = new LoopbackUpstream(pool, schema.url);
    await upstream.start();
    cleanups.push(() => upstream.stop());
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
      const { rows } = await pool.query(
        'SELECT subscriber, reference FROM site_subscriptions WHERE site_id = $1',
        [site.siteId],
      );
      return rows[0];
    });
    expect(up).toEqual({ subscriber: 'upstream:carol', reference: 'up-sub-7' });
  });

  it('reconnects after the upstream restarts and applies what was queued meanwhile', async () => {
    const upstream = new LoopbackUpstream(pool, schema.url);
    await upstream.start();
    cleanups.push(() => upstream.stop());
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
