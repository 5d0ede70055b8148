/**
 * The upstream process's frame (docs/architecture.md "The two applications"): its core (one
 * PostgreSQL pool, the users, the identity with its token signing key in DATA_DIR, the map
 * tiles, /metrics) and its HTTP server, which mounts the parts main.ts composes (parts.ts: the
 * sites' sync endpoints and downlink, the read API, messaging, tokens, billing, the web UI) and
 * runs their start and stop. Stateless apart from PostgreSQL and the signing key, so several
 * processes can run behind one load balancer.
 *
 * `openUpstreamCore` only builds (the pool connects lazily, the identity key is read or made);
 * `start()` migrates, creates the time partitions ahead, starts the parts and listens; `stop()`
 * ends every socket (HTTP keep-alive, downlink WebSockets, live streams), stops the parts and
 * ends the pool. Errors become problem details in the hub's one onError, with request ids; a
 * PostgreSQL that does not answer is a 503 with Retry-After, not a 500.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createAdaptorServer, type ServerType } from '@hono/node-server';
import { type ErrorHandler, Hono } from 'hono';
import type pg from 'pg';
import { createErrorHandler, notFound, problemResponse } from '../../src/http/error-handler.js';
import { ProblemError } from '../../src/http/problem.js';
import { refuseUpgrade, serveWithoutUpgrade } from '../../src/http/refuse-upgrade.js';
import { requestId } from '../../src/http/request-id.js';
import { bindFailure } from '../../src/kernel/startup-failure.js';
import type { Logger } from '../../src/log.js';
import { secureDataDir } from '../../src/store/data-dir.js';
import { openConfiguredMapTiles } from '../../src/ui-server/map-tiles.js';
import { readVersion } from '../../src/version.js';
import { UpstreamUserService } from './auth/user-service.js';
import type { UpstreamBilling } from './billing/index.js';
import { migrateUpstream } from './db/migrate.js';
import { ensurePartitions } from './db/partitions.js';
import { isTransientDatabaseError, openPool } from './db/pool.js';
import { openUpstreamIdentity, type UpstreamIdentity } from './identity.js';
import { UpstreamMetrics, upstreamAccessMetrics } from './routes/health-routes.js';
import type { UpstreamSettings } from './settings.js';

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

/** What every part of the upstream is built on. */
export interface UpstreamCore {
  readonly settings: UpstreamSettings;
  readonly log: Logger;
  readonly version: string;
  readonly startedAt: number;
  readonly databaseUrl: string;
  readonly pool: pg.Pool;
  readonly users: UpstreamUserService;
  readonly identity: UpstreamIdentity;
  readonly metrics: UpstreamMetrics;
  readonly tiles: Awaited<ReturnType<typeof openConfiguredMapTiles>>;
}

/**
 * One part of the upstream, composed by main.ts: its routes, mounted in the parts' order (the
 * web UI's catch-all last), and what runs while the process serves.
 */
export interface UpstreamPart {
  // biome-ignore lint/suspicious/noExplicitAny: each part's routes have their own env (auth, read access)
  readonly routes?: ReadonlyArray<readonly [path: string, app: Hono<any, any, any>]>;
  /** After the migrations and partitions, in the parts' order, before listening. */
  start?(): Promise<void>;
  /** When stopping, before the HTTP server closes: ends its long-lived sockets. */
  closeSockets?(): void;
  /** After the HTTP server closed, in the parts' order, before the pool ends. */
  stop?(): Promise<void>;
}

