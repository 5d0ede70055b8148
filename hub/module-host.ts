/**
 * Builds each module's context (src/module.ts) from the hub's kernel parts and creates the
 * module. The only place a context is made: the hub's composition (main.ts) and tests that run
 * one module alone both come through here.
 */
import type { Hono } from 'hono';
import { pino } from 'pino';
import { Counter, Gauge, Histogram } from 'prom-client';
import { type HubIdentity, openHubIdentity } from '../src/auth/hub-identity.js';
import { requireAuth } from '../src/auth/require-auth.js';
import { HubUserService } from '../src/auth/user-service.js';
import { type HubBus, RETAINED_EVENTS } from '../src/domain/events.js';
import { createHttpApp } from '../src/http/app.js';
import { HttpMounts } from '../src/http/mounts.js';
import type { Actor } from '../src/kernel/actor.js';
import { Bus } from '../src/kernel/bus.js';
import { SchedulerActor } from '../src/kernel/scheduler.js';
import type { Logger } from '../src/log.js';
import { PacketDedupe } from '../src/mesh/packet-dedupe.js';
import { MeshFanOut } from '../src/mesh/packet-fanout.js';
import { HubMetrics } from '../src/metrics.js';
import type {
  HubFacts,
  HubModule,
  ModuleAuth,
  ModuleContext,
  ModuleMetrics,
  ModuleMqtt,
  ModuleRadio,
  MqttPublish,
  MqttPublishOptions,
  MqttTopicDeclaration,
  MqttTopicOptions,
  MqttTopicRegistry,
  UpgradeHandler,
} from '../src/module.js';
import type { Database } from '../src/store/database.js';

export interface ModuleHostParts {
  bus: HubBus;
  db: Database;
  log: Logger;
  metrics: HubMetrics;
  mounts: HttpMounts<UpgradeHandler>;
  scheduler: SchedulerActor;
  identity: HubIdentity;
  /** The external identity provider's settings, when configured. */
  provider?: { jwksUrl: string; issuer: string; audience: string; rolesClaim: string };
  /** The identity provider's missing settings, when it is only partly configured. */
  providerMissing?: readonly string[];
  fanOut: MeshFanOut;
  hub: HubFacts;
  /** The modules' MQTT topics (made here when not given). */
  mqttTopics?: ModuleTopics;
  /** The radio actor; none in a host without a radio (a tap is then refused). */
  radio?: ModuleRadio;
}

const NO_RADIO: ModuleRadio = {
  tap() {
    throw new Error('this host has no radio to tap');
  },
};

/** The one registry of the modules' MQTT topics (src/module.ts ModuleMqtt): declared here, read by the broker. */
export class ModuleTopics implements MqttTopicRegistry {
  private readonly list: MqttTopicDeclaration[] = [];
  private publisher: MqttPublish | undefined;

  get declared(): readonly MqttTopicDeclaration[] {
    return this.list;
  }

  get version(): number {
    return this.list.length;
  }

  declare(module: string, filter: string, options: MqttTopicOptions): void {
    if (!filter || filter.startsWith('$') || /(^|\/)#./.test(filter))
      throw new Error(`module ${module}: "${filter}" is not an MQTT topic filter`);
    this.list.push({ ...options, filter, module });
  }

  carry(publish: MqttPublish | undefined): void {
    this.publisher = publish;
  }

  /** Publishes through the broker carrying them; undefined when none does (the publish is dropped). */
  publish(topic: string, payload: string, options?: MqttPublishOptions): Promise<void> | undefined {
    return this.publisher?.(topic, payload, options);
  }
}

const silentLog = pino({ level: 'silent' });

/** Owner name of a module's own bus listeners (never an actor's name). */
export const moduleOwner = (name: string) => `module:${name}`;

export class ModuleHost {
  private readonly topics: ModuleTopics;

  constructor(private readonly parts: ModuleHostParts) {
    this.topics = parts.mqttTopics ?? new ModuleTopics();
  }

  async create<M extends HubModule>(
    module: M,
    settings: unknown,
    options: { plugin?: boolean } = {},
  ): Promise<Actor[]> {
    const ctx = this.contextFor(module.name, options.plugin ?? false);
    const made = await module.create({ ...ctx, settings } as Parameters<M['create']>[0]);
    return made?.actors ?? [];
  }

