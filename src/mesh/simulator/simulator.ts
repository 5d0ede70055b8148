/**
 * A virtual Meshtastic device on TCP (docs/architecture.md "Decisions": Radio). It speaks the real stream
 * protocol with real protobufs, so the hub's radio link, the official apps in TCP mode and the
 * Python library all connect to it as to a firmware's API on port 4403. Several clients may be
 * connected at once; each gets its own session (handshake, history, live traffic).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../../log.js';
import { SimClientSession } from './client-session.js';
import { messagingRoles } from './messaging-responder.js';
import { createSimNetwork, type SimNetwork } from './nodes.js';
import { comeAndGo, type PresenceSchedule } from './presence.js';
import { SimRenumbering } from './renumber.js';
import { type PacketResponder, silentResponder } from './responder.js';

export interface MeshSimulatorOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  nodeCount: number;
  center: { latitude: number; longitude: number };
  seed: number;
  /** Between environment telemetry packets of each node (jittered ±10 %). */
  telemetryIntervalMs: number;
  /** How much history to replay to each new client; 0 for none. */
  backfillMs: number;
  log: Logger;
  now?: () => number;
  /** Answers packets that clients send; the default never answers. */
  responder?: PacketResponder;
  /**
   * Which nodes come and go when (presence.ts). Default: `comeAndGo`, seeded and anchored at
   * start(), every node there for the first 10 minutes at least.
   */
  presence?: PresenceSchedule | ((network: SimNetwork, startedAt: number) => PresenceSchedule);
  /** With the default presence: every wanderer's stay and absence lasts this many minutes (SIM_AWAY_MINUTES). */
  awayMinutes?: number;
  /** This long after the first client connects, one node (the first in range) takes the number firmware 2.8 derives from its key (renumber.ts; SIM_RENUMBER_AFTER_MINUTES). */
  renumberAfterMs?: number;
  /** Every node reboots this often, each at its own phase (SIM_REBOOT_MINUTES); default about nine days. */
  rebootMinutes?: number;
}

export interface SimulatorAddress {
  host: string;
  port: number;
}

export class MeshSimulator {
  private server: Server | undefined;
  private bound: SimulatorAddress | undefined;
  private simNetwork: SimNetwork | undefined;
  private readonly sessions = new Set<SimClientSession>();
  private sessionCount = 0;
  private renumber: SimRenumbering | undefined;

  constructor(private readonly options: MeshSimulatorOptions) {}

  get address(): SimulatorAddress | undefined {
    return this.bound;
  }

  /** The simulated mesh (available once started). */
  get network(): SimNetwork | undefined {
    return this.simNetwork;
  }

  /** The node that is renumbered, once started with `renumberAfterMs`. */
  get renumbering(): SimRenumbering | undefined {
    return this.renumber;
  }

  get clientCount(): number {
    return this.sessions.size;
  }

  async start(): Promise<SimulatorAddress> {
    if (this.bound) return this.bound;
    const { host, port, seed, nodeCount, center } = this.options;
    const network = createSimNetwork({ seed, nodeCount, center });
    const startedAt = (this.options.now ?? Date.now)();
    const presence = this.options.presence;
    const outOfRange = messagingRoles(network).outOfRange;
    this.simNetwork = {
      ...network,
      presence:
        presence === undefined
          ? comeAndGo(network, startedAt, outOfRange ? [outOfRange.num] : [], this.options.awayMinutes)
          : typeof presence === 'function'
            ? presence(network, startedAt)
            : presence,
      ...(this.options.rebootMinutes ? { rebootMs: this.options.rebootMinutes * 60_000 } : {}),
    };
    // The node that upgrades is one that answers texts (not the one always out of range).
    const first = network.nodes.find((n) => n.num !== outOfRange?.num);
    const after = this.options.renumberAfterMs;
    this.renumber = first && after !== undefined ? new SimRenumbering(first.num, after) : undefined;
    const server = createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (error) => this.options.log.error({ err: error }, 'simulator server error'));
    this.server = server;
    const address = server.address();
    this.bound = { host, port: typeof address === 'object' && address ? address.port : port };
    return this.bound;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.bound = undefined;
    for (const session of [...this.sessions]) session.close();
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    const network = this.simNetwork;
    if (!network || !this.server) {
      socket.destroy();
      return;
    }
    this.renumber?.arm((this.options.now ?? Date.now)());
    const session = new SimClientSession(
      socket,
      {
        network,
        telemetryIntervalMs: this.options.telemetryIntervalMs,
        backfillMs: this.options.backfillMs,
        log: this.options.log,
        now: this.options.now ?? Date.now,
        responder:
          this.renumber?.wrap(this.options.responder ?? silentResponder) ??
          this.options.responder ??
          silentResponder,
        sessionNumber: ++this.sessionCount,
        ...(this.renumber ? { renumbering: this.renumber } : {}),
      },
      (s) => this.sessions.delete(s),
    );
    this.sessions.add(session);
    this.options.log.debug({ client: session.remote }, 'sim client connected');
    session.start();
  }
}
