/**
 * The upstream process (`meshhub upstream`): one PostgreSQL pool, the sites' sync endpoints and
 * downlink, the read API with a `site` dimension, the messaging API for internet subscribers,
 * the token endpoint, /health and /metrics, the web UI, and billing when PLUGINS=billing
 * (billing/index.ts: BTCPay's webhooks reach the upstream). Stateless apart from PostgreSQL and
 * the token signing key in DATA_DIR, so several processes can run behind one load balancer.
 *
 * `createUpstream` only builds (the pool connects lazily, the identity key is read or created);
 * `start()` migrates, creates the time partitions ahead, starts the downlink queue and listens;
 * `stop()` ends every socket (HTTP keep-alive and downlink WebSockets), stops the queue and ends
 * the pool. Errors become problem details in the hub's one onError, with request ids; a
 * PostgreSQL that does not answer is a 503 with Retry-After, not a 500.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createAdaptorServer, type ServerType } from '@hono/node-server';
import { type ErrorHandler, Hono, type MiddlewareHandler } from 'hono';
import type pg from 'pg';
import { requireAuth, verifiedIdentity } from '../../src/auth/require-auth.js';
import { jwksRoutes, tokenRoutes } from '../../src/auth/routes.js';
import { createErrorHandler, notFound, problemResponse } from '../../src/http/error-handler.js';
import { ProblemError } from '../../src/http/problem.js';
import { refuseUpgrade, serveWithoutUpgrade } from '../../src/http/refuse-upgrade.js';
import { requestId } from '../../src/http/request-id.js';
import type { Logger } from '../../src/log.js';
import { secureDataDir } from '../../src/store/data-dir.js';
import { mapRoutes } from '../../src/ui-server/map-routes.js';
import { DEFAULT_WEB_ROOT, openConfiguredMapTiles } from '../../src/ui-server/map-tiles.js';
import { tileOrigins } from '../../src/ui-server/map-tiles-setting.js';
import { StaticAssets } from '../../src/ui-server/static-assets.js';
import { uiRoutes } from '../../src/ui-server/ui-routes.js';
import { readVersion } from '../../src/version.js';
import { type ReadingRow, type RecordBody, SYNC_API } from '../protocol.js';
import { type AppliedChanges, BatchApplier } from './batch-apply.js';
import type { UpstreamBilling } from './billing/index.js';
import { migrateUpstream } from './db/migrate.js';
import { ensurePartitions } from './db/partitions.js';
import { isTransientDatabaseError, openPool } from './db/pool.js';
import { METRIC_COLUMNS } from './db/schema.js';
import { DownlinkQueue } from './downlink-queue.js';
import { HistoryChangeListener } from './history-changes.js';
import { openUpstreamIdentity, type UpstreamIdentity } from './identity.js';
import { messagingOnAck, upstreamMessagingRoutes } from './messaging/routes.js';
import { type ReadAccess, type ReadEnv, readAccess } from './read-access.js';
import { type UpstreamNodeJson, type UpstreamReadingJson, UpstreamReadQueries } from './read-queries.js';
import { DOWNLINK_PATH, downlinkUpgradeHandler } from './routes/downlink-socket.js';
import { healthRoutes, siteCounts, UpstreamMetrics, upstreamAccessMetrics } from './routes/health-routes.js';
import { type UpstreamLive, upstreamLiveRoutes } from './routes/live-routes.js';
import { upstreamNodesRoutes } from './routes/nodes-routes.js';
import { sitesRoutes } from './routes/sites-routes.js';
import { syncRoutes } from './routes/sync-routes.js';
import { upstreamWeatherRoutes } from './routes/weather-routes.js';
import type { UpstreamSettings } from './settings.js';
import { SiteRegistry } from './sites.js';
import { UpstreamUsers } from './users.js';

/** How far ahead of now the monthly partitions are made, and how often that is checked. */
const PARTITIONS_AHEAD_MS = 32 * 86_400_000;
const PARTITIONS_EVERY_MS = 6 * 3_600_000;
/** How long stop() lets downlink sockets close by themselves before it cuts them. */
const STOP_GRACE_MS = 1_000;

export interface UpstreamServer {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The port listened on (HTTP_PORT, or the one chosen for 0); throws before start(). */
  readonly port: number;
  readonly pool: pg.Pool;
  readonly app: Hono;
  readonly identity: UpstreamIdentity;
  readonly metrics: UpstreamMetrics;
  /** Billing (PLUGINS=billing): its routes are mounted at /api/v1/billing. */
  readonly billing?: UpstreamBilling;
}

