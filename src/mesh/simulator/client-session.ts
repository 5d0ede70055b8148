/**
 * One TCP client of the simulator, treated as firmware treats an API client: a fresh framer,
 * the want_config handshake, then packets — first the history (backfill) on a fixed 5-minute
 * grid, then live traffic on per-node schedules. Every timer belongs to the session and dies
 * with it.
 */
import type { Socket } from 'node:net';
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import { StreamClosedError, waitForDrain } from '../../kernel/timing.js';
import type { Logger } from '../../log.js';
import { encodeFrame, StreamFramer, toRadioEvents } from '../framing.js';
import { localStatsPacket } from './device-health.js';
import { isPresent, type SimNetwork, type SimNode } from './nodes.js';
import {
  type FromRadioInit,
  handshakeMessages,
  nodeInfoPacket,
  positionPacket,
  type TelemetryKind,
  telemetryPacket,
} from './packets.js';
import { hash32, seededRandom } from './random.js';
import type { SimRenumbering } from './renumber.js';
import type { PacketResponder, SimClient } from './responder.js';
import { rssiAt, snrAt } from './weather-model.js';

/** History is replayed on this grid, aligned to the epoch, so replays repeat exactly. */
export const BACKFILL_GRID_MS = 5 * 60_000;
const MINUTE_MS = 60_000;
const POSITION_INTERVAL_MS = 15 * MINUTE_MS;
const DEVICE_METRICS_INTERVAL_MS = 10 * MINUTE_MS;
// Firmware default Config.DeviceConfig.node_info_broadcast_secs.
const NODE_INFO_INTERVAL_MS = 3 * 60 * MINUTE_MS;
const LOG_LINE_INTERVAL_MS = 30_000;
/** How often a session looks for nodes coming back in range (presence.ts). */
const PRESENCE_CHECK_MS = 5_000;
/** Live packets are dropped (as a radio drops for a slow phone) while this much is unsent. */
const LIVE_BACKLOG_LIMIT_BYTES = 256 * 1024;
/** A client that reads nothing for this long during the backfill is dropped. */
const DRAIN_TIMEOUT_MS = 60_000;

export interface SimSessionOptions {
  network: SimNetwork;
  telemetryIntervalMs: number;
  backfillMs: number;
  log: Logger;
  now: () => number;
  responder: PacketResponder;
  /** Distinguishes the schedule jitter of concurrent sessions. */
  sessionNumber: number;
  /** A node that takes its firmware 2.8 number at some point (renumber.ts). */
  renumbering?: SimRenumbering;
}

/** Grid times in (now − backfill, now], ascending. */
export function backfillTimes(nowMs: number, backfillMs: number): number[] {
  const times: number[] = [];
  const last = Math.floor(nowMs / BACKFILL_GRID_MS) * BACKFILL_GRID_MS;
  for (let t = last; t > nowMs - backfillMs; t -= BACKFILL_GRID_MS) times.push(t);
  return times.reverse();
}

const BACKFILL_KINDS: readonly TelemetryKind[] = ['environment', 'airQuality', 'device'];

export class SimClientSession implements SimClient {
  private readonly framer = new StreamFramer();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly random: () => number;
  private readonly startedAt: number;
  private fromRadioId = 0;
  private streaming = false;
  private closed = false;
  private drained: Promise<void> | undefined;
  private logLineCount = 0;
  droppedLive = 0;

  constructor(
    private readonly socket: Socket,
    private readonly options: SimSessionOptions,
    private readonly onClosed: (session: SimClientSession) => void,
  ) {
    this.random = seededRandom(hash32(options.network.seed, options.sessionNumber));
    this.startedAt = options.now();
  }

  get network(): SimNetwork {
    return this.options.network;
  }

  get log(): Logger {
    return this.options.log;
  }

  get remote(): string {
    return `${this.socket.remoteAddress}:${this.socket.remotePort}`;
  }

  now(): number {
    return this.options.now();
  }

