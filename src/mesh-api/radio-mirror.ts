/**
 * What the hub's radio told the hub, kept for the mesh API's clients: the device image from the
 * `want_config_id` handshake (my_info, device UI config, metadata, channels, config, module
 * config, node infos), the live FromRadio stream, and the packets the hub itself sends.
 *
 * Made once by the composition root (hub/main.ts) and shared by two actors that never see each
 * other: the radio actor writes it (`fromRadio`, `sent`, `attachSender`), the mesh API server
 * reads it. It outlives restarts of either, so a restarted server still has the image.
 */
import { clone } from '@bufbuild/protobuf';
import { type Config, Mesh, type ModuleConfig } from '@meshtastic/protobufs';
import { TransportClosedError } from '../mesh/errors.js';
import type { RadioSecrets } from './secrets.js';

export type MirrorEvent =
  /** A FromRadio after the handshake (packets, queue status, notifications, a reboot). */
  | { kind: 'fromRadio'; message: Mesh.FromRadio; receivedAt: number }
  /**
   * A MeshPacket the hub handed to its radio: `client`, a mesh API client's (through
   * `transmit`); `hub`, the hub's own (subscribers' texts).
   */
  | { kind: 'sent'; packet: Mesh.MeshPacket; at: number; origin: 'client' | 'hub' };

export type MirrorListener = (event: MirrorEvent) => void;

/** What the handshake stream carries, in firmware order (PhoneAPI.cpp getFromRadio states). */
const HANDSHAKE_CASES = new Set<Mesh.FromRadio['payloadVariant']['case']>([
  'myInfo',
  'deviceuiConfig',
  'nodeInfo',
  'metadata',
  'channel',
  'config',
  'moduleConfig',
  'fileInfo',
  'configCompleteId',
]);

export class RadioMirror implements RadioSecrets {
  myInfo: Mesh.MyNodeInfo | undefined;
  deviceUi: Mesh.FromRadio['payloadVariant'] | undefined;
  metadata: Mesh.DeviceMetadata | undefined;
  /** By Channel.index. */
  readonly channels = new Map<number, Mesh.FromRadio['payloadVariant'] & { case: 'channel' }>();
  /** By Config payload case (device, position, lora, …), in arrival order. */
  readonly configs = new Map<string, Mesh.FromRadio['payloadVariant'] & { case: 'config' }>();
  readonly moduleConfigs = new Map<string, Mesh.FromRadio['payloadVariant'] & { case: 'moduleConfig' }>();
  /** The radio's node database as it sent it, by node number. */
  readonly nodeInfos = new Map<number, Mesh.NodeInfo>();
  private readonly listeners = new Set<MirrorListener>();
  private sender: ((packet: Mesh.MeshPacket) => Promise<void>) | undefined;
  /** Packets handed over by `transmit` (mesh API clients'): their `sent` is a client's. */
  private readonly fromClients = new WeakSet<Mesh.MeshPacket>();
  private readonly onListenerError: (error: unknown) => void;

  constructor(options: { onListenerError?: (error: unknown) => void } = {}) {
    this.onListenerError = options.onListenerError ?? (() => {});
  }

  get myNodeNum(): number | undefined {
    return this.myInfo?.myNodeNum;
  }

  /** Every FromRadio of the hub's radio link (radio actor). */
  fromRadio(message: Mesh.FromRadio, receivedAt: number): void {
    const variant = message.payloadVariant;
    switch (variant.case) {
      case 'myInfo':
        this.myInfo = variant.value;
        break;
      case 'deviceuiConfig':
        this.deviceUi = variant;
        break;
      case 'metadata':
        this.metadata = variant.value;
        break;
      case 'channel':
        this.channels.set(variant.value.index, variant);
        break;
      case 'config':
        if (variant.value.payloadVariant.case) this.configs.set(variant.value.payloadVariant.case, variant);
        break;
      case 'moduleConfig':
        if (variant.value.payloadVariant.case)
          this.moduleConfigs.set(variant.value.payloadVariant.case, variant);
        break;
      case 'nodeInfo':
        this.nodeInfos.set(variant.value.num, variant.value);
        break;
    }
    if (HANDSHAKE_CASES.has(variant.case) || variant.case === undefined) return;
    this.emit({ kind: 'fromRadio', message, receivedAt });
  }

  /** A packet the radio actor handed to the radio. */
  sent(packet: Mesh.MeshPacket, at = Date.now()): void {
    if (this.listeners.size === 0) return;
    const origin = this.fromClients.has(packet) ? 'client' : 'hub';
    const echo = clone(Mesh.MeshPacketSchema, packet);
    if (echo.from === 0 && this.myNodeNum !== undefined) echo.from = this.myNodeNum;
    if (echo.rxTime === 0) echo.rxTime = Math.floor(at / 1000);
    this.emit({ kind: 'sent', packet: echo, at, origin });
  }

  /** The radio actor's raw send while it runs; `undefined` detaches it. */
  attachSender(sender: ((packet: Mesh.MeshPacket) => Promise<void>) | undefined): void {
    this.sender = sender;
  }

  /** Hands a packet to the radio now; callers pace it first (MessageGatewayActor.sendPaced). */
  async transmit(packet: Mesh.MeshPacket): Promise<void> {
    const sender = this.sender;
    if (!sender) throw new TransportClosedError();
    this.fromClients.add(packet);
    await sender(packet);
  }

  /** The radio's own config section (for RadioSecrets: secrets a client left blank). */
  config(section: 'security' | 'network'): Config.Config['payloadVariant'] | undefined {
    return this.configs.get(section)?.value.payloadVariant;
  }

  moduleConfig(section: 'mqtt'): ModuleConfig.ModuleConfig['payloadVariant'] | undefined {
    return this.moduleConfigs.get(section)?.value.payloadVariant;
  }

  subscribe(listener: MirrorListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: MirrorEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }
}
