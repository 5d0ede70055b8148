/**
 * The protobufs a simulated Meshtastic device sends: the want_config handshake (in the
 * firmware's PhoneAPI order) and MeshPackets as its radio would hear them from the nodes.
 * Packets are pure functions of (seed, node, time), ids included, so a replay is identical.
 */
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Channel, Config, Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import { BROADCAST_NODE_NUM } from '../../domain/node.js';
import type { SimDevice, SimNetwork, SimNode } from './nodes.js';
import { hash32 } from './random.js';
import { simPublicKey } from './renumber.js';
import { airQualityAt, deviceAt, environmentAt, type ModelPlace, rssiAt, snrAt } from './weather-model.js';

/** Firmware PhoneAPI.h: want_config_id values asking for the config only, or the nodes only. */
export const SPECIAL_NONCE_ONLY_CONFIG = 69420;
export const SPECIAL_NONCE_ONLY_NODES = 69421;

const FIRMWARE_VERSION = '2.7.15.meshsim';
const MAX_CHANNELS = 8;
const HOP_LIMIT = 3;

export type FromRadioInit = MessageInitShape<typeof Mesh.FromRadioSchema>;
export type TelemetryKind = 'environment' | 'airQuality' | 'device';

/** Where the weather of a node is computed: its position, or the mesh centre when it has none. */
export function placeOf(network: SimNetwork, node: SimDevice): ModelPlace {
  return node.position ?? network.center;
}

/**
 * The FromRadio sequence answering want_config_id, in the order of firmware PhoneAPI
 * (my_info, own node_info, metadata, channels, config, other node_infos, config_complete_id);
 * the special nonces skip the node database or everything but it.
 */
export function handshakeMessages(network: SimNetwork, configId: number, nowMs: number): FromRadioInit[] {
  const { radio } = network;
  const out: FromRadioInit[] = [];
  const onlyNodes = configId === SPECIAL_NONCE_ONLY_NODES;
  const onlyConfig = configId === SPECIAL_NONCE_ONLY_CONFIG;
  if (!onlyNodes) {
    out.push({
      payloadVariant: {
        case: 'myInfo',
        value: {
          myNodeNum: radio.num,
          rebootCount: 1,
          minAppVersion: 30200,
          pioEnv: 'native',
          nodedbCount: network.nodes.length + 1,
        },
      },
    });
  }
  out.push({ payloadVariant: { case: 'nodeInfo', value: radioNodeInfo(network, nowMs) } });
  if (!onlyNodes) {
    out.push({
      payloadVariant: {
        case: 'metadata',
        value: {
          firmwareVersion: FIRMWARE_VERSION,
          deviceStateVersion: 24,
          canShutdown: false,
          hasWifi: true,
          hasBluetooth: false,
          hasEthernet: true,
          role: Config.Config_DeviceConfig_Role.CLIENT,
          hwModel: radio.hwModel,
        },
      },
    });
    for (let index = 0; index < MAX_CHANNELS; index++) {
      out.push({ payloadVariant: { case: 'channel', value: channel(index) } });
    }
    for (const config of configs(network)) out.push({ payloadVariant: { case: 'config', value: config } });
  }
  if (!onlyConfig) {
    for (const node of network.nodes) {
      out.push({ payloadVariant: { case: 'nodeInfo', value: nodeInfo(network, node, nowMs) } });
    }
  }
  out.push({ payloadVariant: { case: 'configCompleteId', value: configId } });
  return out;
}

function radioNodeInfo(network: SimNetwork, nowMs: number): MessageInitShape<typeof Mesh.NodeInfoSchema> {
  const { radio } = network;
  return {
    num: radio.num,
    user: user(radio),
    ...(radio.position ? { position: position(radio, nowMs) } : {}),
    lastHeard: Math.floor(nowMs / 1000),
    // Telemetry DeviceMetrics.battery_level 101 means "on external power".
    deviceMetrics: {
      batteryLevel: 101,
      voltage: 5,
      channelUtilization: 4,
      airUtilTx: 0.5,
      uptimeSeconds: 86_400,
    },
    isFavorite: true,
  };
}

