/**
 * The composition root: builds every actor from the config, wires them to the bus and hands
 * them to the supervisor. Nothing else constructs actors.
 */
import { join } from 'node:path';
import { loadPlugins } from '../plugins/index.js';
import { type HubIdentity, openHubIdentity } from '../src/auth/hub-identity.js';
import type { TokenVerifier } from '../src/auth/jwt-verifier.js';
import { authRouteProvider } from '../src/auth/routes.js';
import { UserRepository } from '../src/auth/users.js';
import type { HubConfig } from '../src/config/schema.js';
import type { HubBus, HubEvents, HubRequests } from '../src/events.js';
import { buildHealthReport } from '../src/http/health.js';
import type { RouteProvider } from '../src/http/routes.js';
import { busReadingSink } from '../src/ingest/reading-sink.js';
import { ingestRouteProvider } from '../src/ingest/routes.js';
import { Bus } from '../src/kernel/bus.js';
import { Supervisor } from '../src/kernel/supervisor.js';
import { liveRouteProvider } from '../src/live/mount.js';
import type { Logger } from '../src/log.js';
import { PacketDedupe } from '../src/mesh/packet-dedupe.js';
import { probeSerialPorts, serialTransport, tcpTransport } from '../src/mesh/transport.js';
import { watchMessageMetrics } from '../src/messaging/metrics.js';
import { messagingRouteProvider } from '../src/messaging/mount.js';
import { HubMetrics } from '../src/metrics.js';
import type { CheckPassword } from '../src/mqtt/authenticator.js';
import { nodesRoutes } from '../src/nodes/routes.js';
import { openConfiguredMapTiles, webUiRouteProvider } from '../src/ui-server/mount.js';
import { readVersion } from '../src/version.js';
import { weatherRouteProvider } from '../src/weather/mount.js';
import { HttpServerActor } from './http-server.js';
import { IngestWriterActor } from './ingest-writer.js';
import { MessageGatewayActor } from './message-gateway.js';
import { MqttBrokerActor } from './mqtt-broker.js';
import { NodeDirectoryActor } from './node-directory.js';
import { RadioActor, type RadioPlan } from './radio.js';
import { RetentionActor } from './retention.js';
import { SimulatorActor, simulatorOptionsFrom } from './simulator.js';
import { StoreActor } from './store.js';

export interface Hub {
  readonly bus: HubBus;
  readonly supervisor: Supervisor;
  readonly metrics: HubMetrics;
  readonly store: StoreActor;
  readonly writer: IngestWriterActor;
  readonly http: HttpServerActor;
  readonly radio: RadioActor;
  readonly mqtt: MqttBrokerActor;
  readonly retention: RetentionActor;
  readonly simulator?: SimulatorActor;
  /** The hub's token issuer and verifier (src/auth/hub-identity.ts): every bearer-token feature uses it. */
  readonly identity: HubIdentity;
  readonly gateway: MessageGatewayActor;
  readonly version: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface HubOptions {
  log: Logger;
  /** Called when a required actor is beyond its restart budget: the process should exit non-zero. */
  onFatal?: (actor: string, error: unknown) => void;
  /** Overrides for tests: skip default process metrics. */
  defaultMetrics?: boolean;
  /** The environment plugins read their settings from (default `process.env`; tests pass their own). */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Who may send readings and read the hub's MQTT events: MQTT username/password logins
   * (`checkPassword`), and JWTs as the MQTT password or the HTTP ingest bearer token
   * (`tokenVerifier`; roles device/ingest, integration, admin). Default: nobody (anonymous MQTT
   * only with MQTT_ALLOW_ANONYMOUS). Default: the hub's users and HubIdentity.verifier.
   */
  ingestAuth?: { checkPassword?: CheckPassword; tokenVerifier?: TokenVerifier };
}

/** Resolves RADIO to a concrete plan; `auto` probes USB serial ports, else falls back to the simulator. */
export async function resolveRadioPlan(config: HubConfig, log: Logger): Promise<RadioPlan | 'simulator'> {
  const radio = config.RADIO;
  switch (radio.kind) {
    case 'none':
      return { kind: 'none' };
    case 'sim':
      return 'simulator';
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
      return 'simulator';
    }
  }
}

