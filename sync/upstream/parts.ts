/**
 * The upstream's parts, each a service with the routes it answers and what it runs, composed by
 * main.ts into the server (server.ts) as the hub's modules are into the hub
 * (docs/architecture.md "The two applications").
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { requireAuth, verifiedIdentity } from '../../src/auth/require-auth.js';
import { jwksRoutes, tokenRoutes } from '../../src/auth/routes.js';
import { openApiRoutes } from '../../src/http/api-docs.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';
import { mapRoutes } from '../../src/ui-server/map-routes.js';
import { DEFAULT_WEB_ROOT } from '../../src/ui-server/map-tiles.js';
import { tileOrigins } from '../../src/ui-server/map-tiles-setting.js';
import { StaticAssets } from '../../src/ui-server/static-assets.js';
import { uiRoutes } from '../../src/ui-server/ui-routes.js';
import { type ReadingRow, SYNC_API } from '../protocol.js';
import { type AppliedChanges, BatchApplier } from './batch-apply.js';
import { DownlinkQueue } from './downlink-queue.js';
import { HistoryChangeListener } from './history-changes.js';
import type { UpstreamIdentity } from './identity.js';
import { messagingOnAck, upstreamMessagingRoutes } from './messaging/routes.js';
import { type ReadAccess, type ReadEnv, readAccess } from './read-access.js';
import { DOWNLINK_PATH, downlinkUpgradeHandler } from './routes/downlink-socket.js';
import { healthRoutes, siteCounts } from './routes/health-routes.js';
import { type UpstreamLive, upstreamLiveRoutes } from './routes/live-routes.js';
import { upstreamNodesRoutes } from './routes/nodes-routes.js';
import { upstreamOpenApiDocument } from './routes/openapi.js';
import { sitesRoutes } from './routes/sites-routes.js';
import { syncRoutes } from './routes/sync-routes.js';
import { upstreamWeatherRoutes } from './routes/weather-routes.js';
import type { UpstreamCore, UpstreamPart, UpstreamUpgrade } from './server.js';
import { SiteRegistry } from './sites.js';
import { PgWeatherReads, type UpstreamReadingJson, upstreamNodeJson } from './weather/pg-reads.js';

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

/**
 * The sites' data: registration and batches in (`/sync/v1`), the downlink queue and its
 * WebSocket, and the read API over what the sites sent (sites, weather, nodes, the live stream),
 * behind read access unless UPSTREAM_PUBLIC_READ (read-access.ts). `health` is the health
 * part, which reports the downlink connections.
 */
