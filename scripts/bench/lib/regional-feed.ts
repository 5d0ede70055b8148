/**
 * A region's Meshtastic MQTT feed, for benchmarks (issue 26): `nodes` nodes (default 10,000), each
 * with its own node number, names, hardware, public key and place, sending what the firmware sends
 * at its default intervals — NODEINFO_APP every 3 h, POSITION_APP every 15 min, device telemetry
 * every 30 min, environment telemetry every 30 min from the ~30% that have a sensor — each packet
 * encrypted with the default LongFast key (channel-crypto.ts, as the firmware does it) into a
 * `ServiceEnvelope` on `msh/EU_868/2/e/LongFast/!<gateway>`, and heard by 1–3 of ~50 gateways
 * (the same packet id through each: the duplicates a regional broker carries).
 *
 * Deterministic: the same seed gives the same nodes, gateways, phases and packet ids. Nothing is
 * built before it is asked for, so a long feed costs no memory up front.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums, Telemetry } from '@meshtastic/protobufs';
import { channelCipher, channelHash, DEFAULT_CHANNEL_KEY } from '../../../src/mesh/mqtt/channel-crypto.js';
import { seededRandom } from '../../../src/mesh/simulator/random.js';

/** Firmware default broadcast intervals, in seconds. */
export const FIRMWARE_INTERVALS_S = {
  nodeinfo: 10_800,
  position: 900,
  device: 1_800,
  environment: 1_800,
} as const;

export type FeedPacketKind = keyof typeof FIRMWARE_INTERVALS_S;
const KINDS: readonly FeedPacketKind[] = ['nodeinfo', 'position', 'device', 'environment'];

export interface RegionalFeedOptions {
  nodes?: number;
  gateways?: number;
  /** Share of nodes with an environment sensor. Default 0.3. */
  environmentShare?: number;
  seed?: number;
  /** Topic root before `/2/e/…`. Default `msh/EU_868`. */
  root?: string;
  channel?: string;
}

export interface FeedNode {
  num: number;
  /** `!` and 8 hex digits. */
  id: string;
  longName: string;
  shortName: string;
  hwModel: Mesh.HardwareModel;
  publicKey: Uint8Array;
  /** Degrees ×1e7, as Position carries them. */
  latitudeI: number;
  longitudeI: number;
  altitude: number;
  hasEnvironment: boolean;
  /** Seconds into each interval at which the node sends, per kind. */
  phase: Record<FeedPacketKind, number>;
  /** Gateways within reach (indexes into `gateways`): each packet is heard by some of them. */
  heardBy: number[];
}

/** One MQTT publish: a gateway's copy of a packet. */
export interface FeedCopy {
  topic: string;
  payload: Buffer;
}

export interface FeedPacket {
  node: FeedNode;
  kind: FeedPacketKind;
  /** MeshPacket.id (the same in every copy). */
  id: number;
  /** Seconds from the start of the feed at which the node sends it. */
  at: number;
  /** One per gateway that heard it (1–3). */
  copies: FeedCopy[];
}

const HARDWARE = [
  Mesh.HardwareModel.HELTEC_V3,
  Mesh.HardwareModel.TBEAM,
  Mesh.HardwareModel.RAK4631,
  Mesh.HardwareModel.T_ECHO,
  Mesh.HardwareModel.STATION_G2,
];

const hex8 = (n: number) => n.toString(16).padStart(8, '0');

export class RegionalFeed {
  readonly nodes: FeedNode[];
  /** Gateway ids, `!xxxxxxxx`. */
  readonly gateways: string[];
  readonly channel: string;
  private readonly topics: string[];
  private readonly hash: number;
  private readonly random: () => number;
  private nextId: number;