export async function createHub(config: HubConfig, options: HubOptions): Promise<Hub> {
  const { log } = options;
  const version = readVersion();
  const startedAt = Date.now();
  const bus: HubBus = new Bus<HubEvents, HubRequests>(({ owner, event, error }) =>
    log.error({ owner, event, err: error }, 'event listener failed'),
  );
  const metrics = new HubMetrics({ defaultMetrics: options.defaultMetrics });
  const plugins = await loadPlugins(config.PLUGINS);

  const supervisor = new Supervisor({
    log,
    stopDeadlineMs: 4_000,
    onGiveUp: (actor, error) => options.onFatal?.(actor, error),
    onActorStopped: (actor) => bus.removeOwner(actor),
  });
  metrics.watchMailboxes(() => supervisor.actors.flatMap((a) => a.mailboxStats()));

  const store = new StoreActor(join(config.DATA_DIR, 'meshhub.sqlite'), log.child({ component: 'store' }));
  const writer = new IngestWriterActor({ bus, store, log, metrics });
  const identity = await openHubIdentity({
    dataDir: config.DATA_DIR,
    external: {
      jwksUrl: config.AUTH_JWKS_URL,
      issuer: config.AUTH_ISSUER,
      audience: config.AUTH_AUDIENCE,
      rolesClaim: config.AUTH_ROLES_CLAIM,
    },
    warn: (message) => log.warn(message),
  });
  const nodes = new NodeDirectoryActor({ bus, store });
  // One (from, packet id) memory for the radio and MQTT paths: a packet heard both ways is stored once.
  const dedupe = new PacketDedupe();
  const readingSink = busReadingSink({
    bus,
    commitNow: () => writer.flush(),
    onCommitError: (err) => log.error({ err }, 'committing readings failed'),
  });
  // MQTT logins and ingest tokens use the hub's own users and token verifier (issue 4).
  // The store opens at start, so the repository is made on first use.
  let users: UserRepository | undefined;
  const ingestAuth = {
    checkPassword:
      options.ingestAuth?.checkPassword ??
      ((username: string, password: string) => {
        users ??= new UserRepository(store.db);
        return users.checkPassword(username, password);
      }),
    tokenVerifier: options.ingestAuth?.tokenVerifier ?? identity.verifier,
  };
  const retention = new RetentionActor({
    store,
    log: log.child({ component: 'retention' }),
    retentionDays: config.READINGS_RETENTION_DAYS,
    schedule: config.RETENTION_CRON,
  });

  const resolved = await resolveRadioPlan(config, log);
  let simulator: SimulatorActor | undefined;
  let plan: RadioPlan;
  if (resolved === 'simulator') {
    simulator = new SimulatorActor(simulatorOptionsFrom(config), log);
    const sim = simulator;
    plan = {
      kind: 'simulator',
      transport: () => tcpTransport(sim.address.host, sim.address.port, { connectTimeoutMs: 2_000 }),
    };
  } else {
    plan = resolved;
  }
  const radio = new RadioActor({
    bus,
    log,
    metrics,
    plan,
    heartbeatMs: config.RADIO_HEARTBEAT_SECONDS * 1000,
    dedupe,
  });
  const mqtt = new MqttBrokerActor({
    bus,
    log: log.child({ component: 'mqtt' }),
    metrics,
    store,
    nodes: () => nodes.repository,
    dedupe,
    sink: readingSink,
    settings: {
      host: config.MQTT_HOST ?? config.HTTP_HOST,
      port: config.MQTT_PORT,
      websocket: config.MQTT_WEBSOCKET,
      allowAnonymous: config.MQTT_ALLOW_ANONYMOUS,
      maxConnections: config.MQTT_MAX_CONNECTIONS,
      maxPacketBytes: config.MQTT_MAX_PACKET_BYTES,
      drainTimeoutMs: config.MQTT_DRAIN_TIMEOUT_SECONDS * 1000,
      channelKeys: config.MESH_CHANNEL_KEYS,
      haDiscovery: config.HA_DISCOVERY,
      offlineAfterMs: config.NODE_OFFLINE_AFTER,
    },
    ...ingestAuth,
    version,
  });

  // MAP_TILES naming a file that cannot be used stops the start like any bad setting.
  const mapTiles = await openConfiguredMapTiles(config.MAP_TILES);
  // Route groups: each feature contributes its own; plugins add theirs through `mount`.
  const routes: RouteProvider[] = [
    weatherRouteProvider(() => store.db),
    () => ({ path: '/api/v1/nodes', app: nodesRoutes(nodes.repository), component: 'weather' }),
    ingestRouteProvider(() => ({
      sink: readingSink,
      verifier: ingestAuth.tokenVerifier,
      log: log.child({ component: 'ingest' }),
      onRejected: (source, reason, count) => metrics.ingestRejectedReadings.inc({ source, reason }, count),
    })),
    authRouteProvider({
      identity,
      users: () => new UserRepository(store.db),
      tokenTtlSeconds: config.AUTH_TOKEN_TTL / 1000,
    }),
    messagingRouteProvider({
      db: () => store.db,
      identity,
      perSubscriber: config.MESSAGE_RATE_PER_SUBSCRIBER,
      perNode: config.MESSAGE_RATE_PER_NODE,
      radioStatus: () => radio.status,
    }),
    liveRouteProvider({ version, startedAt, radioStatus: () => radio.status }),
    // After the API groups: the web app's fallback passes /api/… (plugins' routes too) to them.
    webUiRouteProvider({ tiles: mapTiles, log: log.child({ component: 'web-ui' }) }),
  ];
  const http = new HttpServerActor({
    bus,
    log: log.child({ component: 'http' }),
    metrics,
    routes,
    dependsOn: ['store', 'node-directory'],
    host: config.HTTP_HOST,
    port: config.HTTP_PORT,
    version,
    health: () => buildHealthReport({ version, startedAt, radio: radio.status, actors: supervisor.status() }),
    componentPorts: config.HTTP_COMPONENT_PORTS,
    upgrade: (request, socket, head) => mqtt.handleUpgrade(request, socket, head),
  });

  supervisor.add(store).add(writer).add(nodes).add(retention);
  if (simulator) supervisor.add(simulator);
  const gateway = new MessageGatewayActor({
    bus,
    store,
    log: log.child({ component: 'message-gateway' }),
    radioStatus: () => radio.status,
    delivery: {
      ackTimeoutMs: config.MESSAGE_ACK_TIMEOUT,
      maxRetries: config.MESSAGE_MAX_RETRIES,
      retryDelayMs: config.MESSAGE_RETRY_DELAY,
    },
    airtimePercent: config.MESSAGE_AIRTIME_PERCENT,
  });
  watchMessageMetrics({ bus, metrics, db: () => store.db });
  supervisor.add(radio).add(mqtt).add(gateway).add(http);
  for (const plugin of plugins) {
    const actors = await plugin.create({
      apiVersion: 1,
      bus,
      db: () => store.db,
      env: options.env ?? process.env,
      log: log.child({ plugin: plugin.name }),
      mount: (path, app) => {
        routes.push(() => ({ path, app }));
      },
      metrics: metrics.registry,
    });
    for (const actor of actors) supervisor.add(actor);
  }

  return {
    bus,
    supervisor,
    metrics,
    store,
    writer,
    http,
    radio,
    mqtt,
    retention,
    ...(simulator ? { simulator } : {}),
    identity,
    gateway,
    version,
    async start() {
      log.info({ version, radio: config.RADIO.kind, plugins: config.PLUGINS }, 'meshhub starting');
      await supervisor.startAll();
      log.info({ port: http.port, simulated: radio.status.simulated }, 'meshhub running');
    },
    async stop() {
      bus.emit('hub.stopping', {});
      await supervisor.stopAll();
      log.info('meshhub stopped');
    },
  };
}
