/**
 * The composition root: config → kernel → the list of modules. The kernel is the store, the
 * bus, the scheduler, the radio (and the simulator when there is no radio), the ingest writer
 * and the HTTP server; every feature is a module (src/module.ts) created here with its own
 * context, and a new feature is one folder and one line in `CORE_MODULES` (or `PLUGINS`).
 */
import { join } from 'node:path';
import { loadPlugins } from '../plugins/index.js';
import { type HubIdentity, missingProviderSettings, openHubIdentity } from '../src/auth/hub-identity.js';
import { identityModule } from '../src/auth/identity-module.js';
import type { TokenVerifier } from '../src/auth/jwt-verifier.js';
import type { LoginThrottle } from '../src/auth/login-throttle.js';
import { loginThrottleFrom } from '../src/auth/settings.js';
import { HubUserService } from '../src/auth/user-service.js';
import { backupModule } from '../src/backup/module.js';
import { backupDirOf } from '../src/backup/settings.js';
import { loadSlices } from '../src/config/load.js';
import { deviceHealthModule } from '../src/device-health/module.js';
import { type HubBus, type HubEvents, type HubRequests, RETAINED_EVENTS } from '../src/domain/events.js';
import { buildHealthReport } from '../src/http/health.js';
import { HttpMounts } from '../src/http/mounts.js';
import { ingestModule } from '../src/ingest/module.js';
import type { Actor } from '../src/kernel/actor.js';
import { Bus } from '../src/kernel/bus.js';
import { checkModules, MODULE_API_VERSION } from '../src/kernel/module.js';
import { SchedulerActor } from '../src/kernel/scheduler.js';
import { Supervisor } from '../src/kernel/supervisor.js';
import { liveModule } from '../src/live/module.js';
import type { Logger } from '../src/log.js';
import { mcpHttpModule } from '../src/mcp/module.js';
import { PacketDedupe } from '../src/mesh/packet-dedupe.js';
import { MeshFanOut } from '../src/mesh/packet-fanout.js';
import { RadioActor, type RadioPlan } from '../src/mesh/radio-actor.js';
import { SimulatorActor, simulatorOptionsFrom } from '../src/mesh/simulator/simulator-actor.js';
import { probeSerialPorts, serialTransport, tcpTransport } from '../src/mesh/transport.js';
import { meshApiModule } from '../src/mesh-api/module.js';
import { messagingModule } from '../src/messaging/module.js';
import { HubMetrics } from '../src/metrics.js';
import type { HubModule, UpgradeHandler } from '../src/module.js';
import { mqttModule } from '../src/mqtt/module.js';
import { nodesModule } from '../src/nodes/module.js';
import { notificationsModule } from '../src/notifications/module.js';
import { packetsModule } from '../src/packets/module.js';
import { retentionModule } from '../src/retention/module.js';
import { secureDataDir, unwritableDataDir } from '../src/store/data-dir.js';
import { type DataDirLock, lockDataDir } from '../src/store/data-dir-lock.js';
import { type Database, damagedDatabase, HUB_DATABASE_FILE } from '../src/store/database.js';
import { IngestWriterActor } from '../src/store/ingest-writer-actor.js';
import { endStartupCopies } from '../src/store/pre-migration-backup.js';
import { StoreActor } from '../src/store/store-actor.js';
import { topologyModule } from '../src/topology/module.js';
import { webUiModule } from '../src/ui-server/module.js';
import { readVersion } from '../src/version.js';
import { weatherModule } from '../src/weather/module.js';
import { syncModule } from '../sync/site/module.js';
import type { SyncSettings } from '../sync/site/settings.js';
import { apiDocsModule } from './api-docs-module.js';
import { HttpServerActor } from './http-server-actor.js';
import { MemoryTrimmer } from './memory-trim.js';
import { ModuleHost, type ModuleHostParts, moduleOwner } from './module-host.js';
import { extendStartTimeout } from './sd-notify.js';
import { type HubConfig, hubSettings } from './settings.js';

/**
 * How much longer systemd waits for the start each time a migration reports progress (every 5 s):
 * a migration that stalls for this long lets the unit's start timeout fail it.
 */
const MIGRATION_START_EXTENSION_S = 120;

