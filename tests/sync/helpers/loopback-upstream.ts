/**
 * A REAL upstream on loopback for the site's sync tests (push-upstream, downlink-upstream): the
 * upstream's sync routes (sync/upstream/routes/sync-routes.ts) over node:http on a port that
 * survives a restart, with PostgreSQL in a fresh schema, and, when asked, its downlink WebSocket
 * and queue. Sites are a real SQLite file with the outbox, the context a hub hands a module, and
 * a SyncPushActor registered upstream with the site's own key.
 *
 * `syncTestbed` registers the file's hooks (the schema, migrated, for the whole file; the
 * cleanups after each test), so call it at the top level of a test file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import { Hono } from 'hono';
import type pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { z } from 'zod';
import { standaloneModuleHost } from '../../../hub/module-host.js';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { loadSlices } from '../../../src/config/load.js';
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
import { createTestSchema, type TestSchema } from '../../helpers/postgres.js';

const log = pino({ level: 'silent' });

/**
 * The upstream's sync endpoints on a loopback port that survives a restart of the server. With
 * `databaseUrl`, also the downlink (its WebSocket and the DownlinkQueue); without, an upgrade is
 * cut without an answer.
 */
export class LoopbackUpstream {
  readonly sites: SiteRegistry;
  private readonly queue: DownlinkQueue | undefined;
  private server: Server | undefined;
  private downlink: DownlinkUpgradeHandler | undefined;
  private readonly upgraded = new Set<Duplex>();
  /** Downlink connections upgraded so far (a reconnect after a cut adds one). */
  upgrades = 0;
  /** When set, the next batch is applied but its response never reaches the site. */
  private killNextBatch: (() => void) | undefined;
  port = 0;