  constructor(options: RegionalFeedOptions = {}) {
    const count = options.nodes ?? 10_000;
    const gatewayCount = options.gateways ?? 50;
    const share = options.environmentShare ?? 0.3;
    this.channel = options.channel ?? 'LongFast';
    const root = options.root ?? 'msh/EU_868';
    const random = seededRandom(options.seed ?? 26);
    this.random = random;
    this.hash = channelHash(this.channel, DEFAULT_CHANNEL_KEY);
    // Packet ids: one counter from a seeded start, so (from, id) never repeats within a feed.
    this.nextId = 1 + Math.floor(random() * 0x7fff_0000);

    const used = new Set<number>();
    const uniqueNum = () => {
      for (;;) {
        // Real node numbers are the low 4 bytes of the MAC; keep clear of 0, broadcast and the reserved low range.
        const n = (0x1000_0000 + Math.floor(random() * 0xe000_0000)) >>> 0;
        if (!used.has(n)) {
          used.add(n);
          return n;
        }
      }
    };
    this.gateways = Array.from({ length: gatewayCount }, () => `!${hex8(uniqueNum())}`);
    this.topics = this.gateways.map((g) => `${root}/2/e/${this.channel}/${g}`);

    this.nodes = Array.from({ length: count }, (_, i) => {
      const num = uniqueNum();
      const id = `!${hex8(num)}`;
      const publicKey = new Uint8Array(32);
      for (let k = 0; k < 32; k++) publicKey[k] = Math.floor(random() * 256);
      // Spread over a region about 4° × 6° (central Europe).
      const latitudeI = Math.round((46 + random() * 4) * 1e7);
      const longitudeI = Math.round((6 + random() * 6) * 1e7);
      const phase = {} as Record<FeedPacketKind, number>;
      for (const kind of KINDS) phase[kind] = random() * FIRMWARE_INTERVALS_S[kind];
      const reach = 1 + Math.floor(random() * 3);
      const heardBy: number[] = [];
      while (heardBy.length < reach) {
        const g = Math.floor(random() * gatewayCount);
        if (!heardBy.includes(g)) heardBy.push(g);
      }
      return {
        num,
        id,
        longName: `Regional node ${i + 1} ${id.slice(5)}`,
        shortName: id.slice(5),
        hwModel: HARDWARE[i % HARDWARE.length]!,
        publicKey,
        latitudeI,
        longitudeI,
        altitude: 100 + Math.floor(random() * 900),
        hasEnvironment: random() < share,
        phase,
        heardBy,
      };
    });
  }

  /** Packets per second the feed carries at the firmware intervals (before duplicates). */
  packetRate(): number {
    let rate = 0;
    for (const node of this.nodes) {
      for (const kind of KINDS) {
        if (kind === 'environment' && !node.hasEnvironment) continue;
        rate += 1 / FIRMWARE_INTERVALS_S[kind];
      }
    }
    return rate;
  }

  /** Mean copies per packet (gateways that hear a node). */
  copiesPerPacket(): number {
    return this.nodes.reduce((s, n) => s + n.heardBy.length, 0) / this.nodes.length;
  }

  /**
   * One packet of `kind` from `node`, sent `at` seconds into the feed; `rxTimeSeconds` is the
   * gateways' clock (0: not set, the hub uses its own). Each call takes a fresh packet id.
   */
  packet(node: FeedNode, kind: FeedPacketKind, at = 0, rxTimeSeconds = 0): FeedPacket {
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffff_fffe ? 1 : this.nextId + 1;
    const data = toBinary(
      Mesh.DataSchema,
      create(Mesh.DataSchema, { portnum: PORTS[kind], payload: this.payload(node, kind, rxTimeSeconds) }),
    );
    const encrypted = channelCipher(DEFAULT_CHANNEL_KEY, id, node.num, data);
    const copies = node.heardBy.map((g, hop) => {
      const packet = create(Mesh.MeshPacketSchema, {
        from: node.num,
        to: 0xffff_ffff,
        id,
        channel: this.hash,
        hopLimit: 3 - Math.min(hop, 2),
        hopStart: 3,
        rxTime: rxTimeSeconds,
        rxSnr: -10 + Math.round(this.random() * 200) / 10,
        rxRssi: -120 + Math.floor(this.random() * 60),
        payloadVariant: { case: 'encrypted', value: encrypted },
      });
      const envelope = create(Mqtt.ServiceEnvelopeSchema, {
        packet,
        channelId: this.channel,
        gatewayId: this.gateways[g]!,
      });
      return { topic: this.topics[g]!, payload: Buffer.from(toBinary(Mqtt.ServiceEnvelopeSchema, envelope)) };
    });
    return { node, kind, id, at, copies };
  }