  start(): void {
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error) =>
      this.log.debug({ err: error, client: this.remote }, 'sim client error'),
    );
    this.socket.on('close', () => this.dispose());
    this.writeLogLine('PhoneAPI', 'Start API client session');
  }

  /** Ends the session: timers cleared, socket destroyed. */
  close(): void {
    this.dispose();
    this.socket.destroy();
  }

  deliver(packet: Mesh.MeshPacket): void {
    if (this.closed) return;
    const now = this.now();
    if (packet.rxTime === 0) packet.rxTime = Math.floor(now / 1000);
    if (packet.id === 0)
      packet.id = hash32(this.network.seed, packet.from, Math.floor(this.random() * 2 ** 32)) || 1;
    const node = this.network.nodes.find((n) => n.num === packet.from);
    if (node && packet.rxSnr === 0) {
      packet.rxSnr = snrAt(this.network.seed, node, now);
      packet.rxRssi = rssiAt(packet.rxSnr);
    }
    this.sendLive({ payloadVariant: { case: 'packet', value: packet } });
  }

  after(delayMs: number, fn: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.closed) return;
      try {
        fn();
      } catch (error) {
        this.log.warn({ err: error }, 'sim session task failed');
      }
    }, delayMs);
    this.timers.add(timer);
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.onClosed(this);
  }

  private onData(chunk: Buffer): void {
    for (const event of toRadioEvents(this.framer.push(chunk))) {
      if (this.closed) return;
      if (event.kind === 'message') this.onToRadio(event.message);
      else if (event.kind === 'corrupt')
        this.log.debug({ reason: event.reason }, 'corrupt frame from sim client');
      else this.log.debug({ client: this.remote }, 'malformed ToRadio ignored');
    }
  }

  private onToRadio(message: Mesh.ToRadio): void {
    const variant = message.payloadVariant;
    switch (variant.case) {
      case 'wantConfigId':
        this.sendHandshake(variant.value);
        if (!this.streaming) {
          this.streaming = true;
          void this.stream();
        }
        break;
      case 'packet':
        void this.onClientPacket(variant.value);
        break;
      case 'disconnect':
        this.close();
        break;
      default:
        // heartbeat and the rest: firmware only notes the contact.
        break;
    }
  }

  private sendHandshake(configId: number): void {
    this.log.debug({ client: this.remote, configId }, 'sim client wants config');
    for (const message of handshakeMessages(this.network, configId, this.now())) this.send(message);
    this.writeLogLine('PhoneAPI', `Config complete, nonce=${configId}`);
  }

  private async onClientPacket(packet: Mesh.MeshPacket): Promise<void> {
    // As firmware does for packets from its API client: stamp our node and an id, report the queue.
    if (packet.from === 0) packet.from = this.network.radio.num;
    if (packet.id === 0)
      packet.id = hash32(this.network.seed, this.now(), Math.floor(this.random() * 2 ** 32)) || 1;
    this.send({
      payloadVariant: {
        case: 'queueStatus',
        value: { res: 0, free: 15, maxlen: 16, meshPacketId: packet.id },
      },
    });
    try {
      await this.options.responder.onPacket(packet, this);
    } catch (error) {
      this.log.warn({ err: error, client: this.remote }, 'sim packet responder failed');
    }
  }

  private async stream(): Promise<void> {
    try {
      const sent = await this.backfill();
      if (this.closed) return;
      this.log.debug({ client: this.remote, packets: sent }, 'sim backfill sent');
      this.startLive();
    } catch (error) {
      if (!this.closed) this.log.warn({ err: error, client: this.remote }, 'sim stream failed');
      this.close();
    }
  }

  private async backfill(): Promise<number> {
    const { backfillMs } = this.options;
    if (backfillMs <= 0) return 0;
    let sent = 0;
    for (const time of backfillTimes(this.now(), backfillMs)) {
      for (const node of this.network.nodes) {
        for (const kind of BACKFILL_KINDS) {
          const packet = telemetryPacket(this.network, node, kind, time);
          if (!packet) continue;
          if (this.closed) return sent;
          if (!this.send({ payloadVariant: { case: 'packet', value: packet } })) await this.drain();
          sent++;
        }
      }
    }
    return sent;
  }

  private startLive(): void {
    const interval = this.options.telemetryIntervalMs;
    // Device metrics every 10 min at the default pace, faster when SIM_TELEMETRY_SECONDS is short
    // (so a demo or a test sees batteries move and nodes reboot within minutes).
    const deviceEvery = Math.min(DEVICE_METRICS_INTERVAL_MS, 2 * interval);
    const r = this.random;
    for (const node of this.network.nodes) {
      // First environment telemetry within ~2 s, so a fresh hub shows data at once.
      if (node.profile.environment.length > 0) {
        this.every(200 + r() * 1800, interval, () => this.sendTelemetry(node, 'environment'));
      }
      if (node.profile.airQuality)
        this.every(400 + r() * 1600, 2 * interval, () => this.sendTelemetry(node, 'airQuality'));
      this.every(300 + r() * 3000, NODE_INFO_INTERVAL_MS, () => {
        if (!isPresent(this.network, node, this.now())) return;
        this.sendLive({
          payloadVariant: { case: 'packet', value: nodeInfoPacket(this.network, node, this.now()) },
        });
      });
      this.every(r() * deviceEvery, deviceEvery, () => this.sendTelemetry(node, 'device'));
      if (node.position) {
        this.every(r() * POSITION_INTERVAL_MS, POSITION_INTERVAL_MS, () => {
          if (!isPresent(this.network, node, this.now())) return;
          const packet = positionPacket(this.network, node, this.now());
          if (packet) this.sendLive({ payloadVariant: { case: 'packet', value: packet } });
        });
      }
    }
    this.every(2_000 + r() * 8_000, LOG_LINE_INTERVAL_MS, () => this.writeStatusLine());
    // The radio's own LocalStats (device-health.ts), as firmware sends them to its client.
    this.every(500 + r() * 1_500, interval, () =>
      this.sendLive({
        payloadVariant: { case: 'packet', value: localStatsPacket(this.network, this.startedAt, this.now()) },
      }),
    );
    this.announceReturns();
    this.options.responder.onStart?.(this);
    // An upgraded node boots under its new number and sends its NodeInfo at once (renumber.ts).
    const moved = this.options.renumbering;
    const upgraded = moved && this.network.nodes.find((n) => n.num === moved.oldNum);
    if (upgraded && moved.at !== undefined && !moved.done(this.now()))
      this.after(moved.at - this.now(), () =>
        this.sendLive({
          payloadVariant: { case: 'packet', value: nodeInfoPacket(this.network, upgraded, this.now()) },
        }),
      );
  }

  /**
   * A node coming back in range (or switched on again) sends its nodeinfo at once, as firmware
   * does at boot, so texts held for it (docs/held-texts.md) go out without waiting for its next
   * telemetry.
   */
  private announceReturns(): void {
    const away = new Set<number>();
    const check = () => {
      const now = this.now();
      for (const node of this.network.nodes) {
        const present = isPresent(this.network, node, now);
        if (!present) away.add(node.num);
        else if (away.delete(node.num)) {
          this.sendLive({
            payloadVariant: { case: 'packet', value: nodeInfoPacket(this.network, node, now) },
          });
        }
      }
      this.after(PRESENCE_CHECK_MS, check);
    };
    this.after(PRESENCE_CHECK_MS, check);
  }

  private sendTelemetry(node: SimNode, kind: TelemetryKind): void {
    // A node that is away (presence.ts) is not heard.
    if (!isPresent(this.network, node, this.now())) return;
    const packet = telemetryPacket(this.network, node, kind, this.now());
    if (packet) this.sendLive({ payloadVariant: { case: 'packet', value: packet } });
  }

  /** Runs `fn` after `firstMs`, then every `periodMs` ±10 %. */
  private every(firstMs: number, periodMs: number, fn: () => void): void {
    const run = () => {
      fn();
      this.after(periodMs * (0.9 + 0.2 * this.random()), run);
    };
    this.after(firstMs, run);
  }

  private sendLive(message: FromRadioInit): void {
    if (this.socket.writableLength > LIVE_BACKLOG_LIMIT_BYTES) {
      this.droppedLive++;
      return;
    }
    this.send(message);
  }

  /** Writes one FromRadio frame; false when the socket asks the writer to wait for 'drain'. */
  private send(message: FromRadioInit): boolean {
    if (this.closed || this.socket.destroyed) return true;
    this.fromRadioId++;
    const renumbered = this.options.renumbering?.rewrite(message, this.now()) ?? message;
    const fromRadio = create(Mesh.FromRadioSchema, { ...renumbered, id: this.fromRadioId });
    return this.socket.write(encodeFrame(toBinary(Mesh.FromRadioSchema, fromRadio)));
  }

  private drain(): Promise<void> {
    this.drained ??= waitForDrain(this.socket, DRAIN_TIMEOUT_MS, {
      timeout: (ms) => new Error(`sim client did not read for ${ms} ms`),
    })
      .catch((error: unknown) => {
        // A client that hung up wants no more history: its close ends the wait like a drain.
        if (!(error instanceof StreamClosedError)) throw error;
      })
      .finally(() => {
        this.drained = undefined;
      });
    return this.drained;
  }

  /** A line of plain debug-log text between frames, as firmware writes on its serial console. */
  private writeLogLine(tag: string, text: string): void {
    if (this.closed || this.socket.destroyed) return;
    const now = this.now();
    const clock = new Date(now).toISOString().slice(11, 19);
    const uptime = Math.floor((now - this.startedAt) / 1000);
    this.socket.write(`INFO  | ${clock} ${uptime} [${tag}] ${text}\r\n`);
  }

  private writeStatusLine(): void {
    const nodes = this.network.nodes;
    const node = nodes[this.logLineCount++ % Math.max(1, nodes.length)];
    if (!node) {
      this.writeLogLine('Power', 'Battery: usbPower=1, isCharging=0, batMv=5000, batPct=101');
      return;
    }
    const snr = snrAt(this.network.seed, node, this.now());
    this.writeLogLine(
      'Router',
      `Received packet from ${node.id} rxSNR=${snr} rxRSSI=${rssiAt(snr)} hopsAway=${node.hopsAway}`,
    );
  }
}
