/**
 * Traceroutes and neighbour links (README "Traceroute and neighbours").
 *
 * - The hub's own traceroute: one request at a time through the messaging gateway's airtime-paced
 *   queue (`messaging.sendPaced`), then `radio.send` with want_response; never more often than the
 *   firmware lets a client (one per 30 s: TRACEROUTE_INTERVAL_MS), else the caller gets 429. The
 *   reply (TRACEROUTE_APP, request_id = our packet id) answers it; a ROUTING_APP error for it
 *   ends it (RATE_LIMIT_EXCEEDED: `refused`); TRACEROUTE_TIMEOUT without either: `no_answer`.
 * - Other nodes' traceroute replies heard on `mesh.heard` (first sightings only, so radio and
 *   MQTT together store one) are kept with source `heard`.
 * - Every hop of an answered traceroute and every NEIGHBORINFO_APP neighbour is a link: stored
 *   as the latest per (from, to, source) and announced as `mesh.link`.
 */
import { randomInt } from 'node:crypto';
import { Portnums } from '@meshtastic/protobufs';
import type { HubBus } from '../domain/events.js';
import type { HeardPacket, HeardVia, MeshLink } from '../domain/mesh.js';
import { nodeIdFromNum, nodeNumFromId } from '../domain/node.js';
import { ProblemError } from '../http/problem.js';
import { Actor } from '../kernel/actor.js';
import { retryAfterSeconds } from '../kernel/rate-limit.js';
import type { Logger } from '../log.js';
import '../messaging/events.js';
import { messageId } from '../messaging/message-id.js';
import type { ModuleMetrics } from '../module.js';
import type { Database } from '../store/database.js';
import {
  decodeNeighborInfo,
  decodeTracerouteReply,
  type TracerouteAnswer,
  tracerouteLinks,
} from './mesh-decode.js';
import type { TopologyFeed } from './mqtt-feed.js';
import type { TopologySettings } from './settings.js';
import { TopologyRepository, type Traceroute } from './topology-repository.js';

/** The firmware answers a client's second traceroute within this with RATE_LIMIT_EXCEEDED. */
export const TRACEROUTE_INTERVAL_MS = 30_000;
/** Routing_Error.RATE_LIMIT_EXCEEDED (mesh.proto). */
const RATE_LIMIT_EXCEEDED = 38;
/** The paced queue may hold a request a while; the timeout ends it anyway. */
const PACED_ASK_MS = 10 * 60_000;
/** The radio answers a send at once (or rejects it while the link is down). */
const SEND_ASK_MS = 10_000;
/** Old traceroutes and links go hourly: a small delete each time rather than a big one nightly. */
const PRUNE_EVERY_MS = 3_600_000;

/** An empty RouteDiscovery: what a traceroute request carries. */
const EMPTY_PAYLOAD = new Uint8Array(0);

/** What the actor is built with (the module hands it its context's parts). */
export interface TopologyDeps {
  settings: TopologySettings;
  bus: HubBus;
  db: Database;
  log: Logger;
  metrics: Pick<ModuleMetrics, 'counter'>;
  /** Told each ended or heard traceroute and each link change (MQTT: mqtt-feed.ts). */
  feed?: TopologyFeed;
  now?: () => number;
}

export class TopologyActor extends Actor {
  readonly name: string = 'topology';
  override readonly dependsOn = ['store'];
  private repo: TopologyRepository | undefined;
  private lastRequestAt: number | undefined;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private pruneTimer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly traceroutes;
  private readonly links;

  constructor(private readonly deps: TopologyDeps) {
    super();
    this.now = deps.now ?? Date.now;
    this.traceroutes = deps.metrics.counter({
      name: 'traceroutes_total',
      help: 'Traceroutes stored, by source (hub, heard) and outcome (answered, no_answer, refused)',
      labelNames: ['source', 'status'] as const,
    });
    this.links = deps.metrics.counter({
      name: 'links_heard_total',
      help: 'Links between nodes heard, by source (neighborinfo, traceroute)',
      labelNames: ['source'] as const,
    });
  }

  get repository(): TopologyRepository {
    if (!this.repo) throw new ProblemError(503, 'the topology store is not running yet');
    return this.repo;
  }