export interface UpstreamOptions {
  log: Logger;
  /** Process metrics (CPU, memory, event loop) in /metrics; tests leave them out. */
  defaultMetrics?: boolean;
  /** The login throttle's clock (tests). */
  now?: () => number;
}

function upstreamErrorHandler(log: Logger): ErrorHandler {
  const generic = createErrorHandler(log);
  return function upstreamOnError(err, c) {
    if (isTransientDatabaseError(err)) {
      log.warn({ err, path: c.req.path, requestId: c.get('requestId') }, 'PostgreSQL did not answer');
      return problemResponse(
        c,
        new ProblemError(503, 'the database is not answering; try again shortly', {
          headers: { 'retry-after': '5' },
        }),
      );
    }
    return generic(err, c);
  };
}

/** A reading a batch added, as the read API writes it (the live stream's `readings` items). */
function liveReading(siteId: string, row: ReadingRow): UpstreamReadingJson {
  const out: UpstreamReadingJson = {
    node_id: row[0],
    site_id: siteId,
    timestamp: new Date(row[1]).toISOString(),
  };
  METRIC_COLUMNS.forEach((column, slot) => {
    const v = row[2 + slot] as number | null;
    if (v === null) return;
    out[column] = column === 'wind_direction' ? ((Math.round(v) % 360) + 360) % 360 : v;
  });
  return out;
}

/** A node row a batch applied, as `/api/v1/nodes` writes it (the live stream's `node` items). */
function liveNode(siteId: string, node: RecordBody<'node'>): UpstreamNodeJson {
  const out: UpstreamNodeJson = { node_id: node.node_id, site_id: siteId };
  if (node.short_name) out.short_name = node.short_name;
  if (node.long_name) out.long_name = node.long_name;
  if (node.hw_model) out.hw_model = node.hw_model;
  if (node.latitude !== null) out.latitude = node.latitude;
  if (node.longitude !== null) out.longitude = node.longitude;
  if (node.altitude !== null) out.altitude = node.altitude;
  if (node.last_heard !== null) out.last_heard = new Date(node.last_heard).toISOString();
  if (node.battery_level !== null) out.battery_level = node.battery_level;
  if (node.snr !== null) out.snr = node.snr;
  return out;
}

/** `routes` with `guard` in front of every one of them. */
function behind(guard: MiddlewareHandler<ReadEnv>, routes: Hono<ReadEnv> | Hono): Hono<ReadEnv> {
  const app = new Hono<ReadEnv>();
  app.use('*', guard);
  app.route('/', routes as Hono<ReadEnv>);
  return app;
}

/**
 * `/api/v1/live`: the stream behind read access (a `?ticket=` counts as a token), and
 * `POST /tickets` for a signed-in caller whose EventSource cannot send the token.
 */
function liveRoutes(access: ReadAccess, identity: UpstreamIdentity, live: UpstreamLive): Hono {
  const app = new Hono();
  app.post('/tickets', requireAuth(identity.verifier), async (c) => {
    const { ticket, expiresIn } = await access.issueTicket(identity.principalOf(verifiedIdentity(c)).id);
    return c.json({ ticket, expires_in: expiresIn }, 201, { 'cache-control': 'no-store' });
  });
  app.use('/', access.liveMiddleware as MiddlewareHandler);
  app.route('/', live.app as unknown as Hono);
  return app;
}

