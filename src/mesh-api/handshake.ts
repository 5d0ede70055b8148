/**
 * The answer to a client's `want_config_id`, built from the hub's own state: what the radio gave
 * the hub in its handshake (RadioMirror), with the node database from the hub's node table
 * (positions and last-heard times as the hub knows them, from the radio and MQTT gateways alike).
 *
 * Order as firmware sends it, which the apps assume (PhoneAPI.cpp getFromRadio): my_info,
 * deviceui_config, our own node_info, metadata, channels, config, module config, the other
 * node_infos, config_complete_id echoing the client's nonce. Nonce 69420 asks for config only
 * (no other nodes), 69421 for nodes only (PhoneAPI.h SPECIAL_NONCE_ONLY_CONFIG / _ONLY_NODES).
 */
import { clone, create, type MessageInitShape } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import type { MeshNode } from '../domain/node.js';
import type { RadioMirror } from './radio-mirror.js';
import { configWithoutSecrets, moduleConfigWithoutSecrets } from './secrets.js';

export const SPECIAL_NONCE_ONLY_CONFIG = 69420;
export const SPECIAL_NONCE_ONLY_NODES = 69421;

type FromRadioVariant = MessageInitShape<typeof Mesh.FromRadioSchema>['payloadVariant'];

export interface HandshakeSource {
  mirror: RadioMirror;
  /** The hub's node table (NodeRepository.list()). */
  nodes(): MeshNode[];
  /** The hub's own node number when the radio has not told the mirror yet (remembered, RADIO=none). */
  fallbackNodeNum: number | undefined;
}

export function handshakeReplay(source: HandshakeSource, nonce: number): FromRadioVariant[] {
  const { mirror } = source;
  const onlyNodes = nonce === SPECIAL_NONCE_ONLY_NODES;
  const onlyConfig = nonce === SPECIAL_NONCE_ONLY_CONFIG;
  const myNodeNum = mirror.myNodeNum ?? source.fallbackNodeNum ?? 0;
  const nodes = nodeDatabase(mirror, source.nodes(), myNodeNum);
  const own = nodes.get(myNodeNum);
  nodes.delete(myNodeNum);
  const out: FromRadioVariant[] = [];
  if (!onlyNodes) {
    out.push({
      case: 'myInfo',
      value: mirror.myInfo
        ? { ...mirror.myInfo, nodedbCount: nodes.size + 1 }
        : { myNodeNum, nodedbCount: nodes.size + 1 },
    });
    if (mirror.deviceUi) out.push(mirror.deviceUi);
  }
  if (own) out.push({ case: 'nodeInfo', value: { ...own, isFavorite: true, hopsAway: undefined } });
  if (!onlyNodes) {
    if (mirror.metadata) out.push({ case: 'metadata', value: mirror.metadata });
    for (const index of [...mirror.channels.keys()].sort((a, b) => a - b))
      out.push(mirror.channels.get(index)!);
    // The private key, admin keys, WiFi and MQTT passwords never leave the hub (secrets.ts).
    for (const { value } of mirror.configs.values())
      out.push({ case: 'config', value: configWithoutSecrets(value) });
    for (const { value } of mirror.moduleConfigs.values())
      out.push({ case: 'moduleConfig', value: moduleConfigWithoutSecrets(value) });
  }
  if (!onlyConfig) for (const node of nodes.values()) out.push({ case: 'nodeInfo', value: node });
  out.push({ case: 'configCompleteId', value: nonce });
  return out;
}

/**
 * The radio's node infos, updated with what the hub's node table knows better: a newer last
 * heard time, the position, names and hardware of nodes heard since (or only through MQTT).
 */
function nodeDatabase(
  mirror: RadioMirror,
  stored: MeshNode[],
  myNodeNum: number,
): Map<number, Mesh.NodeInfo> {
  const out = new Map<number, Mesh.NodeInfo>();
  for (const [num, info] of mirror.nodeInfos) out.set(num, clone(Mesh.NodeInfoSchema, info));
  for (const node of stored) {
    const num = node.nodeNum >>> 0;
    const info = out.get(num) ?? create(Mesh.NodeInfoSchema, { num });
    const user = info.user ?? create(Mesh.UserSchema, {});
    if (!user.id) user.id = node.nodeId;
    if (!user.longName && node.longName) user.longName = node.longName;
    if (!user.shortName && node.shortName) user.shortName = node.shortName;
    if (!user.hwModel && node.hwModel) {
      const model = (Mesh.HardwareModel as unknown as Record<string, number | undefined>)[node.hwModel];
      if (typeof model === 'number') user.hwModel = model;
    }
    info.user = user;
    const heardS = node.lastHeard === undefined ? 0 : Math.floor(node.lastHeard / 1000);
    if (heardS > info.lastHeard) info.lastHeard = heardS;
    if (node.latitude !== undefined && node.longitude !== undefined) {
      info.position = create(Mesh.PositionSchema, {
        latitudeI: Math.round(node.latitude * 1e7),
        longitudeI: Math.round(node.longitude * 1e7),
        ...(node.altitude === undefined ? {} : { altitude: Math.round(node.altitude) }),
        time: heardS,
      });
    }
    if (node.snr !== undefined && info.snr === 0) info.snr = node.snr;
    if (node.batteryLevel !== undefined) {
      info.deviceMetrics ??= create(Mesh.DeviceMetricsSchema, {});
      info.deviceMetrics.batteryLevel = node.batteryLevel;
    }
    out.set(num, info);
  }
  if (myNodeNum !== 0 && !out.has(myNodeNum))
    out.set(myNodeNum, create(Mesh.NodeInfoSchema, { num: myNodeNum }));
  return out;
}