  /**
   * The warm-up: for each node in `from`..`to` (indexes), its nodeinfo and one telemetry (device
   * metrics, and environment metrics from a node with a sensor), in node order.
   */
  *warmup(from = 0, to = this.nodes.length, rxTimeSeconds = 0): Generator<FeedPacket> {
    for (let i = from; i < Math.min(to, this.nodes.length); i++) {
      const node = this.nodes[i]!;
      yield this.packet(node, 'nodeinfo', 0, rxTimeSeconds);
      yield this.packet(node, 'device', 0, rxTimeSeconds);
      if (node.hasEnvironment) yield this.packet(node, 'environment', 0, rxTimeSeconds);
    }
  }

  /**
   * What the region sends in [`startS`, `startS + durationS`) at the firmware intervals, in time
   * order (packets are built as they are taken). `rxTimeOf(at)` gives the gateways' rx_time.
   */
  *schedule(
    startS: number,
    durationS: number,
    rxTimeOf: (at: number) => number = () => 0,
  ): Generator<FeedPacket> {
    const endS = startS + durationS;
    const due: Array<{ at: number; node: FeedNode; kind: FeedPacketKind }> = [];
    for (const node of this.nodes) {
      for (const kind of KINDS) {
        if (kind === 'environment' && !node.hasEnvironment) continue;
        const interval = FIRMWARE_INTERVALS_S[kind];
        // The first send at or after startS: phase + k × interval.
        let at = node.phase[kind] + Math.ceil((startS - node.phase[kind]) / interval) * interval;
        for (; at < endS; at += interval) due.push({ at, node, kind });
      }
    }
    due.sort((a, b) => a.at - b.at);
    for (const d of due) yield this.packet(d.node, d.kind, d.at, rxTimeOf(d.at));
  }

  private payload(node: FeedNode, kind: FeedPacketKind, rxTimeSeconds: number): Uint8Array {
    const r = this.random;
    switch (kind) {
      case 'nodeinfo':
        return toBinary(
          Mesh.UserSchema,
          create(Mesh.UserSchema, {
            id: node.id,
            longName: node.longName,
            shortName: node.shortName,
            hwModel: node.hwModel,
            publicKey: node.publicKey,
          }),
        );
      case 'position':
        return toBinary(
          Mesh.PositionSchema,
          create(Mesh.PositionSchema, {
            latitudeI: node.latitudeI,
            longitudeI: node.longitudeI,
            altitude: node.altitude,
            time: rxTimeSeconds,
            precisionBits: 32,
          }),
        );
      case 'device':
        return toBinary(
          Telemetry.TelemetrySchema,
          create(Telemetry.TelemetrySchema, {
            time: rxTimeSeconds,
            variant: {
              case: 'deviceMetrics',
              value: {
                batteryLevel: 20 + Math.floor(r() * 81),
                voltage: 3.5 + Math.round(r() * 70) / 100,
                channelUtilization: Math.round(r() * 300) / 10,
                airUtilTx: Math.round(r() * 50) / 10,
                uptimeSeconds: Math.floor(r() * 1_000_000),
              },
            },
          }),
        );
      case 'environment':
        return toBinary(
          Telemetry.TelemetrySchema,
          create(Telemetry.TelemetrySchema, {
            time: rxTimeSeconds,
            variant: {
              case: 'environmentMetrics',
              value: {
                temperature: Math.round((-5 + r() * 30) * 10) / 10,
                relativeHumidity: Math.round((30 + r() * 60) * 10) / 10,
                barometricPressure: Math.round((980 + r() * 50) * 10) / 10,
              },
            },
          }),
        );
    }
  }
}

const PORTS: Record<FeedPacketKind, Portnums.PortNum> = {
  nodeinfo: Portnums.PortNum.NODEINFO_APP,
  position: Portnums.PortNum.POSITION_APP,
  device: Portnums.PortNum.TELEMETRY_APP,
  environment: Portnums.PortNum.TELEMETRY_APP,
};
