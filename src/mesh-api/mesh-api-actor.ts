/**
 * The mesh API: the hub re-exposes its radio to any number of official Meshtastic clients (the
 * Android and iOS apps in TCP mode, the `meshtastic --host` CLI, @meshtastic/core) over the stream
 * protocol, as if each were the radio's only client (issue 16, part 1; docs/architecture.md "Meshtastic facts").
 *
 * - `want_config_id` is answered from the hub's own state (handshake.ts), never by the radio.
 * - Every packet the radio hears and every packet the hub sends is written to every configured
 *   client, encoded once; queue status for a client's packet goes to that client alone.
 * - A client's MeshPacket is never written to the radio directly: it waits for a slot in the
 *   hub's airtime-paced send queue (`send`), keeps the client's own packet id, so the ROUTING_APP
 *   ACK the radio reports (request_id = that id) is the client's ACK.
 * - Admin writes are refused with Routing NOT_AUTHORIZED unless MESH_API_ADMIN=true.
 * - Secrets never reach a client (secrets.ts); nor, unless MESH_API_SHOW_HUB_TEXTS=true, the
 *   texts of subscribers' conversations: the hub's own sends (and the ACKs naming their packet
 *   ids) and the texts addressed to the hub's node (README "What an app on the hub's radio can see").
 */
import { randomInt } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { HubBus } from '../domain/events.js';
import type { MeshNode } from '../domain/node.js';
import { Actor } from '../kernel/actor.js';
import { bindFailure } from '../kernel/startup-failure.js';
import { withTimeout } from '../kernel/timing.js';
import type { Logger } from '../log.js';
import { encodeFrame } from '../mesh/framing.js';
import { classifyAdmin } from './admin-policy.js';
import { type ClientFrameError, ClientSession, type DropReason } from './client-session.js';
import { handshakeReplay } from './handshake.js';
import type { MirrorEvent, RadioMirror } from './radio-mirror.js';
import { packetWithoutSecrets, restoreSecrets } from './secrets.js';
import type { MeshApiSettings } from './settings.js';

/** Hands a client's packet to the radio through the hub's airtime-paced queue; rejects when it cannot. */
export type PacedSend = (packet: Mesh.MeshPacket) => Promise<void>;

/** Packets of one client waiting in the hub's send queue at most; more are refused at once. */
const MAX_QUEUED_PER_CLIENT = 16;
/** Client packet ids remembered for routing queue status to their owner. */
const MAX_OWNED_IDS = 4096;
/** Packet ids of the hub's own sends remembered, so that their ACKs stay hidden too. */
const MAX_HUB_IDS = 4096;
const HANDSHAKE_DRAIN_MS = 30_000;
/** A packet still unsent after this long (a stalled queue, a restarted gateway) is reported failed. */
const SEND_TIMEOUT_MS = 5 * 60_000;

export interface MeshApiMetrics {
  clients: Gauge;
  drops: Counter<'reason'>;
  clientPackets: Counter<'outcome'>;
  frameErrors: Counter<'reason'>;
  clientBuffer: Gauge<'client'>;
}

/** The mesh API's metrics in the hub's registry (created once; the actor may restart). */
export function meshApiMetrics(registry: Registry, clients: () => ClientSession[]): MeshApiMetrics {
  const registers = [registry];
  return {
    clients: new Gauge({
      name: 'meshhub_mesh_api_clients',
      help: 'Clients connected to the mesh API (Meshtastic TCP API)',
      registers,
      collect() {
        this.set(clients().length);
      },
    }),
    clientBuffer: new Gauge({
      name: 'meshhub_mesh_api_client_buffered_bytes',
      help: 'Bytes written to each mesh API client and not yet read by it',
      labelNames: ['client'],
      registers,
      collect() {
        this.reset();
        for (const c of clients()) this.set({ client: c.address }, c.bufferedBytes);
      },
    }),
    drops: new Counter({
      name: 'meshhub_mesh_api_disconnects_total',
      help: 'Mesh API clients gone, by reason (slow: stopped reading; idle: no heartbeat; closed: hung up)',
      labelNames: ['reason'],
      registers,
    }),
    clientPackets: new Counter({
      name: 'meshhub_mesh_api_client_packets_total',
      help: 'MeshPackets from mesh API clients, by outcome',
      labelNames: ['outcome'],
      registers,
    }),
    frameErrors: new Counter({
      name: 'meshhub_mesh_api_frame_errors_total',
      help: 'Corrupt frames and malformed ToRadio from mesh API clients',
      labelNames: ['reason'],
      registers,
    }),
  };
}

