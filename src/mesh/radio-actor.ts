import { create } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import type { RadioSendRequest, RadioStatus, RadioTap } from '../domain/radio.js';
import { Actor } from '../kernel/actor.js';
import type { HubActorDeps } from '../module.js';
import { HubState } from '../store/hub-state.js';
import { PayloadDecodeError, TransportClosedError } from './errors.js';
import { decodeHeardPacket, nodeUpdateFromNodeInfo } from './packet-decoder.js';
import type { MeshFanOut } from './packet-fanout.js';
import { RadioLink } from './radio-link.js';
import { type RadioTransport, tcpTransport } from './transport.js';

/** Where the radio is, once `RADIO` has been resolved (auto → a probed serial port or the simulator). */
export type RadioPlan =
  | { kind: 'none' }
  | { kind: 'transport'; transport: RadioTransport; simulated: boolean }
  /** The built-in simulator: its address comes from the retained `simulator.listening`. */
  | { kind: 'simulator' };

/**
 * Owns the link to the radio: turns every FromRadio into hub events (packets, readings, node
 * updates) and reports the link state on the retained `radio.status`. It is the one owner of
 * the hub's own node number: from the device's MyNodeInfo, remembered in `hub_state` so it is
 * known while the link is down. Decode failures are counted, never fatal.
 */
export class RadioActor extends Actor {
  readonly name = 'radio';
  override readonly dependsOn: readonly string[];
  private link: RadioLink | undefined;
  private current: RadioStatus;
  private connectedOnce = false;
  private hubState: HubState | undefined;
  /** Config.LoRaConfig.hop_limit from the handshake: what our own packets start with. */
  private hopLimit = 3;
  /** The mesh API's view of the radio: every FromRadio, every packet sent, and a raw send. */
  private mirror: RadioTap | undefined;

  constructor(
    private readonly deps: HubActorDeps & {
      plan: RadioPlan;
      heartbeatMs: number;
      /** Shared with the MQTT path: a packet a gateway uplinked first is announced once. */
      fanOut: MeshFanOut;
    },
  ) {
    super();
    this.dependsOn = deps.plan.kind === 'simulator' ? ['simulator'] : [];
    this.current = {
      state: 'disconnected',
      transport:
        deps.plan.kind === 'none'
          ? 'none'
          : deps.plan.kind === 'simulator'
            ? 'tcp'
            : deps.plan.transport.kind,
      simulated: deps.plan.kind === 'simulator' || (deps.plan.kind === 'transport' && deps.plan.simulated),
      // Where it is, from the start: "disconnected" before the first attempt still says where.
      ...(deps.plan.kind === 'transport' ? { address: deps.plan.transport.address } : {}),
    };
  }

  /** Taps the link (the mesh API's mirror); before the hub starts, so the mirror sees the handshake. */
  tap(mirror: RadioTap): void {
    if (this.mirror) throw new Error('the radio is already tapped');
    this.mirror = mirror;
  }

  async start(): Promise<void> {
    const { plan, log, bus } = this.deps;
    this.hubState ??= new HubState(this.deps.db);
    const remembered = this.hubState.myNodeNum();
    if (remembered !== undefined && this.current.myNodeNum === undefined)
      this.current = { ...this.current, myNodeNum: remembered };
    bus.handle(this.name, 'radio.send', (request) => this.send(request));
    this.mirror?.attachSender((packet) => this.sendPacket(packet));
    if (plan.kind === 'none') {
      log.warn('RADIO=none: running without a radio');
      this.setStatus({ ...this.current, state: 'disconnected' });
      return;
    }
    let transport: RadioTransport;
    if (plan.kind === 'simulator') {
      const sim = bus.last('simulator.listening');
      if (!sim) {
        const error = new Error('the simulator is not listening');
        this.setStatus({ ...this.current, state: 'disconnected', lastError: error.message });
        throw error;
      }
      transport = tcpTransport(sim.host, sim.port, { connectTimeoutMs: 2_000 });
    } else {
      transport = plan.transport;
    }
    const simulated = this.current.simulated;
    this.link = new RadioLink({
      transport,
      log: log.child({ component: 'radio-link' }),
      heartbeatMs: this.deps.heartbeatMs,
      simulated,
      onStatus: (status) => this.setStatus(status),
      onFromRadio: (message, receivedAt) => this.onFromRadio(message, receivedAt),
      onLogLine: (line) => log.debug({ device: line }, 'device log'),
      onFrameError: (kind) => this.frameError(kind),
      onQuietEnded: (quietSince) => this.deps.bus.emit('radio.quietEnded', { quietSince }),
    });
    await this.link.start();
  }