export function siteDataPart(core: UpstreamCore): {
  part: UpstreamPart;
  health: UpstreamPart;
  upgrade: UpstreamUpgrade;
} {
  const { settings, pool, log, identity, metrics } = core;
  const sites = new SiteRegistry(pool, { allowPrivateNetwork: settings.AUTH_JWKS_ALLOW_PRIVATE_NETWORK });
  const queue = new DownlinkQueue(pool, core.databaseUrl, {
    onAck: messagingOnAck(pool),
    log: log.child({ component: 'downlink-queue' }),
  });
  // Batches applied by any process reach this one's history cache as they commit.
  const historyChanges = settings.UPSTREAM_HISTORY_LISTEN
    ? new HistoryChangeListener(core.databaseUrl, { log: log.child({ component: 'history' }) })
    : undefined;
  const queries = new PgWeatherReads(pool, Date.now, historyChanges);
  // The dashboard's stream (the web UI in upstream mode); batches applied by other processes
  // do not reach it, the page refetches its snapshot instead.
  const live = upstreamLiveRoutes({
    version: core.version,
    startedAt: core.startedAt,
    listSites: () => queries.sites(),
  });
  // What this process applies reaches the open dashboards: per node the newest reading of the
  // batch (a catch-up of 100,000 readings is 50 items, not 100,000), and its node rows.
  const applier = new BatchApplier(pool, {
    onApplied: (siteId: string, changes: AppliedChanges) => {
      if (live.clientCount === 0) return;
      live.publishReadings(changes.latestReadings.map((row) => liveReading(siteId, row)));
      for (const node of changes.nodes) live.publishNode(upstreamNodeJson(siteId, node));
    },
    log: log.child({ component: 'sync' }),
  });
  const onDownlink = downlinkUpgradeHandler({ sites, queue, log: log.child({ component: 'downlink' }) });
  const downlinkConnections = () => onDownlink.stats().connectedSites.length;
  metrics.watch({
    sites: () => siteCounts(pool),
    downlinks: downlinkConnections,
    history: () => ({
      listening: historyChanges?.liveEpoch() !== undefined,
      queries: queries.historyQueries,
      refills: queries.historyRefills,
    }),
  });
  const access = readAccess(identity, { publicRead: settings.UPSTREAM_PUBLIC_READ });
  const health = healthRoutes({
    pool,
    metrics,
    version: core.version,
    startedAt: core.startedAt,
    downlinkConnections,
    metricsToken: settings.UPSTREAM_METRICS_TOKEN,
    publicRead: settings.UPSTREAM_PUBLIC_READ,
  });
  const part: UpstreamPart = {
    routes: [
      [SYNC_API, syncRoutes({ sites, applier, log: log.child({ component: 'sync' }) })],
      ['/api/v1/sites', behind(access.middleware, sitesRoutes(queries))],
      ['/api/v1/weather', behind(access.middleware, upstreamWeatherRoutes(queries))],
      ['/api/v1/nodes', behind(access.middleware, upstreamNodesRoutes(queries))],
      ['/api/v1/live', liveRoutes(access, identity, live)],
    ],
    async start() {
      await queue.start();
      await historyChanges?.start();
    },
    closeSockets() {
      onDownlink.closeAll();
      live.closeAll();
    },
    async stop() {
      await queue.stop();
      await historyChanges?.stop();
    },
  };
  return { part, health: { routes: [['/', health]] }, upgrade: { path: DOWNLINK_PATH, handle: onDownlink } };
}

/**
 * The hub's issuer over HTTP, for the upstream's own users. Its login throttle is per process:
 * behind a load balancer of N processes an attacker gets up to N times the attempts. With
 * HTTP_TRUST_PROXY the client address is the last X-Forwarded-For entry, so one proxy does not
 * count as one client.
 */
export function identityPart(core: UpstreamCore): UpstreamPart {
  const { settings, identity, users } = core;
  const tokens = tokenRoutes({
    identity,
    users: () => users,
    tokenTtlSeconds: settings.AUTH_TOKEN_TTL / 1000,
    refreshTtlMs: settings.AUTH_REFRESH_TTL,
    trustProxy: settings.HTTP_TRUST_PROXY,
  });
  return {
    routes: [
      ['/api/v1/auth', tokens],
      ['/.well-known', jwksRoutes(identity)],
    ],
  };
}

/** Messaging for internet subscribers (messaging/routes.ts). */
export function messagingPart(core: UpstreamCore): UpstreamPart {
  const { settings } = core;
  const routes = upstreamMessagingRoutes({
    pool: core.pool,
    identity: core.identity,
    rates: { perSubscriber: settings.MESSAGE_RATE_PER_SUBSCRIBER, perNode: settings.MESSAGE_RATE_PER_NODE },
  });
  return { routes: [['/api/v1/messages', routes]] };
}

/** `GET /api/v1/openapi.json`: the upstream's OpenAPI document (routes/openapi.ts), to anyone, as on a hub. */
export function openApiPart(core: UpstreamCore, options: { billing: boolean }): UpstreamPart {
  return { routes: [['/api/v1', openApiRoutes(upstreamOpenApiDocument(core.version, options))]] };
}

/** The map's tiles and, last, the web app's files with index.html for browser routes (SPA fallback). */
export function webPart(core: UpstreamCore): UpstreamPart {
  const { settings, tiles, log } = core;
  const webRoot = settings.WEB_ROOT ?? DEFAULT_WEB_ROOT;
  const assets = StaticAssets.load(webRoot);
  if (!assets) log.warn({ webRoot }, 'the web app is not built (run npm run build); serving the API only');
  return {
    routes: [
      ['/api/v1/map', mapRoutes(tiles.setting, tiles.archive)],
      ['/', uiRoutes({ assets, tileOrigins: tileOrigins(tiles.setting) })],
    ],
  };
}
