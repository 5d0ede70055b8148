/**
 * Legacy JSON uplink (`<root>/2/json/<channel>/<!gateway>`), as firmware before 2.8 serialized
 * a decoded packet (MeshPacketSerializer::JsonSerialize): `{ id, timestamp (rx_time, s), from,
 * to, channel, type, sender, payload, snr?, rssi? }`. Accepted, never depended on: firmware 2.8
 * removed it. Field mapping, as for protobufs (docs/architecture.md "Meshtastic facts"):
 *
 * - `telemetry`: `temperature` °C, `relative_humidity` %, `barometric_pressure` hPa (×100 → Pa),
 *   `wind_speed` m/s, `wind_direction` degrees, `gas_resistance` kΩ; `pm25` and `pm100` (PM10)
 *   µg/m³ — the JSON's `pm10` is `pm10_standard`, i.e. PM1.0, and is left out;
 *   `battery_level` goes to the node. A field present is a value, 0 included.
 * - `position`: `latitude_i`/`longitude_i` (degrees ×1e7; 0,0 is "no fix"), `altitude`.
 * - `nodeinfo`: `longname`, `shortname`, `hardware` (the HardwareModel number).
 */
import { Portnums } from '@meshtastic/protobufs';
import { type PacketMeta, packetMeta } from '../../domain/mesh.js';
import { type NodeUpdate, nodeIdFromNum } from '../../domain/node.js';
import type { Reading } from '../../domain/reading.js';
import { hardwareModelName } from '../packet-decoder.js';
import type { UplinkPacket, UplinkResult } from './uplink.js';

/** What the JSON says; the caller adds the gateway and its trust. */
export type LegacyJsonResult =
  | Omit<UplinkPacket, 'gatewayId' | 'trusted'>
  | Exclude<UplinkResult, UplinkPacket>;

const PORT_OF_TYPE: Record<string, number> = {
  text: Portnums.PortNum.TEXT_MESSAGE_APP,
  position: Portnums.PortNum.POSITION_APP,
  nodeinfo: Portnums.PortNum.NODEINFO_APP,
  telemetry: Portnums.PortNum.TELEMETRY_APP,
};

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function uint32(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffffffff
    ? value
    : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 64 ? value : undefined;
}

/** A float as the firmware printed it back to the 7 digits a proto float holds. */
function f32(value: unknown): number | undefined {
  const v = num(value);
  return v === undefined ? undefined : Number(v.toPrecision(7));
}

export function decodeLegacyJson(
  payload: Uint8Array,
  nowMs: number,
  plausibleReceiveTime: (ms: number) => boolean,
): LegacyJsonResult {
  let message: unknown;
  try {
    message = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.length).toString('utf8'));
  } catch {
    return { kind: 'rejected', reason: 'malformed_json', detail: 'the payload is not valid JSON' };
  }
  if (!isObject(message)) {
    return { kind: 'rejected', reason: 'malformed_json', detail: 'the payload is not a JSON object' };
  }
  const from = uint32(message.from);
  const id = uint32(message.id ?? 0);
  if (from === undefined || id === undefined) {
    return {
      kind: 'rejected',
      reason: 'malformed_json',
      detail: '"from" and "id" must be 32-bit unsigned integers',
    };
  }
  if (from === 0) return { kind: 'ignored', reason: 'no_sender' };
  const rxMs = (num(message.timestamp) ?? 0) * 1000;
  const receivedAt = plausibleReceiveTime(rxMs) ? Math.floor(rxMs) : nowMs;
  const type = typeof message.type === 'string' ? message.type : '';
  const body = isObject(message.payload) ? message.payload : {};

  const nodeId = nodeIdFromNum(from);
  const node: NodeUpdate = { nodeNum: from, nodeId, lastHeard: receivedAt };
  const snr = num(message.snr);
  if (snr !== undefined && snr !== 0) node.snr = snr;
  const readings: Reading[] = [];

  if (type === 'telemetry') {
    const env: Reading = { nodeId, timestamp: receivedAt };
    const temperature = f32(body.temperature);
    const humidity = f32(body.relative_humidity);
    const pressureHpa = f32(body.barometric_pressure);
    const windSpeed = f32(body.wind_speed);
    const windDirection = num(body.wind_direction);
    const gas = f32(body.gas_resistance);
    if (temperature !== undefined) env.temperatureC = temperature;
    if (humidity !== undefined) env.humidityPercent = humidity;
    if (pressureHpa !== undefined) env.pressurePa = Math.round(pressureHpa * 10_000) / 100;
    if (windSpeed !== undefined) env.windSpeedMs = windSpeed;
    if (windDirection !== undefined) env.windDirection = Math.round(windDirection);
    if (gas !== undefined) env.gasResistanceKohm = gas;
    const pm25 = num(body.pm25);
    const pm10 = num(body.pm100);
    if (pm25 !== undefined) env.pm25Ugm3 = pm25;
    if (pm10 !== undefined) env.pm10Ugm3 = pm10;
    if (Object.keys(env).length > 2) readings.push(env);
    const battery = num(body.battery_level);
    if (battery !== undefined) node.batteryLevel = battery;
  } else if (type === 'position') {
    const lat = num(body.latitude_i);
    const lon = num(body.longitude_i);
    if (lat !== undefined && lon !== undefined && !(lat === 0 && lon === 0)) {
      node.latitude = lat / 1e7;
      node.longitude = lon / 1e7;
      const altitude = num(body.altitude);
      if (altitude !== undefined) node.altitude = altitude;
    }
  } else if (type === 'nodeinfo') {
    const longName = text(body.longname);
    const shortName = text(body.shortname);
    const hardware = uint32(body.hardware);
    if (longName) node.longName = longName;
    if (shortName) node.shortName = shortName;
    const hwModel = hardware === undefined ? undefined : hardwareModelName(hardware);
    if (hwModel) node.hwModel = hwModel;
  }

  return {
    kind: 'packet',
    from,
    to: uint32(message.to) ?? 0xffffffff,
    id,
    portnum: PORT_OF_TYPE[type] ?? Portnums.PortNum.UNKNOWN_APP,
    receivedAt,
    // The JSON uplink carries no payload bytes and few radio facts.
    meta: legacyMeta(message),
    payload: new Uint8Array(0),
    readings,
    nodes: [node],
  };
}

function legacyMeta(message: Record<string, unknown>): PacketMeta {
  const meta = packetMeta({
    channel: uint32(message.channel) ?? 0,
    hopLimit: uint32(message.hop_limit) ?? 0,
  });
  const hopStart = uint32(message.hop_start);
  if (hopStart) meta.hopStart = hopStart;
  const snr = num(message.snr);
  if (snr) meta.snr = snr;
  const rssi = num(message.rssi);
  if (rssi) meta.rssi = rssi;
  return meta;
}