  constructor(
    readonly pool: pg.Pool,
    options: { databaseUrl?: string } = {},
  ) {
    this.sites = new SiteRegistry(pool);
    this.queue = options.databaseUrl === undefined ? undefined : new DownlinkQueue(pool, options.databaseUrl);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get connectedSites(): string[] {
    return this.downlink?.stats().connectedSites ?? [];
  }

  async start(): Promise<void> {
    await this.queue?.start();
    const app = new Hono<{ Bindings: HttpBindings }>();
    app.use(`${SYNC_API}/batches`, async (c, next) => {
      await next();
      const kill = this.killNextBatch;
      if (kill && c.res.status === 200) {
        this.killNextBatch = undefined;
        kill();
        c.env.incoming.socket.destroy();
      }
    });
    app.route(SYNC_API, syncRoutes({ sites: this.sites, applier: new BatchApplier(this.pool) }));
    const server = createServer(getRequestListener(app.fetch));
    const downlink = this.queue
      ? downlinkUpgradeHandler({ sites: this.sites, queue: this.queue, heartbeatMs: 1_000 })
      : undefined;
    server.on('upgrade', (request, socket: Duplex, head: Buffer) => {
      if (!downlink) {
        socket.destroy();
        return;
      }
      this.upgraded.add(socket);
      this.upgrades++;
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
    await this.queue?.stop();
  }

  /** Drops the downlink connections (the site reconnects); the server stays. */
  cutDownlinks(): void {
    for (const socket of this.upgraded) socket.destroy();
  }

  /** The next batch is applied upstream, then its connection is cut before the answer. */
  loseNextAck(onLost: () => void): void {
    this.killNextBatch = onLost;
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

  async count(sql: string, siteId: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(sql, [siteId]);
    return Number(rows[0]?.n ?? 0);
  }
}

/** A hub's database and sync actor, registered upstream with its own key (not started). */
export interface TestSite {
  siteId: string;
  db: Database;
  /** The context the hub hands a module: the sync actor's bus, metrics and signer come from it. */
  ctx: ModuleContext;
  actor: SyncPushActor;
  metricsText(): Promise<string>;
}

export interface SiteOptions {
  /** Site ids are `<idPrefix>-<pid>-<n>`. */
  idPrefix: string;
  /** The site's clock. */
  now?: () => number;
  /** Settings over the test's defaults (SYNC_UPSTREAM_URL, SYNC_SITE_ID, SYNC_RETRY_MAX=2s). */
  env?: Record<string, string>;
}

export interface SyncTestbed {
  /** The pool on this file's schema (from beforeAll on). */
  readonly pool: pg.Pool;
  /** The connection string of this file's schema (from beforeAll on). */
  readonly databaseUrl: string;
  /** Runs `fn` after the current test, the last added first. */
  cleanup(fn: () => Promise<void> | void): void;
  /** A started upstream on this file's schema, stopped after the test. */
  upstream(options?: { downlink?: boolean }): Promise<LoopbackUpstream>;
  /** A site of `upstream`; its files are removed after the test. */
  site(upstream: LoopbackUpstream, options: SiteOptions): Promise<TestSite>;
  /** Starts the site's sync actor, stopped after the test. */
  start(site: TestSite): Promise<void>;
}

/**
 * A site for the sync tests: a real SQLite file with the outbox (removed by `cleanup`), the
 * context a hub hands a module, its key registered upstream through `register`, and a
 * SyncPushActor (not started) with the sync settings `env` over SYNC_SITE_ID=`siteId`.
 */
export async function openSyncSite(options: {
  siteId: string;
  /** Names the site's temporary folder. */
  label: string;
  env: Record<string, string>;
  register(publicJwks: ReturnType<LocalIssuer['jwks']>): Promise<unknown>;
  cleanup(fn: () => Promise<void> | void): void;
  now?: () => number;
}): Promise<TestSite> {
  const { siteId } = options;
  const dir = mkdtempSync(join(tmpdir(), `meshhub-sync-${options.label}-`));
  const db = openDatabase(join(dir, 'meshhub.sqlite'));
  options.cleanup(() => {
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
  await options.register((await LocalIssuer.open(dir)).jwks());
  const settings = loadSlices({ SYNC_SITE_ID: siteId, ...options.env }, [syncModule]).get(
    'sync',
  ) as Parameters<typeof syncConfigFrom>[0];
  const actor = new SyncPushActor({
    config: syncConfigFrom(settings)!,
    db,
    bus: ctx!.bus,
    log,
    signer: ctx!.auth.signer,
    metrics: new SyncMetrics(ctx!.metrics),
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    siteId,
    db,
    ctx: ctx!,
    actor,
    metricsText: async () => (await host.metrics.render()).body,
  };
}

/**
 * Registers a fresh, migrated schema named `<schemaPrefix>_…` for the file (a pool of at most
 * `poolMax`), and the cleanups after each test. Nothing is set up when `skip`.
 */
export function syncTestbed(options: { schemaPrefix: string; poolMax: number; skip: boolean }): SyncTestbed {
  let schema: TestSchema | undefined;
  let pool: pg.Pool | undefined;
  const cleanups: Array<() => Promise<void> | void> = [];
  let siteCounter = 0;

  beforeAll(async () => {
    if (options.skip) return;
    schema = await createTestSchema(options.schemaPrefix);
    pool = openPool(schema.url, { max: options.poolMax });
    await migrateUpstream(pool);
  });
  afterAll(async () => {
    if (options.skip) return;
    await pool?.end();
    await schema?.drop();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const bed: SyncTestbed = {
    get pool() {
      if (!pool) throw new Error('the testbed has no database before beforeAll (or when skipped)');
      return pool;
    },
    get databaseUrl() {
      if (!schema) throw new Error('the testbed has no database before beforeAll (or when skipped)');
      return schema.url;
    },
    cleanup(fn) {
      cleanups.push(fn);
    },
    async upstream(upstreamOptions = {}) {
      const upstream = new LoopbackUpstream(
        bed.pool,
        upstreamOptions.downlink ? { databaseUrl: bed.databaseUrl } : {},
      );
      await upstream.start();
      cleanups.push(() => upstream.stop());
      return upstream;
    },
    async site(upstream, siteOptions) {
      const siteId = `${siteOptions.idPrefix}-${process.pid}-${++siteCounter}`;
      return openSyncSite({
        siteId,
        label: siteOptions.idPrefix,
        env: { SYNC_UPSTREAM_URL: upstream.url, SYNC_RETRY_MAX: '2s', ...siteOptions.env },
        register: (publicJwks) => upstream.sites.add({ siteId, publicJwks }),
        cleanup: (fn) => cleanups.push(fn),
        ...(siteOptions.now ? { now: siteOptions.now } : {}),
      });
    },
    async start(site) {
      await site.actor.start();
      cleanups.push(() => site.actor.stop());
    },
  };
  return bed;
}
