/**
 * What device health reads out of a heard packet (docs/architecture.md "Meshtastic facts"):
 * a TELEMETRY_APP `device_metrics` or `local_stats` report becomes a DeviceHealthSample, and a
 * packet the hub's own radio heard directly (no hop taken) gives its sender's SNR and RSSI.
 *
 * DeviceMetrics fields are proto3 `optional`: tested by presence (0 % battery is a value).
 * LocalStats fields have no presence bit and are always sent; its `noise_floor` is left out when 0
 * (firmware that does not measure it sends 0, and no radio's noise floor is 0 dBm).
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Portnums, Telemetry } from '@meshtastic/protobufs';
import type { DeviceHealthSample, HeardPacket, HeardVia } from '../domain/mesh.js';
import { nodeIdFromNum } from '../domain/node.js';
import { f32, finite } from '../mesh/packet-decoder.js';

/**
 * A sample's time: the packet's receive time as its readings take it (rx_time, else the hub's
 * clock: docs/architecture.md "Meshtastic facts"), which the decoder gave its node update.
 */
export function sampleTime(packet: HeardPacket): number {
  const heard = packet.nodes[0]?.lastHeard;
  return typeof heard === 'number' && Number.isFinite(heard) ? heard : packet.receivedAt;
}

/** The device health report a packet carries, or undefined (another port, another variant, a payload that does not decode). */
export function decodeDeviceHealth(packet: HeardPacket): DeviceHealthSample | undefined {
  if (packet.portnum !== Portnums.PortNum.TELEMETRY_APP || packet.from === 0) return undefined;
  let telemetry: Telemetry.Telemetry;
  try {
    telemetry = fromBinary(Telemetry.TelemetrySchema, packet.payload);
  } catch {
    return undefined;
  }
  const sample: DeviceHealthSample = { nodeId: nodeIdFromNum(packet.from), at: sampleTime(packet) };
  const variant = telemetry.variant;
  if (variant.case === 'deviceMetrics') {
    const m = variant.value;
    setIf(sample, 'batteryLevel', finite(m.batteryLevel));
    setIf(sample, 'voltage', f32(m.voltage));
    setIf(sample, 'channelUtilization', f32(m.channelUtilization));
    setIf(sample, 'airUtilTx', f32(m.airUtilTx));
    setIf(sample, 'uptimeSeconds', finite(m.uptimeSeconds));
    return hasAny(sample) ? sample : undefined;
  }
  if (variant.case === 'localStats') {
    const m = variant.value;
    setIf(sample, 'channelUtilization', f32(m.channelUtilization));
    setIf(sample, 'airUtilTx', f32(m.airUtilTx));
    setIf(sample, 'uptimeSeconds', finite(m.uptimeSeconds));
    const noiseFloor = finite(m.noiseFloor);
    sample.localStats = {
      packetsTx: m.numPacketsTx,
      packetsRx: m.numPacketsRx,
      packetsRxBad: m.numPacketsRxBad,
      ...(noiseFloor !== undefined && noiseFloor !== 0 ? { noiseFloor } : {}),
    };
    return sample;
  }
  return undefined;
}

type NumericField = 'batteryLevel' | 'voltage' | 'channelUtilization' | 'airUtilTx' | 'uptimeSeconds';

function setIf(sample: DeviceHealthSample, field: NumericField, value: number | undefined): void {
  if (value !== undefined) sample[field] = value;
}

function hasAny(s: DeviceHealthSample): boolean {
  return (
    s.batteryLevel !== undefined ||
    s.voltage !== undefined ||
    s.channelUtilization !== undefined ||
    s.airUtilTx !== undefined ||
    s.uptimeSeconds !== undefined
  );
}

/** SNR/RSSI of a packet the hub's own radio heard straight from its sender (hop_start == hop_limit). */
export interface LinkSample {
  nodeId: string;
  at: number;
  snr?: number;
  rssi?: number;
}

export function directLinkSample(
  packet: HeardPacket,
  via: HeardVia,
  myNodeNum: number | undefined,
): LinkSample | undefined {
  const { meta } = packet;
  if (via !== 'radio' || packet.from === 0 || packet.from === myNodeNum) return undefined;
  if (meta.hopStart === undefined || meta.hopStart !== meta.hopLimit) return undefined;
  if (meta.snr === undefined && meta.rssi === undefined) return undefined;
  return {
    nodeId: nodeIdFromNum(packet.from),
    at: sampleTime(packet),
    ...(meta.snr === undefined ? {} : { snr: meta.snr }),
    ...(meta.rssi === undefined ? {} : { rssi: meta.rssi }),
  };
}
