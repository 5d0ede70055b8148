import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TokenVerifier } from '../auth/jwt-verifier.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { MeshPacketFanOut } from '../domain/mesh.js';
import type { ReadingSink } from '../ingest/reading-sink.js';
import { Actor } from '../kernel/actor.js';
import { bindFailure } from '../kernel/startup-failure.js';
import type { ChannelKey } from '../mesh/mqtt/channel-keys.js';
import { ChannelKeyring } from '../mesh/mqtt/channel-keys.js';
import type { TrustedGateways } from '../mesh/mqtt/trusted-gateways.js';
import { MeshUplinkDecoder } from '../mesh/mqtt/uplink.js';
import type { HubActorDeps, MqttTopicRegistry } from '../module.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { type CheckPassword, MqttAuthenticator } from './authenticator.js';
import { MqttBroker, WEBSOCKET_PATH } from './broker.js';
import { HubEventPublisher } from './event-publisher.js';
import { MqttIngest } from './ingest-router.js';
import { LatestReadings } from './latest-readings.js';
import { RetainedLedger, type RetainedLimits } from './retained.js';
import { mqttGuardMetrics } from './security-metrics.js';
import { ModuleTopicRules } from './topics.js';

interface IngestTally {
  labels: { format: string; outcome: string };
  count: number;
}

export interface MqttSettings {
  host: string;
  /** 0: any free port. A taken port fails the start. */
  port: number;
  websocket: boolean;
  allowAnonymous: boolean;
  maxConnections: number;
  maxPacketBytes: number;
  drainTimeoutMs: number;
  channelKeys: ChannelKey[];
  /** MESH_TRUSTED_GATEWAYS; none when absent. */
  trustedGateways?: TrustedGateways;
  /** Clients' retained messages kept at most (MQTT_RETAINED_MAX_*). */
  retained: RetainedLimits;
  haDiscovery: boolean;
  offlineAfterMs: number;
}

/**
 * The embedded MQTT broker (src/mqtt/broker.ts) and the hub's events out: retained readings,
 * nodes, availability, status and Home Assistant discovery. Ingestion publishes are handed to
 * the writer through `sink` and acknowledged once committed.
 */
export class MqttBrokerActor extends Actor {
  readonly name = 'mqtt';
  override readonly dependsOn = ['store', 'ingest-writer'];
  private broker: MqttBroker | undefined;
  private publisher: HubEventPublisher | undefined;
  private bound: number | undefined;
  /** Ingestion outcomes by format, then outcome: tallied per publish, handed to prom-client when scraped. */
  private readonly ingestTallies = new Map<string, Map<string, IngestTally>>();
  private stopTallies: (() => void) | undefined;

  constructor(
    private readonly deps: HubActorDeps & {
      fanOut: MeshPacketFanOut;
      sink: ReadingSink;
      settings: MqttSettings;
      /** The hub's user store; until one is wired, every password login is refused. */
      checkPassword?: CheckPassword;
      /** Verifies hub-issued (or IdP) JWTs sent as the MQTT password; none: token logins are refused. */
      tokenVerifier?: TokenVerifier;
      /** The hub's login throttle, shared with HTTP logins. */
      logins?: LoginThrottle;
      /** The topics modules declared and publish on (src/module.ts ModuleMqtt); none when absent. */
      moduleTopics?: MqttTopicRegistry;
      version: string;
    },
  ) {
    super();
  }