export interface MeshApiActorDeps {
  settings: MeshApiSettings;
  bus: HubBus;
  log: Logger;
  mirror: RadioMirror;
  send: PacedSend;
  nodes(): MeshNode[];
  metrics: MeshApiMetrics;
}

export class MeshApiActor extends Actor {
  readonly name = 'mesh-api';
  // Optional: apps lose their window onto the mesh, but the hub goes on without it.
  override readonly required = false;
  private server: Server | undefined;
  private readonly sessions = new Set<ClientSession>();
  private readonly queued = new Map<ClientSession, number>();
  /** Client packet id → the session that sent it (queue status and echo suppression). */
  private readonly owners = new Map<number, ClientSession>();
  /** Ids of packets the hub sent for subscribers (hidden from clients, and so are their ACKs). */
  private readonly hubIds = new Set<number>();
  private unsubscribe: (() => void) | undefined;
  private listening: string | undefined;
  private frameId = 0;

  constructor(private readonly deps: MeshApiActorDeps) {
    super();
  }

  get clients(): ClientSession[] {
    return [...this.sessions];
  }

  /** The radio as this server sees it (benches feed it packets as a radio would). */
  get mirror(): RadioMirror {
    return this.deps.mirror;
  }

  /** Where the server listens (`host:port`), once it does. */
  get address(): { host: string; port: number } | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  async start(): Promise<void> {
    const { settings, log } = this.deps;
    this.unsubscribe = this.deps.mirror.subscribe((event) => this.onMirror(event));
    const server = createServer({ noDelay: true }, (socket) => this.accept(socket));
    server.maxConnections = settings.MESH_API_MAX_CLIENTS;
    this.server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(settings.MESH_API_PORT, settings.MESH_API_HOST, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      this.server = undefined;
      // A taken port stops the start with one line, as for every port of the hub (README
      // "Configuration"): another radio server on 4403 (say, `meshhub sim`) is the operator's
      // to move.
      throw bindFailure(error, {
        portSetting: 'MESH_API_PORT',
        port: settings.MESH_API_PORT,
        host: settings.MESH_API_HOST,
        hostSetting: 'MESH_API_HOST',
      });
    }
    server.on('error', (error) => log.warn({ err: error }, 'mesh API server error'));
    const bound = this.address!;
    this.listening = `${bound.host}:${bound.port}`;
    log.info(
      { address: this.listening, admin: settings.MESH_API_ADMIN, allow: settings.MESH_API_ALLOW.entries },
      'mesh API listening (Meshtastic TCP API for the official apps)',
    );
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    const server = this.server;
    this.server = undefined;
    this.listening = undefined;
    for (const session of this.sessions) session.drop('stopping');
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.owners.clear();
    this.queued.clear();
  }

  override describe(): Record<string, unknown> {
    return {
      ...(this.listening ? { listening: this.listening } : {}),
      admin: this.deps.settings.MESH_API_ADMIN,
      clients: this.clients.map((c) => ({
        address: c.address,
        connectedAt: new Date(c.connectedAt).toISOString(),
        configured: c.configured,
        packetsFromClient: c.packetsFromClient,
        bufferedBytes: c.bufferedBytes,
      })),
    };
  }