function nodeInfo(
  network: SimNetwork,
  node: SimNode,
  nowMs: number,
): MessageInitShape<typeof Mesh.NodeInfoSchema> {
  // Heard a few minutes ago, on a schedule of its own.
  const lastHeardMs = nowMs - (hash32(network.seed, node.num, 0x6c68) % 600) * 1000;
  const device = deviceAt(network.seed, node, placeOf(network, node), lastHeardMs, network.rebootMs);
  return {
    num: node.num,
    user: user(node),
    ...(node.position ? { position: position(node, lastHeardMs) } : {}),
    snr: snrAt(network.seed, node, lastHeardMs),
    lastHeard: Math.floor(lastHeardMs / 1000),
    deviceMetrics: device,
    hopsAway: node.hopsAway,
  };
}

function user(device: SimDevice): MessageInitShape<typeof Mesh.UserSchema> {
  const mac = new Uint8Array(6);
  new DataView(mac.buffer).setUint32(2, device.num);
  mac[0] = 0x02; // a locally administered address
  return {
    id: device.id,
    longName: device.longName,
    shortName: device.shortName,
    macaddr: mac,
    hwModel: device.hwModel,
    role:
      'profile' in device ? Config.Config_DeviceConfig_Role.SENSOR : Config.Config_DeviceConfig_Role.CLIENT,
    ...('profile' in device ? { publicKey: simPublicKey(device.num) } : {}),
  };
}

function position(device: SimDevice, timeMs: number): MessageInitShape<typeof Mesh.PositionSchema> {
  const p = device.position!;
  return {
    latitudeI: Math.round(p.latitude * 1e7),
    longitudeI: Math.round(p.longitude * 1e7),
    altitude: p.altitude,
    time: Math.floor(timeMs / 1000),
    locationSource: Mesh.Position_LocSource.LOC_INTERNAL,
    precisionBits: 32,
  };
}

function channel(index: number): MessageInitShape<typeof Channel.ChannelSchema> {
  if (index > 0) return { index, role: Channel.Channel_Role.DISABLED };
  // The default primary channel: empty name (LongFast) with the default key `AQ==`.
  return { index, role: Channel.Channel_Role.PRIMARY, settings: { psk: Uint8Array.of(1), name: '' } };
}

function configs(network: SimNetwork): MessageInitShape<typeof Config.ConfigSchema>[] {
  const region =
    network.center.longitude < -30
      ? Config.Config_LoRaConfig_RegionCode.US
      : Config.Config_LoRaConfig_RegionCode.EU_868;
  return [
    {
      payloadVariant: {
        case: 'device',
        value: { role: Config.Config_DeviceConfig_Role.CLIENT, nodeInfoBroadcastSecs: 10_800 },
      },
    },
    { payloadVariant: { case: 'position', value: { positionBroadcastSecs: 900, fixedPosition: true } } },
    { payloadVariant: { case: 'power', value: {} } },
    { payloadVariant: { case: 'network', value: { wifiEnabled: true } } },
    { payloadVariant: { case: 'display', value: {} } },
    {
      payloadVariant: {
        case: 'lora',
        value: {
          usePreset: true,
          modemPreset: Config.Config_LoRaConfig_ModemPreset.LONG_FAST,
          region,
          hopLimit: HOP_LIMIT,
          txEnabled: true,
        },
      },
    },
    { payloadVariant: { case: 'bluetooth', value: { enabled: false } } },
  ];
}

/**
 * A packet's id: deterministic (the same packet gets the same id on every replay) and unique per
 * packet: two packets of one node, port and second (say its environment and air-quality
 * telemetry) differ in payload and get different ids, so the hub's dedupe on (from, id) keeps both.
 */
export function packetId(
  seed: number,
  from: number,
  portnum: number,
  payload: Uint8Array,
  timeMs: number,
): number {
  return hash32(seed, from, portnum, timeMs, ...bytesAsWords(payload)) || 1;
}