  async start(): Promise<void> {
    const { bus, log, metrics, settings } = this.deps;
    const guards = mqttGuardMetrics(metrics.registry);
    const ingest = new MqttIngest({
      sink: this.deps.sink,
      decoder: new MeshUplinkDecoder({
        keys: new ChannelKeyring(settings.channelKeys),
        ...(settings.trustedGateways ? { trustedGateways: settings.trustedGateways } : {}),
      }),
      fanOut: this.deps.fanOut,
      log,
      onMessage: (format, outcome) => {
        let byOutcome = this.ingestTallies.get(format);
        if (!byOutcome) {
          byOutcome = new Map();
          this.ingestTallies.set(format, byOutcome);
        }
        const tally = byOutcome.get(outcome);
        if (tally) tally.count++;
        else byOutcome.set(outcome, { labels: { format, outcome }, count: 1 });
      },
      onRejectedReadings: (reason, count) =>
        metrics.ingestRejectedReadings.inc({ source: 'mqtt', reason }, count),
      onRefused: (reason) => guards.refusedMesh(reason),
    });
    // Packets in the hub's own node's name are refused from MQTT: only its radio speaks for it.
    bus.on(
      this.name,
      'radio.status',
      (status) => {
        if (status.myNodeNum !== undefined) ingest.hubNodeNum = status.myNodeNum >>> 0;
      },
      { replay: true },
    );
    const retained = new RetainedLedger(settings.retained);
    guards.watchRetained(retained);
    const broker = new MqttBroker({
      authenticator: new MqttAuthenticator({
        ...(this.deps.checkPassword ? { checkPassword: this.deps.checkPassword } : {}),
        ...(this.deps.tokenVerifier ? { tokenVerifier: this.deps.tokenVerifier } : {}),
        ...(this.deps.logins ? { throttle: this.deps.logins } : {}),
        allowAnonymous: settings.allowAnonymous,
      }),
      ingest,
      retained,
      log,
      maxConnections: settings.maxConnections,
      maxPacketBytes: settings.maxPacketBytes,
      drainTimeoutMs: settings.drainTimeoutMs,
      websocket: settings.websocket,
      moduleTopics: new ModuleTopicRules(this.deps.moduleTopics),
      onHomeAssistantStatus: (payload) => {
        if (payload === 'online') this.publisher?.homeAssistantOnline();
      },
      onClientsChanged: (n) => metrics.mqttClients.set(n),
      onAuthFailure: (reason) => metrics.mqttAuthFailures.inc({ reason }),
      onDenied: (action) => metrics.mqttDenied.inc({ action }),
      onOversize: () => metrics.mqttOversizePackets.inc(),
      onRetainedRefused: (reason) => guards.refusedRetained(reason),
    });
    this.broker = broker;
    this.stopTallies = metrics.onRender(() => this.flushTallies());
    await broker.open();
    this.bound = await this.listen(broker);

    const publisher = new HubEventPublisher({
      publish: (topic, payload) => broker.publishRetained(topic, payload),
      latest: new LatestReadings(this.deps.db),
      nodes: new NodeRepository(this.deps.db),
      haDiscovery: settings.haDiscovery,
      offlineAfterMs: settings.offlineAfterMs,
      hubVersion: this.deps.version,
      log,
    });
    this.publisher = publisher;
    bus.on(this.name, 'reading.stored', ({ readings }) =>
      publisher.readingsStored(readings.map((r) => r.nodeId)),
    );
    bus.on(this.name, 'node.updated', (update) => publisher.nodeUpdated(update.nodeId));
    // Modules' own events (ctx.mqtt.publish) on the topics they declared: retained when asked.
    this.deps.moduleTopics?.carry((topic, payload, options) =>
      options?.retain ? broker.publishRetained(topic, payload) : broker.publish(topic, payload),
    );
    publisher.start();
    log.info(
      {
        host: settings.host,
        port: this.bound,
        websocket: settings.websocket ? WEBSOCKET_PATH : false,
        anonymous: settings.allowAnonymous,
        haDiscovery: settings.haDiscovery,
      },
      'mqtt broker listening',
    );
  }

  /** A taken MQTT_PORT fails the start at once, like every port of the hub (README "Configuration"). */
  private async listen(broker: MqttBroker): Promise<number> {
    const { host, port } = this.deps.settings;
    try {
      return (await broker.listen(host, port)).port;
    } catch (error) {
      throw bindFailure(error, { portSetting: 'MQTT_PORT', port, host, hostSetting: 'MQTT_HOST' });
    }
  }

  private flushTallies(): void {
    for (const byOutcome of this.ingestTallies.values()) {
      for (const tally of byOutcome.values()) {
        if (tally.count === 0) continue;
        this.deps.metrics.mqttIngestMessages.inc(tally.labels, tally.count);
        tally.count = 0;
      }
    }
  }

  /** MQTT over WebSocket: the HTTP server hands over upgrades of /mqtt; refused while the broker is down. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (!this.broker?.handleUpgrade(request, socket, head)) socket.destroy();
  }

  /** The TCP port the broker listens on. */
  get port(): number {
    if (this.bound === undefined) throw new Error('the MQTT broker is not listening');
    return this.bound;
  }

  /** Waits until hub events scheduled so far are published (tests, shutdown). */
  async settle(): Promise<void> {
    await this.publisher?.settle();
  }

  override describe(): Record<string, unknown> {
    const { settings } = this.deps;
    if (this.bound === undefined) return {};
    return {
      port: this.bound,
      websocket: settings.websocket ? WEBSOCKET_PATH : false,
      clients: this.broker?.connectedClients ?? 0,
      anonymous: settings.allowAnonymous,
    };
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    this.deps.moduleTopics?.carry(undefined);
    this.flushTallies();
    this.stopTallies?.();
    this.stopTallies = undefined;
    const broker = this.broker;
    const publisher = this.publisher;
    this.broker = undefined;
    this.publisher = undefined;
    this.bound = undefined;
    if (!broker) return;
    broker.stopListening();
    // PUBACKs held for commits in flight still go out before the clients are disconnected.
    await broker.releaseHeldAcks(1_500);
    await publisher?.stop();
    await broker.close();
  }
}