export async function createUpstream(
  settings: UpstreamSettings,
  options: UpstreamOptions,
): Promise<UpstreamServer> {
  const { log } = options;
  const version = readVersion();
  const startedAt = Date.now();
  const databaseUrl = settings.UPSTREAM_DATABASE_URL.reveal();
  // The pool connects lazily (nothing to close if the start stops below): made first, so the
  // identity can read the users' token versions from it.
  const pool = openPool(databaseUrl, { max: settings.UPSTREAM_DB_POOL_MAX });
  const users = new UpstreamUsers(pool);
  // The signing key's folder is private before the key is read or made (README "Files on disk").
  secureDataDir(settings.DATA_DIR);
  const identity = await openUpstreamIdentity(settings, {
    warn: (message) => log.warn(message),
    users,
    ...(options.now ? { now: options.now } : {}),
  });
  // MAP_TILES naming a file that cannot be used stops the start like any bad setting.
  const tiles = await openConfiguredMapTiles(settings.MAP_TILES);

  const sites = new SiteRegistry(pool, { allowPrivateNetwork: settings.AUTH_JWKS_ALLOW_PRIVATE_NETWORK });
  const queue = new DownlinkQueue(pool, databaseUrl, {
    onAck: messagingOnAck(pool),
    log: log.child({ component: 'downlink-queue' }),
  });
  // Batches applied by any process reach this one's history cache as they commit.
  const historyChanges = settings.UPSTREAM_HISTORY_LISTEN
    ? new HistoryChangeListener(databaseUrl, { log: log.child({ component: 'history' }) })
    : undefined;
  const queries = new UpstreamReadQueries(pool, Date.now, historyChanges);
  const metrics = new UpstreamMetrics({ defaultMetrics: options.defaultMetrics });
  // The dashboard's stream (the web UI in upstream mode); batches applied by other processes
  // do not reach it, the page refetches its snapshot instead.
  const live = upstreamLiveRoutes({ version, startedAt, listSites: () => queries.sites() });
  // What this process applies reaches the open dashboards: per node the newest reading of the
  // batch (a catch-up of 100,000 readings is 50 items, not 100,000), and its node rows.
  const applier = new BatchApplier(pool, {
    onApplied: (siteId: string, changes: AppliedChanges) => {
      if (live.clientCount === 0) return;
      live.publishReadings(changes.latestReadings.map((row) => liveReading(siteId, row)));
      for (const node of changes.nodes) live.publishNode(liveNode(siteId, node));
    },
    log: log.child({ component: 'sync' }),
  });

  const onDownlink = downlinkUpgradeHandler({ sites, queue, log: log.child({ component: 'downlink' }) });
  const downlinkConnections = () => onDownlink.stats().connectedSites.length;
  /** Sockets handed to the downlink handler: the HTTP server no longer tracks them. */
  const downlinks = new Set<Duplex>();
  metrics.watch({
    sites: () => siteCounts(pool),
    downlinks: downlinkConnections,
    history: () => ({
      listening: historyChanges?.liveEpoch() !== undefined,
      queries: queries.historyQueries,
      refills: queries.historyRefills,
    }),
  });

  // Billing runs here when enabled (PLUGINS=billing): BTCPay's webhooks reach the upstream.
  const billing = settings.billing
    ? (await import('./billing/index.js')).upstreamBilling({
        settings: settings.billing,
        pool,
        identity,
        log,
        registry: metrics.registry,
        version,
      })
    : undefined;

  const webRoot = settings.WEB_ROOT ?? DEFAULT_WEB_ROOT;
  const assets = StaticAssets.load(webRoot);
  if (!assets) log.warn({ webRoot }, 'the web app is not built (run npm run build); serving the API only');

  const access = readAccess(identity, { publicRead: settings.UPSTREAM_PUBLIC_READ });
  const app = new Hono();
  app.use(requestId());
  app.use(upstreamAccessMetrics(metrics));
  app.route(
    '/',
    healthRoutes({
      pool,
      metrics,
      version,
      startedAt,
      downlinkConnections,
      metricsToken: settings.UPSTREAM_METRICS_TOKEN,
      publicRead: settings.UPSTREAM_PUBLIC_READ,
    }),
  );
  app.route(SYNC_API, syncRoutes({ sites, applier, log: log.child({ component: 'sync' }) }));
  // The hub's issuer over HTTP, for the upstream's own users. Its login throttle is per process:
  // behind a load balancer of N processes an attacker gets up to N times the attempts. With
  // HTTP_TRUST_PROXY the client address is the last X-Forwarded-For entry, so one proxy does not
  // count as one client.
  app.route(
    '/api/v1/auth',
    tokenRoutes({
      identity,
      users: () => users,
      tokenTtlSeconds: settings.AUTH_TOKEN_TTL / 1000,
      refreshTtlMs: settings.AUTH_REFRESH_TTL,
      trustProxy: settings.HTTP_TRUST_PROXY,
    }),
  );
  app.route('/.well-known', jwksRoutes(identity));
  // Every read needs a token unless UPSTREAM_PUBLIC_READ (read-access.ts).
  app.route('/api/v1/sites', behind(access.middleware, sitesRoutes(queries)));
  app.route('/api/v1/weather', behind(access.middleware, upstreamWeatherRoutes(queries)));
  app.route('/api/v1/nodes', behind(access.middleware, upstreamNodesRoutes(queries)));
  app.route(
    '/api/v1/messages',
    upstreamMessagingRoutes({
      pool,
      identity,
      rates: { perSubscriber: settings.MESSAGE_RATE_PER_SUBSCRIBER, perNode: settings.MESSAGE_RATE_PER_NODE },
    }),
  );
  if (billing) app.route('/api/v1/billing', billing.routes);
  app.route('/api/v1/live', liveRoutes(access, identity, live));
  app.route('/api/v1/map', mapRoutes(tiles.setting, tiles.archive));
  // Last: the web app's files, and index.html for browser routes (SPA fallback).
  app.route('/', uiRoutes({ assets, tileOrigins: tileOrigins(tiles.setting) }));
  app.onError(upstreamErrorHandler(log));
  app.notFound(notFound);

  let server: ServerType | undefined;
  let boundPort: number | undefined;
  let partitionsTimer: NodeJS.Timeout | undefined;
  let stopped = false;

  const makePartitions = async () => {
    const now = Date.now();
    await ensurePartitions(pool, [now, now + PARTITIONS_AHEAD_MS]);
  };

  const listen = () =>
    new Promise<number>((resolve, reject) => {
      const created = createAdaptorServer({ fetch: app.fetch });
      server = created;
      created.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
        // Any upgrade but a WebSocket (h2c from `curl --http2`) is served as the plain request it
        // also is; a WebSocket anywhere but the downlink path gets a 404 problem.
        if (request.headers.upgrade?.toLowerCase() !== 'websocket') {
          serveWithoutUpgrade(created as Server, request, socket, head);
          return;
        }
        const pathname = (request.url ?? '/').split('?')[0] ?? '/';
        if (pathname !== DOWNLINK_PATH) {
          refuseUpgrade(socket, pathname);
          return;
        }
        downlinks.add(socket);
        socket.once('close', () => downlinks.delete(socket));
        onDownlink(request, socket, head);
      });
      created.once('error', reject);
      created.listen(settings.HTTP_PORT, settings.HTTP_HOST, () => {
        created.off('error', reject);
        created.on('error', (err) => log.error({ err }, 'http server error'));
        resolve((created.address() as AddressInfo).port);
      });
    });

  return {
    pool,
    app,
    identity,
    metrics,
    ...(billing ? { billing } : {}),
    get port(): number {
      if (boundPort === undefined) throw new Error('the upstream is not listening');
      return boundPort;
    },
    async start() {
      await migrateUpstream(pool);
      await makePartitions();
      partitionsTimer = setInterval(() => {
        makePartitions().catch((err: unknown) => log.warn({ err }, 'creating partitions ahead failed'));
      }, PARTITIONS_EVERY_MS);
      partitionsTimer.unref();
      await queue.start();
      await historyChanges?.start();
      await billing?.start();
      boundPort = await listen();
      log.info({ host: settings.HTTP_HOST, port: boundPort, version }, 'upstream listening');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (partitionsTimer) clearInterval(partitionsTimer);
      const closing = server;
      server = undefined;
      boundPort = undefined;
      // Sites get a close frame (going away) and reconnect, to another process if there is one;
      // their sockets are ended, and destroyed if they are still open after a grace period.
      onDownlink.closeAll();
      live.closeAll();
      for (const socket of downlinks) socket.end();
      if (closing) {
        const closed = new Promise<void>((resolve) => closing.close(() => resolve()));
        // Keep-alive connections would hold close() open; the process is stopping.
        if ('closeAllConnections' in closing)
          (closing as { closeAllConnections(): void }).closeAllConnections();
        let grace: NodeJS.Timeout | undefined;
        await Promise.race([closed, new Promise((resolve) => (grace = setTimeout(resolve, STOP_GRACE_MS)))]);
        clearTimeout(grace);
        for (const socket of downlinks) socket.destroy();
        await closed;
      }
      for (const socket of downlinks) socket.destroy();
      downlinks.clear();
      await queue.stop();
      await historyChanges?.stop();
      await billing?.stop();
      await tiles.archive?.close().catch((err: unknown) => log.warn({ err }, 'closing the map tiles failed'));
      await pool.end();
    },
  };
}
