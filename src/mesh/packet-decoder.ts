/**
 * MeshPacket → domain (Reading, NodeUpdate). Pure functions; units and presence rules as in
 * docs/architecture.md "Meshtastic facts":
 * - the receive time (`MeshPacket.rx_time`, else the hub's clock) is the reading's time, never
 *   the sender's `Telemetry.time`;
 * - metric fields are proto3 `optional`: an absent field stays absent, a 0 is a real 0;
 * - `barometric_pressure` hPa ×100 → Pa; PM10 is `pm100_standard` (`pm10_standard` is PM1.0).
 */
import { type DescMessage, fromBinary, type MessageShape, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import type { HeardPacket, MeshRoutingReport, MeshText, PacketMeta } from '../domain/mesh.js';
import { type NodeUpdate, nodeIdFromNum } from '../domain/node.js';
import type { Reading } from '../domain/reading.js';
import { PayloadDecodeError } from './errors.js';

export interface DecodedPacket {
  readings: Reading[];
  nodes: NodeUpdate[];
}

export function decodeFromRadio(bytes: Uint8Array): Mesh.FromRadio {
  return decodeOrThrow(Mesh.FromRadioSchema, bytes, 'FromRadio', undefined);
}

/** The protobuf bytes of a ToRadio (frame them with `encodeFrame`). */
export function encodeToRadio(message: Mesh.ToRadio): Uint8Array {
  return toBinary(Mesh.ToRadioSchema, message);
}

/** The receive time of a packet in ms: `rx_time` (seconds, set by the receiving radio) or the hub's clock. */
export function packetReceiveTime(packet: Mesh.MeshPacket, hubNowMs: number): number {
  return packet.rxTime !== 0 ? packet.rxTime * 1000 : hubNowMs;
}

/**
 * Readings and node updates carried by one packet. Encrypted packets (we do not hold the key
 * here) and packets without a sender yield nothing; a known port whose payload does not decode throws PayloadDecodeError.
 */
export function decodeMeshPacket(packet: Mesh.MeshPacket, hubNowMs: number): DecodedPacket {
  // from 0 is no node: a packet the client itself queued, echoed back before the radio stamped it.
  if (packet.payloadVariant.case !== 'decoded' || packet.from === 0) return { readings: [], nodes: [] };
  const data = packet.payloadVariant.value;
  const receivedAt = packetReceiveTime(packet, hubNowMs);
  const node: NodeUpdate = {
    nodeNum: packet.from >>> 0,
    nodeId: nodeIdFromNum(packet.from),
    lastHeard: receivedAt,
  };
  // rx_snr has no presence bit; 0 is what firmware leaves on packets it did not receive over LoRa.
  if (packet.rxSnr !== 0 && Number.isFinite(packet.rxSnr)) node.snr = packet.rxSnr;
  const readings: Reading[] = [];

  switch (data.portnum) {
    case Portnums.PortNum.TELEMETRY_APP: {
      const telemetry = decodeOrThrow(Telemetry.TelemetrySchema, data.payload, 'Telemetry', data.portnum);
      const variant = telemetry.variant;
      if (variant.case === 'environmentMetrics') {
        const reading = environmentReading(node.nodeId, receivedAt, variant.value);
        if (reading) readings.push(reading);
      } else if (variant.case === 'airQualityMetrics') {
        const reading = airQualityReading(node.nodeId, receivedAt, variant.value);
        if (reading) readings.push(reading);
      } else if (variant.case === 'deviceMetrics') {
        const battery = finite(variant.value.batteryLevel);
        if (battery !== undefined) node.batteryLevel = battery;
      }
      break;
    }
    case Portnums.PortNum.POSITION_APP: {
      const position = decodeOrThrow(Mesh.PositionSchema, data.payload, 'Position', data.portnum);
      Object.assign(node, positionFields(position));
      break;
    }
    case Portnums.PortNum.NODEINFO_APP: {
      const user = decodeOrThrow(Mesh.UserSchema, data.payload, 'User', data.portnum);
      Object.assign(node, userFields(user));
      break;
    }
  }
  return { readings, nodes: [node] };
}

const utf8 = new TextDecoder('utf-8');

/** The text of a TEXT_MESSAGE_APP packet, or undefined for any other packet. */
export function decodeTextPacket(
  packet: Mesh.MeshPacket,
  hubNowMs: number,
  via: 'radio' | 'mqtt' = 'radio',
): MeshText | undefined {
  if (packet.payloadVariant.case !== 'decoded' || packet.from === 0) return undefined;
  const data = packet.payloadVariant.value;
  if (data.portnum !== Portnums.PortNum.TEXT_MESSAGE_APP) return undefined;
  return {
    from: packet.from >>> 0,
    to: packet.to >>> 0,
    id: packet.id >>> 0,
    channel: packet.channel,
    text: utf8.decode(data.payload),
    replyId: data.replyId >>> 0,
    // The hub's clock, not rx_time: a conversation needs millisecond order, rx_time has seconds.
    receivedAt: hubNowMs,
    via,
  };
}

/**
 * The ACK/NAK carried by a ROUTING_APP packet (firmware ReliableRouter sends `Routing.error_reason`
 * with `Data.request_id` = the acknowledged packet's id), or undefined for any other packet and for
 * route discovery (traceroute) payloads. A payload that does not decode throws PayloadDecodeError.
 */
export function decodeRoutingPacket(
  packet: Mesh.MeshPacket,
  hubNowMs: number,
  via: 'radio' | 'mqtt' = 'radio',
): MeshRoutingReport | undefined {
  if (packet.payloadVariant.case !== 'decoded') return undefined;
  const data = packet.payloadVariant.value;
  if (data.portnum !== Portnums.PortNum.ROUTING_APP || data.requestId === 0) return undefined;
  const routing = decodeOrThrow(Mesh.RoutingSchema, data.payload, 'Routing', data.portnum);
  if (routing.variant.case === 'routeRequest' || routing.variant.case === 'routeReply') return undefined;
  const errorReason =
    routing.variant.case === 'errorReason' ? routing.variant.value : Mesh.Routing_Error.NONE;
  return {
    from: packet.from >>> 0,
    to: packet.to >>> 0,
    requestId: data.requestId >>> 0,
    errorReason,
    errorName: Mesh.Routing_Error[errorReason] ?? `ERROR_${errorReason}`,
    receivedAt: hubNowMs,
    via,
  };
}

/** A NodeInfo from the device's node database (sent during the handshake). */
export function nodeUpdateFromNodeInfo(info: Mesh.NodeInfo): NodeUpdate {
  const node: NodeUpdate = { nodeNum: info.num >>> 0, nodeId: nodeIdFromNum(info.num) };
  if (info.user) Object.assign(node, userFields(info.user));
  if (info.position) Object.assign(node, positionFields(info.position));
  // NodeInfo.last_heard is seconds; 0 means never heard (no presence bit).
  if (info.lastHeard !== 0) node.lastHeard = info.lastHeard * 1000;
  if (info.snr !== 0 && Number.isFinite(info.snr)) node.snr = info.snr;
  const battery = finite(info.deviceMetrics?.batteryLevel);
  if (battery !== undefined) node.batteryLevel = battery;
  return node;
}

function environmentReading(
  nodeId: string,
  timestamp: number,
  m: Telemetry.EnvironmentMetrics,
): Reading | undefined {
  const reading: Reading = { nodeId, timestamp };
  let any = false;
  const set = <K extends keyof Reading>(key: K, value: number | undefined) => {
    if (value === undefined) return;
    (reading[key] as number) = value;
    any = true;
  };
  set('temperatureC', f32(m.temperature));
  set('humidityPercent', f32(m.relativeHumidity));
  const hPa = f32(m.barometricPressure);
  set('pressurePa', hPa === undefined ? undefined : round(hPa * 100, 2));
  set('windSpeedMs', f32(m.windSpeed));
  const direction = finite(m.windDirection);
  set('windDirection', direction === undefined ? undefined : Math.round(direction));
  // gas_resistance: firmware already divides the sensor's ohms by 1000, so this is kΩ.
  set('gasResistanceKohm', f32(m.gasResistance));
  return any ? reading : undefined;
}

function airQualityReading(
  nodeId: string,
  timestamp: number,
  m: Telemetry.AirQualityMetrics,
): Reading | undefined {
  const reading: Reading = { nodeId, timestamp };
  const pm25 = finite(m.pm25Standard);
  // pm100_standard is PM10; pm10_standard is PM1.0 and has no place in a Reading.
  const pm10 = finite(m.pm100Standard);
  if (pm25 !== undefined) reading.pm25Ugm3 = pm25;
  if (pm10 !== undefined) reading.pm10Ugm3 = pm10;
  return pm25 === undefined && pm10 === undefined ? undefined : reading;
}

function positionFields(p: Mesh.Position): Pick<NodeUpdate, 'latitude' | 'longitude' | 'altitude'> {
  // latitude_i/longitude_i are degrees ×1e7; firmware sends 0,0 when it has no fix.
  if (p.latitudeI === undefined || p.longitudeI === undefined) return {};
  if (p.latitudeI === 0 && p.longitudeI === 0) return {};
  const out: Pick<NodeUpdate, 'latitude' | 'longitude' | 'altitude'> = {
    latitude: p.latitudeI / 1e7,
    longitude: p.longitudeI / 1e7,
  };
  if (p.altitude !== undefined) out.altitude = p.altitude;
  return out;
}

function userFields(u: Mesh.User): Pick<NodeUpdate, 'shortName' | 'longName' | 'hwModel' | 'publicKey'> {
  const out: Pick<NodeUpdate, 'shortName' | 'longName' | 'hwModel' | 'publicKey'> = {};
  if (u.shortName) out.shortName = u.shortName;
  // Any length is passed on; the nodes feature decides which keys it trusts (src/nodes/renumber.ts).
  if (u.publicKey.length > 0) out.publicKey = u.publicKey;
  if (u.longName) out.longName = u.longName;
  const hwModel = hardwareModelName(u.hwModel);
  if (hwModel !== undefined) out.hwModel = hwModel;
  return out;
}

/** `HELTEC_V3` for 43; undefined for UNSET; `HW_MODEL_<n>` for a model newer than our protobufs. */
export function hardwareModelName(model: number): string | undefined {
  if (model === Mesh.HardwareModel.UNSET) return undefined;
  return Mesh.HardwareModel[model] ?? `HW_MODEL_${model}`;
}

export function finite(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/** A proto `float` widened to a double (21.3 arrives as 21.299999237…), back to the 7 digits it holds. */
export function f32(value: number | undefined): number | undefined {
  const v = finite(value);
  return v === undefined ? undefined : Number(v.toPrecision(7));
}

function round(value: number, decimals: number): number {
  const scale = 10 ** decimals;
  return Math.round(value * scale) / scale;
}

function decodeOrThrow<Desc extends DescMessage>(
  schema: Desc,
  bytes: Uint8Array,
  messageType: string,
  portnum: number | undefined,
): MessageShape<Desc> {
  try {
    return fromBinary(schema, bytes);
  } catch (cause) {
    throw new PayloadDecodeError(messageType, portnum, { cause });
  }
}

/** Everything the hub takes from one decoded MeshPacket, whichever way it was heard. */

/**
 * Decodes a MeshPacket whose payload is `decoded` into what the hub uses; throws
 * PayloadDecodeError for a payload that does not decode. `receivedAt`: when the packet was heard
 * (the gateway's plausible rx_time on the MQTT path, the hub's clock on the radio).
 */
export function decodeHeardPacket(
  packet: Mesh.MeshPacket,
  hubNowMs: number,
  via: 'radio' | 'mqtt',
  receivedAt = hubNowMs,
  gateway?: string,
): HeardPacket | undefined {
  if (packet.payloadVariant.case !== 'decoded') return undefined;
  const data = packet.payloadVariant.value;
  const { readings, nodes } = decodeMeshPacket(packet, hubNowMs);
  const text = decodeTextPacket(packet, hubNowMs, via);
  const routing = decodeRoutingPacket(packet, hubNowMs, via);
  const meta: PacketMeta = {
    channel: packet.channel,
    hopLimit: packet.hopLimit,
    payloadBytes: data.payload.length,
    wantAck: packet.wantAck,
    wantResponse: data.wantResponse,
    requestId: data.requestId >>> 0,
    replyId: data.replyId >>> 0,
    viaMqtt: packet.viaMqtt,
  };
  if (packet.hopStart !== 0) meta.hopStart = packet.hopStart;
  if (packet.rxSnr !== 0 && Number.isFinite(packet.rxSnr)) meta.snr = packet.rxSnr;
  if (packet.rxRssi !== 0) meta.rssi = packet.rxRssi;
  if (gateway) meta.gateway = gateway;
  return {
    from: packet.from >>> 0,
    to: packet.to >>> 0,
    id: packet.id >>> 0,
    portnum: data.portnum,
    receivedAt,
    meta,
    payload: data.payload,
    readings,
    nodes,
    ...(text ? { text } : {}),
    ...(routing ? { routing } : {}),
  };
}