  async start(): Promise<void> {
    const repo = new TopologyRepository(this.deps.db);
    this.repo = repo;
    this.lastRequestAt = repo.lastHubRequest();
    // Pending ones from before a restart: their timers are re-armed (or they end now).
    for (const trace of repo.pending()) this.arm(trace);
    this.prune();
    this.pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS);
    this.pruneTimer.unref();
    const { bus } = this.deps;
    bus.on(this.name, 'mesh.heard', ({ packet, via, duplicate }) => {
      // The radio's copy answers the hub's own traceroute even when MQTT brought it first.
      if (!duplicate || via === 'radio') this.guard(() => this.onHeard(packet, via, duplicate));
    });
    bus.on(this.name, 'node.renumbered', ({ oldNodeId, newNodeId }) =>
      this.guard(() => this.renumber(oldNodeId, newNodeId)),
    );
  }

  async stop(): Promise<void> {
    this.deps.bus.removeOwner(this.name);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.repo = undefined;
  }

  /**
   * Sends a traceroute to `nodeId` (checked by the route: a node id, known, not the hub's own).
   * Throws the 429 (within 30 s of the last) or 503 (no radio) problems; stores nothing then.
   */
  request(nodeId: string, channel: number): Traceroute {
    const repo = this.repository;
    const now = this.now();
    if (this.lastRequestAt !== undefined && now - this.lastRequestAt < TRACEROUTE_INTERVAL_MS) {
      const wait = retryAfterSeconds(this.lastRequestAt + TRACEROUTE_INTERVAL_MS - now);
      throw new ProblemError(
        429,
        `the radio sends one traceroute per 30 s (its firmware's limit); retry in ${wait} s`,
        { headers: { 'retry-after': String(wait) } },
      );
    }
    const status = this.deps.bus.last('radio.status');
    if (status?.state !== 'connected' || status.myNodeNum === undefined) {
      throw new ProblemError(503, 'the radio is not connected; try again once it is', {
        headers: { 'retry-after': '30' },
      });
    }
    const to = nodeNumFromId(nodeId)!;
    const packetId = randomPacketId();
    const trace: Traceroute = {
      id: messageId(now),
      nodeId,
      originId: nodeIdFromNum(status.myNodeNum),
      source: 'hub',
      status: 'pending',
      packetId,
      requestedAt: now,
      deadline: now + this.deps.settings.TRACEROUTE_TIMEOUT,
      route: [],
      routeBack: [],
    };
    repo.insert(trace);
    this.lastRequestAt = now;
    this.arm(trace);
    void this.send(trace, to, channel);
    return trace;
  }

  private async send(trace: Traceroute, to: number, channel: number): Promise<void> {
    const { bus } = this.deps;
    try {
      await bus.ask(
        'messaging.sendPaced',
        {
          payloadBytes: EMPTY_PAYLOAD.length,
          transmit: async () => {
            await bus.ask(
              'radio.send',
              {
                to,
                id: trace.packetId,
                portnum: Portnums.PortNum.TRACEROUTE_APP,
                payload: EMPTY_PAYLOAD,
                wantAck: false,
                wantResponse: true,
                channel,
              },
              { timeoutMs: SEND_ASK_MS },
            );
          },
        },
        { timeoutMs: PACED_ASK_MS },
      );
      this.deps.log.debug({ traceroute: trace.id, to: trace.nodeId }, 'traceroute sent');
    } catch (error) {
      this.deps.log.info({ traceroute: trace.id, reason: (error as Error).message }, 'traceroute not sent');
      this.end(trace.id, 'hub', {
        status: 'no_answer',
        at: this.now(),
        error: 'the radio did not take the request',
      });
    }
  }

  private arm(trace: Traceroute): void {
    const wait = Math.max(0, (trace.deadline ?? trace.requestedAt) - this.now());
    const timer = setTimeout(() => {
      this.timers.delete(trace.id);
      this.guard(() =>
        this.end(trace.id, 'hub', {
          status: 'no_answer',
          at: this.now(),
          error: `no answer within ${Math.round(this.deps.settings.TRACEROUTE_TIMEOUT / 1000)} s`,
        }),
      );
    }, wait);
    timer.unref();
    this.timers.set(trace.id, timer);
  }

  private end(
    id: string,
    source: 'hub' | 'heard',
    outcome: Parameters<TopologyRepository['finish']>[1],
  ): boolean {
    const ended = this.repo?.finish(id, outcome) ?? false;
    if (ended) {
      clearTimeout(this.timers.get(id));
      this.timers.delete(id);
      this.traceroutes.inc({ source, status: outcome.status });
      const trace = this.repo?.get(id);
      if (trace) this.deps.feed?.traceroute(trace);
    }
    return ended;
  }

  /**
   * The hub's own traceroute is answered (or refused) only by what its own radio hears, as ACKs
   * are: a copy over MQTT could come from anyone. Other traceroutes and neighbour reports count
   * from either path, once (first sightings only).
   */
  private onHeard(packet: HeardPacket, via: HeardVia, duplicate: boolean): void {
    const repo = this.repo;
    if (!repo) return;
    switch (packet.portnum) {
      case Portnums.PortNum.TRACEROUTE_APP: {
        // A request (no request_id) is on its way; only a reply carries the route.
        if (packet.meta.requestId === 0) return;
        const ours = repo.hubByPacket(packet.meta.requestId);
        if (ours && via === 'mqtt') return;
        if (duplicate && !ours) return;
        const answer = decodeTracerouteReply(packet.from, packet.to, packet.payload);
        if (!answer) return;
        if (ours) {
          const answered = this.end(ours.id, 'hub', {
            status: 'answered',
            at: packet.receivedAt,
            route: answer.route,
            routeBack: answer.routeBack,
          });
          if (!answered) return;
        } else if (!this.storeHeard(packet, answer)) return;
        for (const link of tracerouteLinks(answer, packet.receivedAt)) this.link(link);
        return;
      }
      case Portnums.PortNum.NEIGHBORINFO_APP: {
        if (duplicate) return;
        for (const link of decodeNeighborInfo(packet.from, packet.payload, packet.receivedAt) ?? [])
          this.link(link);
        return;
      }
      case Portnums.PortNum.ROUTING_APP: {
        const routing = packet.routing;
        if (via !== 'radio' || !routing || routing.errorReason === 0 || routing.requestId === 0) return;
        const ours = repo.hubByPacket(routing.requestId);
        if (ours?.status !== 'pending') return;
        const refused = routing.errorReason === RATE_LIMIT_EXCEEDED;
        this.end(ours.id, 'hub', {
          status: refused ? 'refused' : 'no_answer',
          at: packet.receivedAt,
          error: refused ? 'the radio refused it: RATE_LIMIT_EXCEEDED' : `routing error ${routing.errorName}`,
        });
        return;
      }
    }
  }

  /** Another node's traceroute, once per reply packet (from, id). */
  private storeHeard(packet: HeardPacket, answer: TracerouteAnswer): boolean {
    const trace: Traceroute = {
      id: messageId(this.now()),
      nodeId: answer.target,
      originId: answer.origin,
      source: 'heard',
      status: 'answered',
      packetId: packet.meta.requestId >>> 0,
      requestedAt: packet.receivedAt,
      answeredAt: packet.receivedAt,
      route: answer.route,
      routeBack: answer.routeBack,
    };
    const stored = this.repo!.insert(trace, `${nodeIdFromNum(packet.from)}:${packet.id >>> 0}`);
    if (stored) {
      this.traceroutes.inc({ source: 'heard', status: 'answered' });
      this.deps.feed?.traceroute(trace);
    }
    return stored;
  }

  private link(link: MeshLink): void {
    const changed = this.repo?.upsertLink(link) ?? false;
    this.links.inc({ source: link.source });
    this.deps.bus.emit('mesh.link', link);
    if (changed) this.deps.feed?.link(link);
  }

  /** A renumbered node's traceroutes and links follow it; its links' old topics are cleared. */
  private renumber(oldNodeId: string, newNodeId: string): void {
    const repo = this.repo;
    if (!repo) return;
    const before = repo.links({ nodeId: oldNodeId });
    repo.renumber(oldNodeId, newNodeId);
    const { feed } = this.deps;
    if (!feed || before.length === 0) return;
    for (const link of before) feed.linkGone(link);
    for (const link of repo.links({ nodeId: newNodeId })) feed.link(link);
  }

  private prune(): void {
    this.guard(() => {
      const cutoff = this.now() - this.deps.settings.TOPOLOGY_RETENTION_DAYS * 86_400_000;
      const removed = this.repo?.prune(cutoff);
      if (!removed) return;
      for (const link of removed.links) this.deps.feed?.linkGone(link);
      if (removed.traceroutes + removed.links.length > 0)
        this.deps.log.debug(
          { traceroutes: removed.traceroutes, links: removed.links.length },
          'old traceroutes and links deleted',
        );
    });
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (error) {
      this.deps.log.error({ err: error }, 'topology update failed');
    }
  }
}

function randomPacketId(): number {
  return randomInt(1, 0xffffffff);
}