/** The hub's own features, in no particular order: the HTTP actor orders the routes. */
export const CORE_MODULES: readonly HubModule[] = [
  weatherModule,
  nodesModule,
  ingestModule,
  messagingModule,
  meshApiModule,
  deviceHealthModule,
  mqttModule,
  liveModule,
  packetsModule,
  notificationsModule,
  retentionModule,
  backupModule,
  topologyModule,
  webUiModule,
  apiDocsModule,
  mcpHttpModule,
];

/**
 * Core modules that live outside src/ (src may not import them), so their settings are not in
 * src/config's schema: their slices are parsed like plugins' (with them, all errors at once),
 * but they always run.
 */
export const SLICED_CORE_MODULES: readonly HubModule[] = [syncModule];

export interface Hub {
  readonly bus: HubBus;
  readonly supervisor: Supervisor;
  readonly metrics: HubMetrics;
  readonly store: StoreActor;
  readonly http: HttpServerActor;
  readonly scheduler: SchedulerActor;
  /** Where heard mesh packets are announced once, for the radio and MQTT gateways alike. */
  readonly mesh: MeshFanOut;
  /** The hub's token issuer and verifier (src/auth/hub-identity.ts): every bearer-token feature uses it. */
  readonly identity: HubIdentity;
  readonly version: string;
  /** An actor by name (tests, the CLI). */
  actor<A>(name: string): A | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface HubOptions {
  log: Logger;
  /** Called when a required actor is beyond its restart budget: the process should exit non-zero. */
  onFatal?: (actor: string, error: unknown) => void;
  /** Overrides for tests: skip default process metrics. */
  defaultMetrics?: boolean;
  /**
   * The settings of SLICED_CORE_MODULES and the enabled plugins, by module name, when already
   * parsed with the rest (hub/cli.ts); otherwise they are read from `env` (default
   * `process.env`; tests pass their own).
   */
  pluginSettings?: Map<string, unknown>;
  env?: Readonly<Record<string, string | undefined>>;
  /** Replaces the hub identity's verifier (benches with a token signer of their own). */
  tokenVerifier?: TokenVerifier;
  /** Replaces the login throttle made from the AUTH_LOGIN_* settings (tests with a clock of their own). */
  logins?: LoginThrottle;
}

/** Resolves RADIO to a concrete plan; `auto` probes USB serial ports, else falls back to the simulator. */
export async function resolveRadioPlan(config: HubConfig, log: Logger): Promise<RadioPlan> {
  const radio = config.RADIO;
  switch (radio.kind) {
    case 'none':
      return { kind: 'none' };
    case 'sim':
      return { kind: 'simulator' };
    case 'serial':
      return { kind: 'transport', transport: serialTransport(radio.path, radio.baudRate), simulated: false };
    case 'tcp':
      return {
        kind: 'transport',
        transport: tcpTransport(radio.host, radio.port, { connectTimeoutMs: 5_000 }),
        simulated: false,
      };
    case 'auto': {
      const path = await probeSerialPorts({ timeoutMs: config.RADIO_PROBE_TIMEOUT_MS, log });
      if (path) {
        log.info({ path }, 'found a Meshtastic radio');
        return { kind: 'transport', transport: serialTransport(path, 115200), simulated: false };
      }
      log.warn(
        'no Meshtastic radio found on USB serial; running the built-in simulator (set RADIO to choose)',
      );
      return { kind: 'simulator' };
    }
  }
}

/** A core module's slice of the already-validated config. */
function coreSettings(config: HubConfig, module: HubModule): unknown {
  const values = config as unknown as Record<string, unknown>;
  return Object.fromEntries(Object.keys(module.settings.shape).map((key) => [key, values[key]]));
}

/** The bus, the metrics and the supervisor: what every other part is wired to. */
function kernelOf(options: HubOptions): { bus: HubBus; metrics: HubMetrics; supervisor: Supervisor } {
  const { log } = options;
  const bus: HubBus = new Bus<HubEvents, HubRequests>({
    onListenerError: ({ owner, event, error }) =>
      log.error({ owner, event, err: error }, 'event listener failed'),
    retained: RETAINED_EVENTS,
  });
  const metrics = new HubMetrics({ defaultMetrics: options.defaultMetrics });
  const supervisor = new Supervisor({
    log,
    stopDeadlineMs: 4_000,
    onGiveUp: (actor, error) => options.onFatal?.(actor, error),
    onActorStopped: (actor) => bus.removeOwner(actor),
  });
  metrics.watchMailboxes(() => supervisor.actors.flatMap((a) => a.mailboxStats()));
  return { bus, metrics, supervisor };
}

interface OpenedIdentity {
  identity: HubIdentity;
  verifier: TokenVerifier;
  /** The identity provider's missing settings, when it is only partly configured. */
  providerMissing: string[];
  /** Local tokens are checked against their user's token version, read from the store once it is open. */
  readUsersFrom(db: Database): void;
}

/** The hub's one identity: its signing key in DATA_DIR, and the external identity provider when set. */
async function openIdentity(config: HubConfig, options: HubOptions): Promise<OpenedIdentity> {
  const { log } = options;
  const external = {
    jwksUrl: config.AUTH_JWKS_URL,
    issuer: config.AUTH_ISSUER,
    audience: config.AUTH_AUDIENCE,
    rolesClaim: config.AUTH_ROLES_CLAIM,
    allowPrivateNetwork: config.AUTH_JWKS_ALLOW_PRIVATE_NETWORK,
  };
  // A half-configured identity provider is "misconfigured", not fatal: warn, trust only the
  // hub's own issuer, and let every module say so (issue 14). Bad values still stop the start.
  const providerMissing = missingProviderSettings(external);
  if (providerMissing.length) {
    log.warn(
      { missing: providerMissing },
      'the identity provider is only partly configured: its tokens are refused until these are set',
    );
  }
  // Local tokens are checked against their user's token version (README "Logins and tokens"):
  // the users are read from the store, opened later, before anything is served.
  let users: HubUserService | undefined;
  const identity = await openHubIdentity({
    dataDir: config.DATA_DIR,
    external: providerMissing.length ? {} : external,
    warn: (message) => log.warn(message),
    tokenVersions: { tokenVersion: (username) => users?.tokenVersion(username) },
    logins: options.logins ?? loginThrottleFrom(config),
  }).catch((error: unknown) => {
    // The signing key cannot be made (a read-only or full DATA_DIR): one line saying so.
    throw unwritableDataDir(config.DATA_DIR, error);
  });
  return {
    identity,
    verifier: options.tokenVerifier ?? identity.verifier,
    providerMissing,
    readUsersFrom: (db) => {
      users = new HubUserService(db);
    },
  };
}

/** The radio (and the built-in simulator when there is no radio) and the ingest writer, after the store. */
async function kernelActorsOf(
  config: HubConfig,
  parts: {
    bus: HubBus;
    log: Logger;
    metrics: HubMetrics;
    store: StoreActor;
    fanOut: MeshFanOut;
    siteId: string | undefined;
  },
): Promise<{ actors: Actor[]; radio: RadioActor }> {
  const { bus, log, metrics, store, fanOut } = parts;
  const plan = await resolveRadioPlan(config, log);
  // A site's simulated mesh is its own (seed and centre from the site id) unless SIM_* say otherwise.
  const simOptions = simulatorOptionsFrom(config, parts.siteId);
  // The mesh API is the radio the apps see on 4403; the built-in simulator behind it moves aside.
  if (config.MESH_API && simOptions.port === config.MESH_API_PORT) simOptions.port = 0;
  const simulator = plan.kind === 'simulator' ? new SimulatorActor(simOptions, bus, log) : undefined;
  const radio = new RadioActor({
    bus,
    log,
    metrics,
    db: store.db,
    plan,
    heartbeatMs: config.RADIO_HEARTBEAT_SECONDS * 1000,
    fanOut,
  });
  const actors = [
    store,
    new IngestWriterActor({ bus, db: store.db, log, metrics }),
    ...(simulator ? [simulator] : []),
    radio,
  ];
  return { actors, radio };
}

/** The external identity provider's settings for the modules' contexts, when all three are set. */
function providerOf(config: HubConfig): ModuleHostParts['provider'] {
  return config.AUTH_JWKS_URL && config.AUTH_ISSUER && config.AUTH_AUDIENCE
    ? {
        jwksUrl: config.AUTH_JWKS_URL,
        issuer: config.AUTH_ISSUER,
        audience: config.AUTH_AUDIENCE,
        rolesClaim: config.AUTH_ROLES_CLAIM,
      }
    : undefined;
}

/** Creates every module in its context (the identity's, the core's, the sliced core's, the plugins') and adds its actors. */
async function createModules(
  host: ModuleHost,
  supervisor: Supervisor,
  modules: {
    identity: HubModule;
    plugins: readonly HubModule[];
    coreSettings: (module: HubModule) => unknown;
    sliceSettings: Map<string, unknown>;
  },
): Promise<void> {
  for (const module of [modules.identity, ...CORE_MODULES]) {
    for (const actor of await host.create(module, modules.coreSettings(module))) supervisor.add(actor);
  }
  for (const module of SLICED_CORE_MODULES) {
    for (const actor of await host.create(module, modules.sliceSettings.get(module.name)))
      supervisor.add(actor);
  }
  for (const plugin of modules.plugins) {
    const actors = await host.create(plugin, modules.sliceSettings.get(plugin.name), { plugin: true });
    for (const actor of actors) supervisor.add(actor);
  }
}

/** Memory back after start-up and after bursts, once the hub is quiet (hub/memory-trim.ts). */
function memoryTrimmerOf(bus: HubBus, db: Database, log: Logger): MemoryTrimmer {
  let storedReadings = 0;
  bus.on('memory-trim', 'reading.stored', ({ readings }) => {
    storedReadings += readings.length;
  });
  return new MemoryTrimmer({
    db,
    activity: () => storedReadings,
    onTrim: (before, after) =>
      log.debug({ rssBefore: before, rssAfter: after }, 'gave memory back after a quiet period'),
  });
}

/** The HTTP server: every module's mounts, /health and /metrics, on HTTP_PORT (and the component ports). */
function httpActorOf(
  config: HubConfig,
  parts: {
    log: Logger;
    metrics: HubMetrics;
    mounts: HttpMounts<UpgradeHandler>;
    bus: HubBus;
    supervisor: Supervisor;
    version: string;
    startedAt: number;
  },
): HttpServerActor {
  const { bus, supervisor, version, startedAt } = parts;
  return new HttpServerActor({
    log: parts.log.child({ component: 'http' }),
    metrics: parts.metrics,
    mounts: parts.mounts,
    dependsOn: ['store'],
    host: config.HTTP_HOST,
    port: config.HTTP_PORT,
    version,
    health: () =>
      buildHealthReport({
        version,
        startedAt,
        radio: bus.last('radio.status') ?? { state: 'disconnected', transport: 'none', simulated: false },
        actors: supervisor.status(),
      }),
    componentPorts: config.HTTP_COMPONENT_PORTS,
    allowedHosts: config.HTTP_ALLOWED_HOSTS,
  });
}

/** The hub's database, in DATA_DIR. */

export async function createHub(config: HubConfig, options: HubOptions): Promise<Hub> {
  const version = readVersion();
  const plugins = await loadPlugins(config.PLUGINS);
  const sliceSettings =
    options.pluginSettings ?? loadSlices(options.env ?? process.env, [...SLICED_CORE_MODULES, ...plugins]);
  const { bus, metrics, supervisor } = kernelOf(options);
  // DATA_DIR is private before anything is read or made in it (README "Files on disk"), and this
  // hub's alone until it stops: a second hub on it refuses to start (store/data-dir-lock.ts).
  secureDataDir(config.DATA_DIR);
  const lock = lockDataDir(config.DATA_DIR);
  try {
    return await composeHub(config, options, {
      bus,
      metrics,
      supervisor,
      plugins,
      sliceSettings,
      version,
      lock,
    });
  } catch (error) {
    lock.release();
    // A damaged database met past its opening (a module's first query) names the file too.
    throw damagedDatabase(join(config.DATA_DIR, HUB_DATABASE_FILE), error);
  }
}

async function composeHub(
  config: HubConfig,
  options: HubOptions,
  parts: {
    bus: HubBus;
    metrics: HubMetrics;
    supervisor: Supervisor;
    plugins: readonly HubModule[];
    sliceSettings: Map<string, unknown>;
    version: string;
    lock: DataDirLock;
  },
): Promise<Hub> {
  const { log } = options;
  const { bus, metrics, supervisor, plugins, sliceSettings, version, lock } = parts;
  const startedAt = Date.now();
  const opened = await openIdentity(config, options);
  const identity = identityModule(opened.identity);
  const modules: HubModule[] = [identity, ...CORE_MODULES, ...SLICED_CORE_MODULES, ...plugins];
  // The hub's own settings count as a module's here: no module may claim one of them.
  checkModules([
    { name: 'hub', apiVersion: MODULE_API_VERSION, settings: hubSettings, create: () => undefined },
    ...modules,
  ]);
  // A migration of a database with data copies it to BACKUP_DIR first (src/store/pre-migration-backup.ts).
  // A long one (a year of readings) keeps systemd's start timeout at bay while it makes progress.
  const store = StoreActor.open(join(config.DATA_DIR, HUB_DATABASE_FILE), log.child({ component: 'store' }), {
    backupDir: backupDirOf(config.DATA_DIR, config.BACKUP_DIR),
    onMigrationProgress: (p) => {
      if (p.phase === 'pages')
        // One copy of the whole file, with no progress until it ends: time for 1 MB/s at least.
        extendStartTimeout(
          Math.max(MIGRATION_START_EXTENSION_S, p.bytes / 1e6),
          `rewriting the database into ${p.to}-byte pages (${Math.round(p.bytes / 1e6)} MB), once`,
        );
      else if (p.phase === 'backup')
        extendStartTimeout(
          MIGRATION_START_EXTENSION_S,
          `copying the database before migrating it to schema ${p.to}`,
        );
      else
        extendStartTimeout(
          MIGRATION_START_EXTENSION_S,
          `migrating the database to schema ${p.version}: ${p.done} of ${p.total} rows`,
        );
    },
  });
  opened.readUsersFrom(store.db);
  const scheduler = new SchedulerActor({
    log: log.child({ component: 'scheduler' }),
    ...(config.SCHEDULE_TIMEZONE ? { timezone: config.SCHEDULE_TIMEZONE } : {}),
  });
  const mounts = new HttpMounts<UpgradeHandler>();
  const fanOut = new MeshFanOut({
    bus,
    dedupe: new PacketDedupe(),
    onPacket: (port, via) => metrics.meshPackets.inc({ port, via }),
  });
  const siteId = (sliceSettings.get(syncModule.name) as Partial<SyncSettings> | undefined)?.SYNC_SITE_ID;
  const kernel = await kernelActorsOf(config, { bus, log, metrics, store, fanOut, siteId });
  for (const actor of kernel.actors) supervisor.add(actor);

  const provider = providerOf(config);
  const host = new ModuleHost({
    bus,
    db: store.db,
    log,
    metrics,
    mounts,
    scheduler,
    identity: { ...opened.identity, verifier: opened.verifier },
    ...(opened.providerMissing.length ? { providerMissing: opened.providerMissing } : {}),
    ...(provider ? { provider } : {}),
    fanOut,
    radio: kernel.radio,
    hub: {
      version,
      startedAt,
      dataDir: config.DATA_DIR,
      listenHost: config.HTTP_HOST,
      apiDocs: config.API_DOCS,
      plugins: config.PLUGINS,
    },
  });
  try {
    await createModules(host, supervisor, {
      identity,
      plugins,
      coreSettings: (module) => coreSettings(config, module),
      sliceSettings,
    });
  } catch (error) {
    // A module that refuses to be built (a bad setting, a path taken twice) stops the start; the
    // connection opened for the contexts is closed, not left to the process's end.
    await store.stop();
    throw error;
  }

  const http = httpActorOf(config, { log, metrics, mounts, bus, supervisor, version, startedAt });
  // Last in: jobs start once everything they drive is running.
  supervisor.add(http).add(scheduler);
  const trimmer = memoryTrimmerOf(bus, store.db, log);

  return {
    bus,
    supervisor,
    metrics,
    store,
    http,
    scheduler,
    mesh: fanOut,
    identity: opened.identity,
    version,
    actor: <A>(name: string) => supervisor.actors.find((a) => a.name === name) as A | undefined,
    async start() {
      log.info({ version, radio: config.RADIO.kind, plugins: config.PLUGINS }, 'meshhub starting');
      await supervisor.startAll();
      // Every module has migrated its schema: a migration from now on copies the database again.
      endStartupCopies(store.db);
      trimmer.start();
      log.info(
        { port: http.port, simulated: bus.last('radio.status')?.simulated ?? false },
        'meshhub running',
      );
    },
    async stop() {
      trimmer.stop();
      bus.emit('hub.stopping', {});
      try {
        await supervisor.stopAll();
      } finally {
        lock.release();
      }
      for (const module of modules) bus.removeOwner(moduleOwner(module.name));
      log.info('meshhub stopped');
    },
  };
}