  private contextFor(name: string, plugin: boolean): ModuleContext {
    const { parts } = this;
    const owner = moduleOwner(name);
    const log = parts.log.child(plugin ? { plugin: name } : { module: name });
    return {
      name,
      bus: parts.bus,
      owner,
      db: parts.db,
      log,
      hub: parts.hub,
      mesh: parts.fanOut,
      schedule: (job, cron, run) => parts.scheduler.add(`${name}.${job}`, cron, run),
      // biome-ignore lint/suspicious/noExplicitAny: any Hono app, whatever its declared variables
      mount: (path: string, app: Hono<any>, mountOptions = {}) =>
        parts.mounts.mount(owner, path, app, mountOptions.component),
      upgrade: (path, handler) => parts.mounts.upgrade(owner, path, handler),
      auth: this.auth(),
      // A metric name allows [a-zA-Z0-9_:]: `packet-stats` counts as `meshhub_packet_stats_…`.
      metrics: this.metrics(plugin ? `meshhub_${name.replace(/[^a-zA-Z0-9_]/g, '_')}_` : 'meshhub_'),
      mqtt: this.mqtt(name, log),
      radio: parts.radio ?? NO_RADIO,
    };
  }

  private mqtt(name: string, log: Logger): ModuleMqtt {
    const { topics } = this;
    return {
      topic: (filter, options) => topics.declare(name, filter, options),
      publish: (topic, payload, options) => {
        topics.publish(topic, payload, options)?.catch((err: unknown) => {
          log.warn({ err, topic }, 'publishing on MQTT failed');
        });
      },
      registry: topics,
    };
  }

  private auth(): ModuleAuth {
    const { identity, provider, providerMissing } = this.parts;
    return {
      require: (roles = []) => requireAuth(identity.verifier, { roles }),
      verifier: identity.verifier,
      logins: identity.logins,
      principalOf: (verified) => identity.principalOf(verified),
      signer: identity.localIssuer,
      ...(provider ? { provider } : {}),
      ...(providerMissing?.length ? { providerMissing } : {}),
    };
  }

  private metrics(prefix: string): ModuleMetrics {
    const { metrics } = this.parts;
    const registers = [metrics.registry];
    const named = (n: string) => `${prefix}${n}`;
    return {
      prefix,
      counter: (config) => new Counter({ ...config, name: named(config.name), registers }),
      gauge: (config) => new Gauge({ ...config, name: named(config.name), registers }),
      histogram: (config) => new Histogram({ ...config, name: named(config.name), registers }),
      onRender: (fn) => metrics.onRender(fn),
      core: metrics,
    };
  }
}

/**
 * A host for running modules without the rest of the hub (tests, benches): a bus, the given
 * database, the hub's identity over `dataDir`, mounts to read back, a scheduler that is not
 * started unless asked.
 */
export async function standaloneModuleHost(options: {
  db: Database;
  dataDir: string;
  log: Logger;
  metrics?: HubMetrics;
  provider?: { jwksUrl: string; issuer: string; audience: string; rolesClaim?: string };
  version?: string;
  apiDocs?: boolean;
}): Promise<{
  host: ModuleHost;
  bus: HubBus;
  mounts: HttpMounts<UpgradeHandler>;
  scheduler: SchedulerActor;
  metrics: HubMetrics;
  identity: HubIdentity;
}> {
  const bus: HubBus = new Bus({ retained: RETAINED_EVENTS });
  const mounts = new HttpMounts<UpgradeHandler>();
  const scheduler = new SchedulerActor({ log: options.log });
  const metrics = options.metrics ?? new HubMetrics({ defaultMetrics: false });
  const provider = options.provider ? { rolesClaim: 'roles', ...options.provider } : undefined;
  const users = new HubUserService(options.db);
  const identity = await openHubIdentity({
    dataDir: options.dataDir,
    tokenVersions: users,
    ...(provider
      ? {
          external: {
            jwksUrl: provider.jwksUrl,
            issuer: provider.issuer,
            audience: provider.audience,
            rolesClaim: provider.rolesClaim,
          },
        }
      : {}),
  });
  const host = new ModuleHost({
    bus,
    db: options.db,
    log: options.log,
    metrics,
    mounts,
    scheduler,
    identity,
    ...(provider ? { provider } : {}),
    fanOut: new MeshFanOut({ bus, dedupe: new PacketDedupe() }),
    hub: {
      version: options.version ?? '0.0.0-test',
      startedAt: Date.now(),
      dataDir: options.dataDir,
      listenHost: '127.0.0.1',
      apiDocs: options.apiDocs ?? false,
      plugins: [],
    },
  });
  return { host, bus, mounts, scheduler, metrics, identity };
}

/** The HTTP app of what a standalone host's modules mounted, as the hub's server would serve it. */
export function standaloneApp(
  mounts: HttpMounts<UpgradeHandler>,
  metrics: HubMetrics,
  version = '0.0.0-test',
): Hono {
  return createHttpApp({
    log: silentLog,
    metrics,
    version,
    health: () => ({
      status: 'ok',
      version,
      uptime_s: 0,
      radio: { state: 'disconnected', transport: 'none', simulated: false },
      actors: [],
    }),
    routes: mounts.ordered(),
  });
}
