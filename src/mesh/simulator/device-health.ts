/**
 * The simulated radio's own health, as real firmware reports it to its API client: a
 * TELEMETRY_APP `local_stats` packet from the radio's node (uptime, channel and air
 * utilisation, packet counters, noise floor) every telemetry interval. The nodes' DEVICE_METRICS
 * come from weather-model.ts `deviceAt`, whose reboot period is `rebootMs` (SIM_REBOOT_MINUTES).
 */
import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { type Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import { BROADCAST_NODE_NUM } from '../../domain/node.js';
import type { SimNetwork } from './nodes.js';
import { hash32, smoothNoise } from './random.js';

const K_LOCAL = 0x6c73;

/** The radio's LocalStats at `timeMs`, `startedAt` its last boot (the session's start). */
export function localStatsPacket(
  network: SimNetwork,
  startedAt: number,
  timeMs: number,
): MessageInitShape<typeof Mesh.MeshPacketSchema> {
  const upSeconds = Math.max(0, Math.floor((timeMs - startedAt) / 1000));
  const busy = smoothNoise(timeMs / 3_600_000, network.seed, K_LOCAL);
  const rx = Math.floor(upSeconds * (0.05 + 0.1 * busy)) + network.nodes.length;
  const telemetry = create(Telemetry.TelemetrySchema, {
    time: Math.floor(timeMs / 1000),
    variant: {
      case: 'localStats',
      value: {
        uptimeSeconds: upSeconds,
        channelUtilization: Math.round((3 + 10 * busy) * 100) / 100,
        airUtilTx: Math.round((0.2 + 0.8 * busy) * 100) / 100,
        numPacketsTx: Math.floor(rx / 6),
        numPacketsRx: rx,
        numPacketsRxBad: Math.floor(rx / 50),
        numOnlineNodes: network.nodes.length,
        numTotalNodes: network.nodes.length,
        noiseFloor: -120 + Math.round(4 * busy),
      },
    },
  });
  const payload = toBinary(Telemetry.TelemetrySchema, telemetry);
  return {
    from: network.radio.num,
    to: BROADCAST_NODE_NUM,
    channel: 0,
    id: hash32(network.seed, network.radio.num, K_LOCAL, Math.floor(timeMs / 1000)) || 1,
    rxTime: Math.floor(timeMs / 1000),
    hopLimit: 3,
    hopStart: 3,
    payloadVariant: { case: 'decoded', value: { portnum: Portnums.PortNum.TELEMETRY_APP, payload } },
  };
}