  private accept(socket: Socket): void {
    const { settings, log, metrics } = this.deps;
    const remote = socket.remoteAddress ?? '';
    if (!settings.MESH_API_ALLOW.allows(remote)) {
      log.warn({ client: remote }, 'mesh API client not in MESH_API_ALLOW; closed');
      metrics.drops.inc({ reason: 'not_allowed' });
      socket.on('error', () => {});
      socket.destroy();
      return;
    }
    const session: ClientSession = new ClientSession(socket, {
      bufferLimitBytes: settings.MESH_API_CLIENT_BUFFER_BYTES,
      idleTimeoutMs: settings.MESH_API_IDLE_TIMEOUT,
      handshakeDrainMs: HANDSHAKE_DRAIN_MS,
      handshake: (nonce) =>
        handshakeReplay(
          {
            mirror: this.deps.mirror,
            nodes: this.deps.nodes,
            fallbackNodeNum: this.deps.bus.last('radio.status')?.myNodeNum,
          },
          nonce,
        ),
      queueStatus: () => this.queueStatusFor(session),
      onPacket: (s, packet) => this.onClientPacket(s, packet),
      onFrameError: (_s, kind: ClientFrameError) => metrics.frameErrors.inc({ reason: kind }),
      onClosed: (s, reason: DropReason) => this.onClosed(s, reason),
    });
    this.sessions.add(session);
    session.start();
    log.info({ client: session.address, clients: this.sessions.size }, 'mesh API client connected');
  }

  private onClosed(session: ClientSession, reason: DropReason): void {
    this.sessions.delete(session);
    this.queued.delete(session);
    for (const [id, owner] of this.owners) if (owner === session) this.owners.delete(id);
    this.deps.metrics.drops.inc({ reason });
    const log =
      reason === 'slow' ? this.deps.log.warn.bind(this.deps.log) : this.deps.log.info.bind(this.deps.log);
    log({ client: session.address, reason, clients: this.sessions.size }, 'mesh API client gone');
  }

  private onMirror(event: MirrorEvent): void {
    const showHubTexts = this.deps.settings.MESH_API_SHOW_HUB_TEXTS;
    if (event.kind === 'sent' && event.origin === 'hub' && !showHubTexts) {
      // Remembered even with no client connected: one may connect before the ACK comes.
      this.hubIds.add(event.packet.id);
      if (this.hubIds.size > MAX_HUB_IDS) this.hubIds.delete(this.hubIds.values().next().value!);
      return;
    }
    if (this.sessions.size === 0) return;
    if (event.kind === 'sent') {
      const owner = this.owners.get(event.packet.id);
      this.broadcast({ case: 'packet', value: packetWithoutSecrets(event.packet) }, owner);
      return;
    }
    const variant = event.message.payloadVariant;
    if (variant.case === 'packet') {
      if (!showHubTexts && this.conversational(variant.value)) return;
      this.broadcast({ case: 'packet', value: packetWithoutSecrets(variant.value) });
      return;
    }
    if (variant.case === 'queueStatus') {
      // The radio's queue status names the packet it is about: only its sender cares.
      this.owners.get(variant.value.meshPacketId)?.send(variant);
      return;
    }
    if (
      variant.case === 'logRecord' ||
      variant.case === 'mqttClientProxyMessage' ||
      variant.case === 'xmodemPacket'
    )
      return;
    this.broadcast(variant);
  }

  /**
   * A packet of a subscriber's conversation: a text to the hub's node, or the ACK/NAK of a text
   * the hub sent (it names the hidden packet id).
   */
  private conversational(packet: Mesh.MeshPacket): boolean {
    const variant = packet.payloadVariant;
    if (variant.case !== 'decoded') return false;
    const { portnum, requestId } = variant.value;
    if (portnum === Portnums.PortNum.ROUTING_APP) return requestId !== 0 && this.hubIds.has(requestId);
    if (portnum !== Portnums.PortNum.TEXT_MESSAGE_APP) return false;
    const me = this.deps.mirror.myNodeNum ?? this.deps.bus.last('radio.status')?.myNodeNum;
    return me !== undefined && packet.to >>> 0 === me >>> 0;
  }

  /** Encodes once, writes to every configured client except `except`. */
  private broadcast(
    variant: MessageInitShape<typeof Mesh.FromRadioSchema>['payloadVariant'],
    except?: ClientSession,
  ): void {
    this.frameId = (this.frameId + 1) >>> 0 || 1;
    const frame = encodeFrame(
      toBinary(
        Mesh.FromRadioSchema,
        create(Mesh.FromRadioSchema, { id: this.frameId, payloadVariant: variant }),
      ),
    );
    for (const session of this.sessions) if (session !== except) session.sendLive(frame);
  }

