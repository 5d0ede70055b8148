/**
 * The embedded Aedes 1.x broker, wired to the hub (README "MQTT"): authentication and per-role
 * ACLs through Aedes' injected handlers, ingestion inside `authorizePublish` — whose callback
 * Aedes awaits before it writes a QoS 1 PUBACK, so holding it until the commit is what makes
 * PUBACK-after-commit — and bounded resources:
 *
 * - `drainTimeout`: a subscriber that stops reading is disconnected, never buffered forever;
 * - a connection limit (CONNACK 3 "server unavailable" past it, and a hard cap on sockets);
 * - a packet size limit enforced on the fixed header, before the packet is buffered;
 * - a connect timeout, a client id length limit, Aedes' inbound QoS 2 window;
 * - retained messages: never kept from clients on the ingestion topics, bounded elsewhere
 *   (retained.ts).
 *
 * Listens on TCP and, when asked, serves MQTT over WebSocket through `handleUpgrade` (the HTTP
 * server hands over upgrades of `/mqtt`).
 */
import type { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { WebSocketServer } from 'ws';
import { withTimeout } from '../kernel/timing.js';
import type { Logger } from '../log.js';
import { mayPublishClass, maySubscribe, topicClass } from './acl.js';
import { type MqttAuthenticator, MqttAuthFailure, type MqttIdentity } from './authenticator.js';
import type { MqttIngest } from './ingest-router.js';
import { guardConnection } from './packet-size-guard.js';
import type { RetainedLedger, RetainedRefusal } from './retained.js';
import { HA_STATUS_TOPIC, ModuleTopicRules } from './topics.js';
export const WEBSOCKET_PATH = '/mqtt';
/**
 * Socket read buffer (Node's default is 16 KiB). Aedes reads the next chunk only when every
 * publish of the last one is handled, and a QoS 1 publish is handled once its commit is done:
 * a bigger chunk puts more publishes in one commit. Bounded per connection, and filled only
 * while a client sends faster than the hub commits.
 */
const READ_BUFFER_BYTES = 64 * 1024;

export interface MqttBrokerOptions {
  authenticator: MqttAuthenticator;
  ingest: MqttIngest;
  /** What is held retained, and whether a client's retained publish may be kept. */
  retained: RetainedLedger;
  log: Logger;
  maxConnections: number;
  maxPacketBytes: number;
  drainTimeoutMs: number;
  /** Serve MQTT over WebSocket at /mqtt through `handleUpgrade`. */
  websocket: boolean;
  /** The topics modules declared (who may read them); none when absent. */
  moduleTopics?: ModuleTopicRules;
  /** Home Assistant published its status (`online` after it (re)started). */
  onHomeAssistantStatus?: (payload: string) => void;
  onClientsChanged?: (connected: number) => void;
  onAuthFailure?: (reason: string) => void;
  onDenied?: (action: 'publish' | 'subscribe') => void;
  onOversize?: () => void;
  /** A client's retained flag was stripped (the publish went on, live only). */
  onRetainedRefused?: (reason: RetainedRefusal) => void;
}

export class MqttBroker {
  readonly aedes: Aedes;
  private readonly identities = new WeakMap<Client, MqttIdentity>();
  private server: Server | undefined;
  private serverClosed: Promise<void> | undefined;
  private wss: WebSocketServer | undefined;
  /** The `ws` module, loaded only when MQTT over WebSocket is on (it costs memory on every Pi). */
  private ws: typeof import('ws') | undefined;
  /**
   * PUBACKs held, by the commit they wait for. Publishes received in one turn share a commit
   * (reading-sink.ts), so one handler per commit releases them all.
   */
  private readonly holding = new Map<Promise<void>, HeldAck[]>();
  private readonly modules: ModuleTopicRules;

  constructor(private readonly options: MqttBrokerOptions) {
    const modules = options.moduleTopics ?? new ModuleTopicRules();
    this.modules = modules;
    this.aedes = new Aedes({
      id: 'meshhub',
      connectTimeout: 10_000,
      drainTimeout: Math.max(1_000, options.drainTimeoutMs),
      maxClientsIdLength: 128,
      authenticate: (client, username, password, done) => this.authenticate(client, username, password, done),
      authorizePublish: (client, packet, done) => this.authorizePublish(client, packet.topic, packet, done),
      // Modules' admin-only topics (private texts, payments, …): an integration allowed `meshhub/#`
      // still gets them only when it is an admin (a subscribe ACL cannot split a wildcard).
      authorizeForward: (client, packet) => {
        if (!modules.isAdminOnly(packet.topic)) return packet;
        return this.identities.get(client)?.roles.includes('admin') ? packet : null;
      },
      authorizeSubscribe: (client, subscription, done) => {
        const identity = this.identities.get(client);
        if (identity && maySubscribe(identity.roles, subscription.topic, modules))
          return done(null, subscription);
        this.options.onDenied?.('subscribe');
        this.options.log.warn(
          { clientId: client.id, username: identity?.username, topic: subscription.topic },
          'mqtt subscription refused',
        );
        // A null subscription is refused in the SUBACK (0x80) and the connection stays up [MQTT-3.9.3].
        done(null, null);
      },
    });
    // Aedes emits 'error' for persistence failures; unheard, an EventEmitter error would end the process.
    (this.aedes as EventEmitter).on('error', (err: Error) =>
      this.options.log.error({ err }, 'mqtt broker error'),
    );
    const changed = () => this.options.onClientsChanged?.(this.aedes.connectedClients);
    this.aedes.on('client', changed);
    this.aedes.on('clientDisconnect', changed);
    this.aedes.on('clientError', (client, err) =>
      this.options.log.debug({ clientId: client.id, err: err.message }, 'mqtt client error'),
    );
    this.aedes.on('connectionError', (_client, err) =>
      this.options.log.debug({ err: err.message }, 'mqtt connection error'),
    );
    this.aedes.on('publish', (packet, client) => {
      if (client && packet.topic === HA_STATUS_TOPIC)
        this.options.onHomeAssistantStatus?.(packet.payload.toString());
    });
  }

  /** Starts the broker core (persistence, $SYS heartbeat); no listener yet. */
  async open(): Promise<void> {
    if (this.options.websocket) this.ws = await import('ws');
    await this.aedes.listen();
  }

  /** Listens on TCP; rejects (EADDRINUSE and the like) without side effects. */
  listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer({ highWaterMark: READ_BUFFER_BYTES }, (socket: Socket) => {
      socket.setNoDelay(true);
      this.accept(socket);
    });
    // A hard cap on sockets; the MQTT-level limit (CONNACK 3) applies below it, in authenticate.
    server.maxConnections = this.options.maxConnections + 16;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        server.on('error', (err) => this.options.log.error({ err }, 'mqtt listener failed'));
        this.server = server;
        resolve(server.address() as AddressInfo);
      });
    });
  }

  /** Takes over an HTTP upgrade of `/mqtt`; false when the request is not ours. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const ws = this.ws;
    if (!ws || this.aedes.closed) return false;
    const path = (request.url ?? '').split('?')[0];
    if (path !== WEBSOCKET_PATH) return false;
    this.wss ??= new ws.WebSocketServer({ noServer: true, maxPayload: this.options.maxPacketBytes + 16 });
    this.wss.handleUpgrade(request, socket, head, (socketWs) => {
      const stream = ws.createWebSocketStream(socketWs);
      stream.on('error', () => stream.destroy());
      this.accept(stream, request);
    });
    return true;
  }

  /** Publishes an event as the hub (no ACL applies), not retained, QoS 0: for unbounded streams such as message events. */
  publish(topic: string, payload: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.aedes.publish(
        { cmd: 'publish', topic, payload: Buffer.from(payload), qos: 0, retain: false, dup: false },
        (error) => (error ? reject(error) : resolve()),
      );
    });
  }

  /** Publishes as the hub (no ACL applies): retained, QoS 0, so nothing queues for offline sessions. */
  publishRetained(topic: string, payload: string): Promise<void> {
    const bytes = retainedBytes(payload);
    this.options.retained.recordHub(topic, bytes.length);
    return new Promise((resolve, reject) => {
      this.aedes.publish(
        { cmd: 'publish', topic, payload: bytes, qos: 0, retain: true, dup: false },
        (error) => (error ? reject(error) : resolve()),
      );
    });
  }

  get connectedClients(): number {
    return this.aedes.closed ? 0 : this.aedes.connectedClients;
  }

  address(): AddressInfo | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? a : undefined;
  }

  /** Stops accepting connections; those open stay (close() ends them). */
  stopListening(): void {
    const server = this.server;
    if (!server || this.serverClosed) return;
    // server.close() calls back only once every connection has ended: wait for that in close().
    this.serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Waits (at most `timeoutMs`) for the commits whose PUBACKs are held, so they still go out. */
  async releaseHeldAcks(timeoutMs: number): Promise<void> {
    if (this.holding.size === 0) return;
    const settled = Promise.allSettled([...this.holding.keys()]);
    await withTimeout(settled, timeoutMs, () => new Error('held PUBACKs not released')).catch(() => {});
  }

  /** Stops listening, then disconnects every client and closes the broker. */
  async close(): Promise<void> {
    this.stopListening();
    const wss = this.wss;
    this.wss = undefined;
    if (wss) {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
    await new Promise<void>((resolve) => this.aedes.close(() => resolve()));
    await this.serverClosed;
    this.server = undefined;
    this.serverClosed = undefined;
  }

  private accept(conn: Duplex, request?: IncomingMessage): void {
    this.aedes.handle(conn, request);
    guardConnection(conn, this.options.maxPacketBytes, (bytes) => {
      this.options.onOversize?.();
      this.options.log.warn(
        { bytes, limit: this.options.maxPacketBytes },
        'mqtt packet too large; connection closed',
      );
    });
  }

  private authenticate(
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
    done: (error: AuthenticateError | null, success: boolean | null) => void,
  ): void {
    const refuse = (failure: MqttAuthFailure) => {
      this.options.onAuthFailure?.(failure.reason);
      this.options.log.warn(
        {
          clientId: client.id,
          username: logSafe(username),
          reason: failure.reason,
          remote: remoteAddress(client),
        },
        `mqtt login refused: ${failure.message}`,
      );
      const error = new Error(failure.message) as AuthenticateError;
      error.returnCode = failure.returnCode as AuthenticateError['returnCode'];
      done(error, false);
    };
    if (this.aedes.connectedClients >= this.options.maxConnections) {
      refuse(new MqttAuthFailure('unavailable', 3, 'too many connections'));
      return;
    }
    this.options.authenticator.authenticate(username, password, remoteAddress(client)).then(
      (identity) => {
        this.identities.set(client, identity);
        this.options.log.debug(
          { clientId: client.id, username: identity.username, via: identity.via },
          'mqtt login',
        );
        done(null, true);
      },
      (error: unknown) =>
        refuse(
          error instanceof MqttAuthFailure ? error : new MqttAuthFailure('unavailable', 3, 'login failed'),
        ),
    );
  }

  private authorizePublish(
    client: Client | null,
    topic: string,
    packet: { payload: Buffer | string; qos: number; retain?: boolean },
    done: (error?: Error | null) => void,
  ): void {
    const identity = client ? this.identities.get(client) : undefined;
    const kind = topicClass(topic, this.modules);
    if (!identity || !mayPublishClass(identity.roles, kind)) {
      this.options.onDenied?.('publish');
      this.options.log.warn(
        { clientId: client?.id, username: identity?.username, topic },
        'mqtt publish refused; disconnecting',
      );
      // [MQTT-3.3.5-2]: the broker may not tell the client; Aedes closes the connection.
      done(new Error(`not authorized to publish to ${topic}`));
      return;
    }
    if (packet.retain) this.admitRetained(client, identity, topic, packet, kind === 'ingest');
    if (kind !== 'ingest') {
      done(null);
      return;
    }
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const committed = this.options.ingest.handle(topic, payload, identity.username);
    if (!committed) {
      // Nothing to store (bad input is counted and acknowledged: see ingest-router.ts).
      done(null);
      return;
    }
    if (packet.qos === 0) {
      // No acknowledgement to hold: a failed commit is logged by the writer.
      committed.catch(() => {});
      done(null);
      return;
    }
    const held = this.holding.get(committed);
    if (held) {
      held.push({ clientId: client?.id, topic, done });
      return;
    }
    this.holding.set(committed, [{ clientId: client?.id, topic, done }]);
    committed.then(
      () => this.releaseAcks(committed, null),
      (error: unknown) =>
        this.releaseAcks(committed, error instanceof Error ? error : new Error(String(error))),
    );
  }

  /**
   * A client's retained publish: kept when retained.ts allows it, else the flag is cleared here,
   * before Aedes stores it (the publish itself goes on to current subscribers).
   */
  private admitRetained(
    client: Client | null,
    identity: MqttIdentity,
    topic: string,
    packet: { payload: Buffer | string; retain?: boolean },
    ingestTopic: boolean,
  ): void {
    const bytes =
      typeof packet.payload === 'string' ? Buffer.byteLength(packet.payload) : packet.payload.length;
    const refused = this.options.retained.admitClient(topic, bytes, ingestTopic);
    if (!refused) {
      // Kept for as long as the hub runs: its own bytes, not a view of the socket's read buffer.
      if (typeof packet.payload !== 'string') packet.payload = retainedBytes(packet.payload);
      return;
    }
    packet.retain = false;
    this.options.onRetainedRefused?.(refused);
    this.options.log.debug(
      { clientId: client?.id, username: identity.username, topic, reason: refused },
      'retained flag of a client publish cleared; not kept',
    );
  }

  /** Sends the PUBACKs waiting for `committed`; after a failed commit, none (the clients resend). */
  private releaseAcks(committed: Promise<void>, error: Error | null): void {
    const held = this.holding.get(committed) ?? [];
    this.holding.delete(committed);
    if (error) {
      const first = held[0];
      this.options.log.warn(
        { clientId: first?.clientId, topic: first?.topic, publishes: held.length, err: error },
        'readings not committed; no PUBACK',
      );
    }
    for (const ack of held) ack.done(error);
  }
}

interface HeldAck {
  clientId: string | undefined;
  topic: string;
  done(error?: Error | null): void;
}

/** A username as it may go into the log: short (someone may paste a token there) and one line. */
function logSafe(username: string | undefined): string | undefined {
  return username === undefined ? undefined : username.slice(0, 64).replace(/[^\x20-\x7e]/g, '?');
}

function remoteAddress(client: Client): string | undefined {
  const conn = client.conn as Partial<Socket>;
  return conn.remoteAddress ?? client.req?.socket.remoteAddress;
}

/**
 * A retained payload's bytes, in a buffer of exactly their size. `Buffer.from` carves small
 * payloads out of Node's shared 8 KiB pool, and a parsed publish is a view of the socket's read
 * buffer: kept for the hub's lifetime, either would keep the whole chunk alive. After the
 * load-rss bench (a thousand nodes' state retained), this holds 1.2 MB less (BENCHMARKS.md, issue 26).
 */
export function retainedBytes(payload: string | Buffer): Buffer {
  const size = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
  const bytes = Buffer.allocUnsafeSlow(size);
  if (typeof payload === 'string') bytes.write(payload);
  else payload.copy(bytes);
  return bytes;
}