  async stop(): Promise<void> {
    this.mirror?.attachSender(undefined);
    const link = this.link;
    this.link = undefined;
    await link?.stop();
  }

  /** ToRadio.packet with a decoded Data; the firmware answers with QueueStatus and, for want_ack, ROUTING_APP. */
  private async send(request: RadioSendRequest): Promise<{ id: number }> {
    const link = this.link;
    if (!link || this.current.state !== 'connected') throw new TransportClosedError();
    const packet = create(Mesh.ToRadioSchema, {
      payloadVariant: {
        case: 'packet',
        value: {
          to: request.to >>> 0,
          id: request.id >>> 0,
          channel: request.channel ?? 0,
          wantAck: request.wantAck,
          hopLimit: this.hopLimit,
          payloadVariant: {
            case: 'decoded',
            value: {
              portnum: request.portnum,
              payload: request.payload,
              wantResponse: request.wantResponse ?? false,
            },
          },
        },
      },
    });
    await link.send(packet);
    if (packet.payloadVariant.case === 'packet') this.mirror?.sent(packet.payloadVariant.value);
    return { id: request.id >>> 0 };
  }

  /** A MeshPacket as a mesh API client made it (want_response, reply_id, emoji kept); paced by the caller. */
  private async sendPacket(packet: Mesh.MeshPacket): Promise<void> {
    const link = this.link;
    if (!link || this.current.state !== 'connected') throw new TransportClosedError();
    if (packet.hopLimit < 1 || packet.hopLimit > 7) packet.hopLimit = this.hopLimit;
    await link.send(create(Mesh.ToRadioSchema, { payloadVariant: { case: 'packet', value: packet } }));
    this.mirror?.sent(packet);
  }

  override describe(): Record<string, unknown> {
    return {
      link: this.current.state,
      simulated: this.current.simulated,
      ...(this.current.address ? { address: this.current.address } : {}),
    };
  }

  override ready(): boolean {
    return this.deps.plan.kind === 'none' || this.current.state === 'connected';
  }

  private setStatus(reported: RadioStatus): void {
    const wasConnected = this.current.state === 'connected';
    const status =
      reported.myNodeNum === undefined && this.current.myNodeNum !== undefined
        ? { ...reported, myNodeNum: this.current.myNodeNum }
        : reported;
    if (reported.myNodeNum !== undefined) this.hubState?.rememberMyNodeNum(reported.myNodeNum);
    this.current = status;
    const connected = status.state === 'connected';
    this.deps.metrics.radioConnected.set(connected ? 1 : 0);
    if (connected && !wasConnected) {
      if (this.connectedOnce) this.deps.metrics.radioReconnects.inc();
      this.connectedOnce = true;
      this.deps.log.info(
        { address: status.address, simulated: status.simulated, myNodeNum: status.myNodeNum },
        'radio connected',
      );
    }
    this.deps.bus.emit('radio.status', status);
  }

  /** `reason` is a bounded kind (frame, protobuf, payload): it labels a metric. */
  private frameError(reason: 'frame' | 'protobuf' | 'payload'): void {
    this.deps.metrics.meshFrameErrors.inc({ reason });
    this.deps.bus.emit('mesh.frameError', { reason });
  }

  private onFromRadio(message: Mesh.FromRadio, receivedAt: number): void {
    const { bus } = this.deps;
    this.mirror?.fromRadio(message, receivedAt);
    const variant = message.payloadVariant;
    if (variant.case === 'nodeInfo') {
      bus.emit('node.updated', nodeUpdateFromNodeInfo(variant.value));
      return;
    }
    if (variant.case === 'config' && variant.value.payloadVariant.case === 'lora') {
      const hops = variant.value.payloadVariant.value.hopLimit;
      if (hops >= 1 && hops <= 7) this.hopLimit = hops;
      return;
    }
    if (variant.case !== 'packet') return;
    const packet = variant.value;
    try {
      const heard = decodeHeardPacket(packet, receivedAt, 'radio');
      if (!heard || !this.deps.fanOut.deliver(heard, 'radio', receivedAt)) return;
      if (heard.readings.length) {
        // Nobody waits for the radio's readings: they ride the writer's batching delay.
        bus
          .ask('readings.commit', { readings: heard.readings, source: 'radio' }, { timeoutMs: 30_000 })
          .catch((err: unknown) => this.deps.log.warn({ err }, 'readings from the radio were not stored'));
      }
    } catch (error) {
      if (!(error instanceof PayloadDecodeError)) throw error;
      this.frameError('payload');
      this.deps.log.debug({ err: error, from: packet.from }, 'undecodable payload');
    }
  }
}
