/**
 * What a module of this hub sees (the module seam, src/kernel/module.ts, with the hub's types):
 * its typed settings, the typed bus, the database, a logger, the scheduler, the HTTP mounts,
 * the MQTT topics it publishes, the hub's one identity and a metrics factory. Core features and plugins alike are written
 * against this and nothing else of the hub:
 *
 * ```ts
 * export const weatherModule = defineModule({
 *   name: 'weather',
 *   settings: z.object({}),
 *   create(ctx) {
 *     ctx.mount('/api/v1/weather', weatherRoutes(new WeatherService({ db: ctx.db })), { component: 'weather' });
 *   },
 * });
 * ```
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Hono, MiddlewareHandler } from 'hono';
import type { JWTPayload } from 'jose';
import type {
  Counter,
  CounterConfiguration,
  Gauge,
  GaugeConfiguration,
  Histogram,
  HistogramConfiguration,
} from 'prom-client';
import type { Principal } from './auth/hub-identity.js';
import type { TokenVerifier, VerifiedIdentity } from './auth/jwt-verifier.js';
import type { LoginThrottle } from './auth/login-throttle.js';
import type { AuthEnv } from './auth/require-auth.js';
import type { HubBus } from './domain/events.js';
import type { MeshPacketFanOut } from './domain/mesh.js';
import type { RadioTap } from './domain/radio.js';
import type { Component } from './http/routes.js';
import {
  MODULE_API_VERSION,
  type ModuleDefinition,
  type ModuleParts,
  type SettingsSchema,
} from './kernel/module.js';
import type { ScheduledJob } from './kernel/scheduler.js';
import type { Logger } from './log.js';
import type { HubMetrics } from './metrics.js';
import type { Database } from './store/database.js';

export { MODULE_API_VERSION, type ModuleParts };

/** Takes over an HTTP upgrade of its path; the socket is the handler's from then on. */
export type UpgradeHandler = (request: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface MountOptions {
  /** The spec's component the routes belong to (HTTP_COMPONENT_PORTS serves them on its port). */
  component?: Component;
}

/** The hub's one identity, for bearer-protected routes. */
export interface ModuleAuth {
  /** Verifies the bearer token and requires one of `roles` (any verified caller when empty). */
  require(roles?: readonly string[]): MiddlewareHandler<AuthEnv>;
  /** The same verifier, for protocols other than HTTP (MQTT passwords) or optional sign-in. */
  readonly verifier: TokenVerifier;
  /** The one login throttle of the hub: every password login (HTTP, MQTT) goes through it. */
  readonly logins: LoginThrottle;
  /** Who a verified caller is to the hub: a local user, or `idp:<sub>` from the identity provider. */
  principalOf(identity: VerifiedIdentity): Principal;
  /** The external identity provider, when AUTH_JWKS_URL, AUTH_ISSUER and AUTH_AUDIENCE are set. */
  readonly provider?: { jwksUrl: string; issuer: string; audience: string; rolesClaim: string };
  /** Set when the identity provider is only partly configured: the missing settings (its tokens are refused). */
  readonly providerMissing?: readonly string[];
  /** Signs claims with the hub's own key (the local issuer's, in DATA_DIR): the sync client's request tokens. */
  readonly signer: { signClaims(claims: JWTPayload): Promise<string> };
}

/** prom-client metrics registered in the hub's registry, names prefixed for the module. */
export interface ModuleMetrics {
  /** `meshhub_` for core modules, `meshhub_<plugin>_` for plugins. */
  readonly prefix: string;
  counter<L extends string>(config: CounterConfiguration<L>): Counter<L>;
  gauge<L extends string>(config: GaugeConfiguration<L>): Gauge<L>;
  histogram<L extends string>(config: HistogramConfiguration<L>): Histogram<L>;
  /** Runs `fn` before each scrape (hot paths tally in plain numbers and move them here). */
  onRender(fn: () => void): () => void;
  /** The hub's own metrics, shared by the core modules that feed them. */
  readonly core: HubMetrics;
}

/** Who hears a module's MQTT topic (README "MQTT access"). */
export interface MqttTopicOptions {
  /**
   * `admin`: forwarded to admins only, whatever wildcard (`meshhub/#`) another client subscribed
   * with (people's texts, billing). `integration`: like the core's readings and nodes, anyone
   * with the `integration` or `admin` role who subscribes hears it (mesh-wide facts).
   */
  readers: 'admin' | 'integration';
  /**
   * Also refuse a non-admin who names these topics in a SUBSCRIBE (SUBACK 0x80); without it the
   * subscription is granted and simply hears nothing.
   */
  refuseOthers?: boolean;
}

/** One topic filter a module declared (`meshhub/billing/#`). */
export interface MqttTopicDeclaration extends MqttTopicOptions {
  readonly filter: string;
  readonly module: string;
}

/** Publishes as the hub (no ACL applies): QoS 0, retained only when asked. */
export type MqttPublish = (topic: string, payload: string, options?: MqttPublishOptions) => Promise<void>;

export interface MqttPublishOptions {
  /** Kept by the broker as the topic's state (counted with the hub's own retained messages). */
  retain?: boolean;
}

/** The hub's one registry of module topics: the broker's ACL and forwarding filter read it. */
export interface MqttTopicRegistry {
  /** Every topic filter declared so far, in order; `version` changes with each declaration. */
  readonly declared: readonly MqttTopicDeclaration[];
  readonly version: number;
  /** The broker, once listening, carries the modules' publishes (undefined: it stopped; publishes are dropped). */
  carry(publish: MqttPublish | undefined): void;
}

/**
 * A module's MQTT topics: the broker names no feature. A module declares what it publishes and
 * who may read it, then publishes there as the hub:
 *
 * ```ts
 * ctx.mqtt.topic('meshhub/billing/#', { readers: 'admin' });
 * ctx.bus.on(ctx.owner, 'billing.changed', (c) => ctx.mqtt.publish(billingEventTopic(c), billingEventPayload(c)));
 * ```
 */
export interface ModuleMqtt {
  /** Declares a topic filter the module publishes on (only the hub publishes there); call it in `create`. */
  topic(filter: string, options: MqttTopicOptions): void;
  /** Publishes as the hub, QoS 0, not retained unless asked; dropped while no broker runs, a failure is logged. */
  publish(topic: string, payload: string, options?: MqttPublishOptions): void;
  /** The registry itself, for the broker module. */
  readonly registry: MqttTopicRegistry;
}

/** The hub's radio link, as a module may reach it beside the bus (`radio.send`, `radio.status`). */
export interface ModuleRadio {
  /** Taps the link: call it in `create` (before the hub starts), so the tap sees the handshake. */
  tap(tap: RadioTap): void;
}

export interface HubFacts {
  readonly version: string;
  /** When the process started (ms since the epoch). */
  readonly startedAt: number;
  readonly dataDir: string;
  /** HTTP_HOST: where the hub listens (other listeners default to it: one knob for "LAN" or "this machine only"). */
  readonly listenHost: string;
  /** API_DOCS: modules that publish an OpenAPI document also serve its HTML page. */
  readonly apiDocs: boolean;
  /** PLUGINS: the plugins this hub runs (the web UI shows their pages only then). */
  readonly plugins: readonly string[];
}

/** The hub services an actor the hub builds itself is handed (a module's context carries them too). */
export interface HubActorDeps {
  bus: HubBus;
  log: Logger;
  metrics: HubMetrics;
  db: Database;
}

export interface ModuleContext {
  readonly name: string;
  readonly bus: HubBus;
  /** Owner name for bus listeners the module registers itself (actors use their own name). */
  readonly owner: string;
  /** The hub's SQLite connection, open (and migrated) before any module is created. */
  readonly db: Database;
  readonly log: Logger;
  readonly hub: HubFacts;
  /** Announces a heard mesh packet on the bus once, whichever way (radio, MQTT gateway) it came. */
  readonly mesh: MeshPacketFanOut;
  /** Runs `job` on a cron schedule while the hub runs; the expression is checked now. */
  schedule(name: string, cron: string, job: ScheduledJob): void;
  /**
   * Serves `app` under `path`. The HTTP actor owns the order (longest path first, the web app's
   * fallback last) and refuses a path another module already serves.
   */
  // biome-ignore lint/suspicious/noExplicitAny: any Hono app, whatever its declared variables
  mount(path: string, app: Hono<any>, options?: MountOptions): void;
  /** Takes over HTTP upgrade requests for exactly `path` (MQTT over WebSocket at /mqtt). */
  upgrade(path: string, handler: UpgradeHandler): void;
  readonly auth: ModuleAuth;
  readonly metrics: ModuleMetrics;
  readonly mqtt: ModuleMqtt;
  readonly radio: ModuleRadio;
}

export type HubModule<S extends SettingsSchema = SettingsSchema> = ModuleDefinition<ModuleContext, S>;

/** Declares a module; the settings' parsed type flows into `create`'s context. */
export function defineModule<S extends SettingsSchema>(
  module: Omit<HubModule<S>, 'apiVersion'> & { apiVersion?: typeof MODULE_API_VERSION },
): HubModule<S> {
  return { ...module, apiVersion: MODULE_API_VERSION };
}
