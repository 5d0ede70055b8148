/**
 * The composition root: builds every actor from the config, wires them to the bus and hands
 * them to the supervisor. Nothing else constructs actors.
 */
import { join } from 'node:path';
import { loadPlugins } from '../plugins/index.js';
import type { HubConfig } from '../src/config/schema.js';
import type { HubBus, HubEvents, HubRequests } from '../src/events.js';
import { buildHealthReport } from '../src/http/health.js';
import type { RouteProvider } from '../src/http/routes.js';
import { Bus } from '../src/kernel/bus.js';
import { Supervisor } from '../src/kernel/supervisor.js';
import type { Logger } from '../src/log.js';
import { probeSerialPorts, serialTransport, tcpTransport } from '../src/mesh/transport.js';
import { HubMetrics } from '../src/metrics.js';
import { nodesRoutes } from '../src/nodes/routes.js';
import { readVersion } from '../src/version.js';
import { weatherRouteProvider } from '../src/weather/mount.js';
import { HttpServerActor } from './http-server.js';
import { IngestWriterActor } from './ingest-writer.js';
import { NodeDirectoryActor } from './node-directory.js';
import { RadioActor, type RadioPlan } from './radio.js';
import { RetentionActor } from './retention.js';
import { SimulatorActor } from './simulator.js';
import { StoreActor } from './store.js';

export interface Hub {
  readonly bus: HubBus;
  readonly supervisor: Supervisor;
  readonly metrics: HubMetrics;
  readonly store: StoreActor;
  readonly writer: IngestWriterActor;
  readonly http: HttpServerActor;
  readonly radio: RadioActor;
  readonly retention: RetentionActor;
  readonly simulator?: SimulatorActor;
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
  const nodes = new NodeDirectoryActor({ bus, store });
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
    simulator = new SimulatorActor(
      {
        host: config.SIM_HOST,
        port: config.SIM_PORT,
        nodeCount: config.SIM_NODES,
        center: config.SIM_CENTER,
        seed: config.SIM_SEED,
        telemetryIntervalMs: config.SIM_TELEMETRY_SECONDS * 1000,
        backfillMs: config.SIM_BACKFILL,
      },
      log,
    );
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
  });

  // Route groups: each feature contributes its own; plugins add theirs through `mount`.
  const routes: RouteProvider[] = [
    weatherRouteProvider(() => store.db),
    () => ({ path: '/api/v1/nodes', app: nodesRoutes(nodes.repository), component: 'weather' }),
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
  });

  supervisor.add(store).add(writer).add(nodes).add(retention);
  if (simulator) supervisor.add(simulator);
  supervisor.add(radio).add(http);
  for (const plugin of plugins) {
    const actors = await plugin.create({
      apiVersion: 1,
      bus,
      db: () => store.db,
      env: process.env,
      log: log.child({ plugin: plugin.name }),
      mount: (path, app) => {
        routes.push(() => ({ path, app }));
      },
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
    retention,
    ...(simulator ? { simulator } : {}),
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