/** The payload as 32-bit words (the last one zero-padded), for hashing. */
function bytesAsWords(bytes: Uint8Array): number[] {
  const words: number[] = [bytes.length];
  for (let i = 0; i < bytes.length; i += 4) {
    words.push(
      ((bytes[i] ?? 0) << 24) |
        ((bytes[i + 1] ?? 0) << 16) |
        ((bytes[i + 2] ?? 0) << 8) |
        (bytes[i + 3] ?? 0),
    );
  }
  return words;
}

/** A FromRadio carrying a MeshPacket from `node`, as the simulator's radio heard it at `timeMs`. */
export function meshPacket(
  network: SimNetwork,
  node: SimNode,
  portnum: Portnums.PortNum,
  payload: Uint8Array,
  timeMs: number,
): MessageInitShape<typeof Mesh.MeshPacketSchema> {
  const snr = snrAt(network.seed, node, timeMs);
  return {
    from: node.num,
    to: BROADCAST_NODE_NUM,
    channel: 0,
    id: packetId(network.seed, node.num, portnum, payload, timeMs),
    rxTime: Math.floor(timeMs / 1000),
    rxSnr: snr,
    rxRssi: rssiAt(snr),
    hopLimit: HOP_LIMIT - node.hopsAway,
    hopStart: HOP_LIMIT,
    payloadVariant: { case: 'decoded', value: { portnum, payload } },
  };
}

/** The TELEMETRY_APP packet of one kind, or undefined when the node has no such sensor. */
export function telemetryPacket(
  network: SimNetwork,
  node: SimNode,
  kind: TelemetryKind,
  timeMs: number,
): MessageInitShape<typeof Mesh.MeshPacketSchema> | undefined {
  const variant = telemetryVariant(network, node, kind, timeMs);
  if (!variant) return undefined;
  const telemetry = create(Telemetry.TelemetrySchema, { time: Math.floor(timeMs / 1000), variant });
  return meshPacket(
    network,
    node,
    Portnums.PortNum.TELEMETRY_APP,
    toBinary(Telemetry.TelemetrySchema, telemetry),
    timeMs,
  );
}

function telemetryVariant(
  network: SimNetwork,
  node: SimNode,
  kind: TelemetryKind,
  timeMs: number,
): MessageInitShape<typeof Telemetry.TelemetrySchema>['variant'] | undefined {
  const place = placeOf(network, node);
  if (kind === 'environment') {
    if (node.profile.environment.length === 0) return undefined;
    const values = environmentAt(network.seed, node, place, timeMs);
    const metrics: Record<string, number> = {};
    for (const field of node.profile.environment) metrics[field] = values[field];
    return { case: 'environmentMetrics', value: metrics };
  }
  if (kind === 'airQuality') {
    if (!node.profile.airQuality) return undefined;
    return { case: 'airQualityMetrics', value: airQualityAt(network.seed, node, place, timeMs) };
  }
  return { case: 'deviceMetrics', value: deviceAt(network.seed, node, place, timeMs, network.rebootMs) };
}

export function positionPacket(
  network: SimNetwork,
  node: SimNode,
  timeMs: number,
): MessageInitShape<typeof Mesh.MeshPacketSchema> | undefined {
  if (!node.position) return undefined;
  const payload = toBinary(Mesh.PositionSchema, create(Mesh.PositionSchema, position(node, timeMs)));
  return meshPacket(network, node, Portnums.PortNum.POSITION_APP, payload, timeMs);
}

export function nodeInfoPacket(
  network: SimNetwork,
  node: SimNode,
  timeMs: number,
): MessageInitShape<typeof Mesh.MeshPacketSchema> {
  const payload = toBinary(Mesh.UserSchema, create(Mesh.UserSchema, user(node)));
  return meshPacket(network, node, Portnums.PortNum.NODEINFO_APP, payload, timeMs);
}