  private onClientPacket(session: ClientSession, packet: Mesh.MeshPacket): void {
    const { metrics, settings, log } = this.deps;
    if (packet.id === 0) packet.id = randomInt(1, 0xffffffff);
    const id = packet.id;
    if (packet.payloadVariant.case !== 'decoded') {
      // Firmware encrypts for the phone; a client sending ciphertext is not one we understand.
      metrics.clientPackets.inc({ outcome: 'rejected' });
      this.refuse(session, id, Mesh.Routing_Error.BAD_REQUEST);
      return;
    }
    if (packet.payloadVariant.value.portnum === Portnums.PortNum.ROUTING_APP) {
      // ACKs and NAKs are the firmware's to make; one sent to the hub's own node would come back
      // from the radio as a verdict on a subscriber's text.
      metrics.clientPackets.inc({ outcome: 'rejected' });
      this.refuse(session, id, Mesh.Routing_Error.BAD_REQUEST);
      return;
    }
    const admin = classifyAdmin(packet);
    if (admin.kind === 'malformed' || (admin.kind === 'write' && !settings.MESH_API_ADMIN)) {
      metrics.clientPackets.inc({ outcome: 'refused_admin' });
      log.warn(
        {
          client: session.address,
          admin: admin.kind === 'write' ? admin.variant : 'malformed',
          to: packet.to,
        },
        'mesh API admin write refused (MESH_API_ADMIN=false)',
      );
      this.refuse(session, id, Mesh.Routing_Error.NOT_AUTHORIZED);
      return;
    }
    const queued = this.queued.get(session) ?? 0;
    if (queued >= MAX_QUEUED_PER_CLIENT) {
      metrics.clientPackets.inc({ outcome: 'rejected' });
      this.refuse(session, id, Mesh.Routing_Error.RATE_LIMIT_EXCEEDED);
      return;
    }
    // The radio stamps its own node number; a client may not speak as another node.
    packet.from = 0;
    // An app saves a whole config section: the secrets it was never shown are filled back in.
    if (admin.kind === 'write') packet = restoreSecrets(packet, this.deps.mirror);
    this.own(id, session);
    this.queued.set(session, queued + 1);
    metrics.clientPackets.inc({ outcome: 'queued' });
    withTimeout(this.deps.send(packet), SEND_TIMEOUT_MS, () => new Error('not sent in time'))
      .catch((error: unknown) => {
        metrics.clientPackets.inc({ outcome: 'failed' });
        log.info({ client: session.address, id, reason: (error as Error).message }, 'client packet not sent');
        this.refuse(session, id, Mesh.Routing_Error.NO_INTERFACE);
      })
      .finally(() => {
        const n = this.queued.get(session);
        if (n !== undefined) this.queued.set(session, Math.max(0, n - 1));
      });
  }

  private own(id: number, session: ClientSession): void {
    this.owners.delete(id);
    this.owners.set(id, session);
    if (this.owners.size > MAX_OWNED_IDS) {
      const oldest = this.owners.keys().next().value;
      if (oldest !== undefined) this.owners.delete(oldest);
    }
  }

  /** A ROUTING_APP error for the client's packet, from the hub's node, as firmware reports one. */
  private refuse(session: ClientSession, requestId: number, reason: Mesh.Routing_Error): void {
    const me = this.deps.mirror.myNodeNum ?? this.deps.bus.last('radio.status')?.myNodeNum ?? 0;
    const routing = toBinary(
      Mesh.RoutingSchema,
      create(Mesh.RoutingSchema, { variant: { case: 'errorReason', value: reason } }),
    );
    session.send({
      case: 'packet',
      value: {
        from: me,
        to: me,
        id: randomInt(1, 0xffffffff),
        rxTime: Math.floor(Date.now() / 1000),
        priority: Mesh.MeshPacket_Priority.ACK,
        payloadVariant: {
          case: 'decoded',
          value: { portnum: Portnums.PortNum.ROUTING_APP, payload: routing, requestId },
        },
      },
    });
  }

  private queueStatusFor(session: ClientSession): MessageInitShape<typeof Mesh.QueueStatusSchema> {
    const queued = this.queued.get(session) ?? 0;
    return { res: 0, free: MAX_QUEUED_PER_CLIENT - queued, maxlen: MAX_QUEUED_PER_CLIENT, meshPacketId: 0 };
  }
}