/** WebSocket upgrades on one path (the sites' downlink); every other upgrade is refused or served plain. */
export interface UpstreamUpgrade {
  path: string;
  handle(request: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export async function openUpstreamCore(
  settings: UpstreamSettings,
  options: UpstreamOptions,
): Promise<UpstreamCore> {
  const { log } = options;
  const databaseUrl = settings.UPSTREAM_DATABASE_URL.reveal();
  // The pool connects lazily (nothing to close if the start stops below): made first, so the
  // identity can read the users' token versions from it.
  const pool = openPool(databaseUrl, { max: settings.UPSTREAM_DB_POOL_MAX });
  const users = new UpstreamUserService(pool);
  // The signing key's folder is private before the key is read or made (README "Files on disk").
  secureDataDir(settings.DATA_DIR);
  const identity = await openUpstreamIdentity(settings, {
    warn: (message) => log.warn(message),
    users,
    ...(options.now ? { now: options.now } : {}),
  });
  // MAP_TILES naming a file that cannot be used stops the start like any bad setting.
  const tiles = await openConfiguredMapTiles(settings.MAP_TILES);
  const metrics = new UpstreamMetrics({ defaultMetrics: options.defaultMetrics });
  return {
    settings,
    log,
    version: readVersion(),
    startedAt: Date.now(),
    databaseUrl,
    pool,
    users,
    identity,
    metrics,
    tiles,
  };
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

/** The parts' routes in one app, with request ids, access metrics and the problem-details onError. */
function upstreamApp(core: UpstreamCore, parts: readonly UpstreamPart[]): Hono {
  const app = new Hono();
  app.use(requestId());
  app.use(upstreamAccessMetrics(core.metrics));
  for (const part of parts) for (const [path, routes] of part.routes ?? []) app.route(path, routes);
  app.onError(upstreamErrorHandler(core.log));
  app.notFound(notFound);
  return app;
}

/** The HTTP server: listening, the upgrade dispatch, and a stop that does not wait on idle sockets. */
function httpListener(core: UpstreamCore, app: Hono, upgrade: UpstreamUpgrade) {
  const { settings, log } = core;
  let server: ServerType | undefined;
  /** Sockets handed to the upgrade handler: the HTTP server no longer tracks them. */
  const upgraded = new Set<Duplex>();
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
        if (pathname !== upgrade.path) {
          refuseUpgrade(socket, pathname);
          return;
        }
        upgraded.add(socket);
        socket.once('close', () => upgraded.delete(socket));
        upgrade.handle(request, socket, head);
      });
      // A taken port fails the start with one line naming HTTP_PORT (README "Configuration").
      const refused = (error: unknown) =>
        reject(
          bindFailure(error, {
            portSetting: 'HTTP_PORT',
            port: settings.HTTP_PORT,
            host: settings.HTTP_HOST,
            hostSetting: 'HTTP_HOST',
          }),
        );
      created.once('error', refused);
      created.listen(settings.HTTP_PORT, settings.HTTP_HOST, () => {
        created.off('error', refused);
        created.on('error', (err) => log.error({ err }, 'http server error'));
        resolve((created.address() as AddressInfo).port);
      });
    });
  /** Closes the server after `closeSockets` asked the parts' sockets to go; cuts them after a grace period. */
  const close = async (closeSockets: () => void) => {
    const closing = server;
    server = undefined;
    closeSockets();
    for (const socket of upgraded) socket.end();
    if (closing) {
      const closed = new Promise<void>((resolve) => closing.close(() => resolve()));
      // Keep-alive connections would hold close() open; the process is stopping.
      if ('closeAllConnections' in closing)
        (closing as { closeAllConnections(): void }).closeAllConnections();
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((resolve) => (grace = setTimeout(resolve, STOP_GRACE_MS)))]);
      clearTimeout(grace);
      for (const socket of upgraded) socket.destroy();
      await closed;
    }
    for (const socket of upgraded) socket.destroy();
    upgraded.clear();
  };
  return { listen, close };
}

/** The monthly partitions ahead of now, made at start and checked every few hours. */
function partitionsAhead(core: UpstreamCore) {
  let timer: NodeJS.Timeout | undefined;
  const make = async () => {
    const now = Date.now();
    await ensurePartitions(core.pool, [now, now + PARTITIONS_AHEAD_MS]);
  };
  return {
    async start() {
      await make();
      timer = setInterval(() => {
        make().catch((err: unknown) => core.log.warn({ err }, 'creating partitions ahead failed'));
      }, PARTITIONS_EVERY_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}

/** The upstream server over its core and parts (main.ts composes them). */
export function upstreamServer(
  core: UpstreamCore,
  parts: readonly UpstreamPart[],
  upgrade: UpstreamUpgrade,
  extra: { billing?: UpstreamBilling } = {},
): UpstreamServer {
  const { pool, log, settings } = core;
  const app = upstreamApp(core, parts);
  const http = httpListener(core, app, upgrade);
  const partitions = partitionsAhead(core);
  let boundPort: number | undefined;
  let stopped = false;
  return {
    pool,
    app,
    identity: core.identity,
    metrics: core.metrics,
    ...extra,
    get port(): number {
      if (boundPort === undefined) throw new Error('the upstream is not listening');
      return boundPort;
    },
    async start() {
      await migrateUpstream(pool);
      await partitions.start();
      for (const part of parts) await part.start?.();
      boundPort = await http.listen();
      log.info({ host: settings.HTTP_HOST, port: boundPort, version: core.version }, 'upstream listening');
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      partitions.stop();
      boundPort = undefined;
      // Sites get a close frame (going away) and reconnect, to another process if there is one;
      // their sockets are ended, and destroyed if they are still open after a grace period.
      await http.close(() => {
        for (const part of parts) part.closeSockets?.();
      });
      for (const part of parts) await part.stop?.();
      await core.tiles.archive
        ?.close()
        .catch((err: unknown) => log.warn({ err }, 'closing the map tiles failed'));
      await pool.end();
    },
  };
}
