import { type Mesh, Portnums } from '@meshtastic/protobufs';
import type { HubBus, RadioStatus } from '../src/events.js';
import { Actor } from '../src/kernel/actor.js';
import type { Logger } from '../src/log.js';
import { PayloadDecodeError } from '../src/mesh/errors.js';
import { decodeMeshPacket, nodeUpdateFromNodeInfo } from '../src/mesh/packet-decoder.js';
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

  constructor(
    private readonly deps: {
      bus: HubBus;
      log: Logger;
      metrics: HubMetrics;
      plan: RadioPlan;
      heartbeatMs: number;
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
      onFrameError: (reason) => this.frameError(reason),
    });
    await this.link.start();
  }

  async stop(): Promise<void> {
    const link = this.link;
    this.link = undefined;
    await link?.stop();
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

  private frameError(reason: string): void {
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
      for (const node of nodes) bus.emit('node.updated', node);
      if (readings.length) bus.emit('reading.received', { readings, source: 'radio' });
    } catch (error) {
      if (!(error instanceof PayloadDecodeError)) throw error;
      this.frameError('payload');
      this.deps.log.debug({ err: error, from: packet.from }, 'undecodable payload');
    }
  }
}
