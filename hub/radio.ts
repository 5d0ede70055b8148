import { create } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import type { HubBus, RadioSendRequest, RadioStatus } from '../src/events.js';
import { Actor } from '../src/kernel/actor.js';
import type { Logger } from '../src/log.js';
import { PayloadDecodeError, TransportClosedError } from '../src/mesh/errors.js';
import {
  decodeMeshPacket,
  decodeRoutingPacket,
  decodeTextPacket,
  nodeUpdateFromNodeInfo,
} from '../src/mesh/packet-decoder.js';
import type { PacketDedupe } from '../src/mesh/packet-dedupe.js';
import { RadioLink } from '../src/mesh/radio-link.js';
import type { RadioTransport } from '../src/mesh/transport.js';
import type { HubMetrics } from '../src/metrics.js';

/** Where the radio is, once `RADIO` has been resolved (auto → a probed serial port or the simulator). */
export type RadioPlan =
  | { kind: 'none' }
  | { kind: 'transport'; transport: RadioTransport; simulated: boolean }
  | { kind: 'simulator'; transport: () => RadioTransport };

/**
 * Owns the link to the radio: turns every FromRadio into hub events (packets, readings, node
 * updates) and reports the link state. Decode failures are counted, never fatal.
 */
export class RadioActor extends Actor {
  readonly name = 'radio';
  override readonly dependsOn: readonly string[];
  private link: RadioLink | undefined;
  private current: RadioStatus;
  private connectedOnce = false;
  /** Config.LoRaConfig.hop_limit from the handshake: what our own packets start with. */
  private hopLimit = 3;

  constructor(
    private readonly deps: {
      bus: HubBus;
      log: Logger;
      metrics: HubMetrics;
      plan: RadioPlan;
      heartbeatMs: number;
      /** Shared with the MQTT path: a packet a gateway uplinked first is not stored twice. */
      dedupe?: PacketDedupe;
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
    };
  }

  get status(): RadioStatus {
    return this.current;
  }

  async start(): Promise<void> {
    const { plan, log } = this.deps;
    this.deps.bus.handle(this.name, 'radio.send', (request) => this.send(request));
    if (plan.kind === 'none') {
      log.warn('RADIO=none: running without a radio');
      this.setStatus({ ...this.current, state: 'disconnected' });
      return;
    }
    const transport = plan.kind === 'simulator' ? plan.transport() : plan.transport;
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
    });
    await this.link.start();
  }

  async stop(): Promise<void> {
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
          payloadVariant: { case: 'decoded', value: { portnum: request.portnum, payload: request.payload } },
        },
      },
    });
    await link.send(packet);
    return { id: request.id >>> 0 };
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

  private setStatus(status: RadioStatus): void {
    const wasConnected = this.current.state === 'connected';
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
    if (packet.payloadVariant.case === 'decoded') {
      const portnum = packet.payloadVariant.value.portnum;
      this.deps.metrics.meshPackets.inc({ port: Portnums.PortNum[portnum] ?? String(portnum), via: 'radio' });
      bus.emit('mesh.packet', {
        portnum,
        from: packet.from,
        to: packet.to,
        id: packet.id,
        receivedAt,
        via: 'radio',
      });
    }
    try {
      const { readings, nodes } = decodeMeshPacket(packet, receivedAt);
      // Remember only packets that carry something: an undecoded copy must not hide a decodable one.
      const carries = nodes.length > 0 || readings.length > 0;
      if (carries && (this.deps.dedupe?.firstSighting(packet.from, packet.id) ?? true)) {
        for (const node of nodes) bus.emit('node.updated', node);
        if (readings.length) bus.emit('reading.received', { readings, source: 'radio' });
      }
      const text = decodeTextPacket(packet, receivedAt);
      if (text) bus.emit('mesh.text', text);
      const routing = decodeRoutingPacket(packet, receivedAt);
      if (routing) bus.emit('mesh.routing', routing);
    } catch (error) {
      if (!(error instanceof PayloadDecodeError)) throw error;
      this.frameError('payload');
      this.deps.log.debug({ err: error, from: packet.from }, 'undecodable payload');
    }
  }
}
