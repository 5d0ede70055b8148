import { create, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import { PayloadDecodeError } from '../../src/mesh/errors.js';
import {
  decodeFromRadio,
  decodeMeshPacket,
  encodeToRadio,
  nodeUpdateFromNodeInfo,
} from '../../src/mesh/packet-decoder.js';

const FROM = 0xa1b2c3d4;
const HUB_NOW = Date.UTC(2025, 5, 1, 12, 0, 0);
const RX_TIME = Date.UTC(2025, 5, 1, 11, 59, 30) / 1000;

function packet(
  portnum: Portnums.PortNum,
  payload: Uint8Array,
  extra: Partial<MessageInitShape<typeof Mesh.MeshPacketSchema>> = {},
): Mesh.MeshPacket {
  return create(Mesh.MeshPacketSchema, {
    from: FROM,
    to: 0xffffffff,
    id: 77,
    rxTime: RX_TIME,
    rxSnr: 6.25,
    payloadVariant: { case: 'decoded', value: { portnum, payload } },
    ...extra,
  });
}

function telemetry(variant: MessageInitShape<typeof Telemetry.TelemetrySchema>['variant']): Uint8Array {
  // A sender clock far off: the hub must not use Telemetry.time.
  return toBinary(Telemetry.TelemetrySchema, create(Telemetry.TelemetrySchema, { time: 1_000, variant }));
}

const env = (value: MessageInitShape<typeof Telemetry.EnvironmentMetricsSchema>) =>
  packet(Portnums.PortNum.TELEMETRY_APP, telemetry({ case: 'environmentMetrics', value }));

describe('decodeMeshPacket: TELEMETRY_APP', () => {
  it('maps every environment metric with its unit rule', () => {
    const { readings } = decodeMeshPacket(
      env({
        temperature: 21.5,
        relativeHumidity: 55.25,
        barometricPressure: 1013.25,
        windSpeed: 3.5,
        windDirection: 270,
        gasResistance: 142.5,
      }),
      HUB_NOW,
    );
    expect(readings).toEqual([
      {
        nodeId: '!a1b2c3d4',
        timestamp: RX_TIME * 1000,
        temperatureC: 21.5,
        humidityPercent: 55.25,
        pressurePa: 101325,
        windSpeedMs: 3.5,
        windDirection: 270,
        gasResistanceKohm: 142.5,
      },
    ]);
  });

  it('gives float fields back the decimals they were sent with (float32 on the wire)', () => {
    const [reading] = decodeMeshPacket(
      env({ temperature: 21.3, barometricPressure: 1009.7 }),
      HUB_NOW,
    ).readings;
    expect(reading?.temperatureC).toBe(21.3);
    expect(reading?.pressurePa).toBe(100970);
  });

  it('keeps zero values and leaves missing fields absent', () => {
    const [reading] = decodeMeshPacket(
      env({ temperature: 0, windSpeed: 0, windDirection: 0 }),
      HUB_NOW,
    ).readings;
    expect(reading).toEqual({
      nodeId: '!a1b2c3d4',
      timestamp: RX_TIME * 1000,
      temperatureC: 0,
      windSpeedMs: 0,
      windDirection: 0,
    });
    expect(reading).not.toHaveProperty('humidityPercent');
    expect(reading).not.toHaveProperty('pressurePa');
  });

  it('drops non-finite values, and a telemetry with no metric yields no reading', () => {
    const [reading] = decodeMeshPacket(
      env({ temperature: Number.NaN, relativeHumidity: 40 }),
      HUB_NOW,
    ).readings;
    expect(reading).toEqual({ nodeId: '!a1b2c3d4', timestamp: RX_TIME * 1000, humidityPercent: 40 });
    expect(decodeMeshPacket(env({ temperature: Number.POSITIVE_INFINITY }), HUB_NOW).readings).toEqual([]);
    expect(decodeMeshPacket(env({ voltage: 3.3, lux: 200 }), HUB_NOW).readings).toEqual([]);
  });

  it('maps PM2.5 from pm25_standard and PM10 from pm100_standard, never pm10_standard (PM1.0)', () => {
    const p = packet(
      Portnums.PortNum.TELEMETRY_APP,
      telemetry({
        case: 'airQualityMetrics',
        value: { pm10Standard: 4, pm25Standard: 9, pm100Standard: 15 },
      }),
    );
    expect(decodeMeshPacket(p, HUB_NOW).readings).toEqual([
      { nodeId: '!a1b2c3d4', timestamp: RX_TIME * 1000, pm25Ugm3: 9, pm10Ugm3: 15 },
    ]);
    const onlyPm1 = packet(
      Portnums.PortNum.TELEMETRY_APP,
      telemetry({ case: 'airQualityMetrics', value: { pm10Standard: 4 } }),
    );
    expect(decodeMeshPacket(onlyPm1, HUB_NOW).readings).toEqual([]);
  });

  it('prefers rx_time and falls back to the hub clock when rx_time is 0', () => {
    expect(decodeMeshPacket(env({ temperature: 1 }), HUB_NOW).readings[0]?.timestamp).toBe(RX_TIME * 1000);
    const local = packet(
      Portnums.PortNum.TELEMETRY_APP,
      telemetry({ case: 'environmentMetrics', value: { temperature: 1 } }),
      { rxTime: 0 },
    );
    expect(decodeMeshPacket(local, HUB_NOW).readings[0]?.timestamp).toBe(HUB_NOW);
    expect(decodeMeshPacket(local, HUB_NOW).nodes[0]?.lastHeard).toBe(HUB_NOW);
  });

  it('turns device metrics into the battery level of a node update, not a reading', () => {
    const p = packet(
      Portnums.PortNum.TELEMETRY_APP,
      telemetry({ case: 'deviceMetrics', value: { batteryLevel: 0, voltage: 3.1 } }),
    );
    const { readings, nodes } = decodeMeshPacket(p, HUB_NOW);
    expect(readings).toEqual([]);
    expect(nodes).toEqual([
      { nodeNum: FROM, nodeId: '!a1b2c3d4', lastHeard: RX_TIME * 1000, snr: 6.25, batteryLevel: 0 },
    ]);
  });

  it('every node update carries the sender, the receive time and the snr', () => {
    const { nodes } = decodeMeshPacket(env({ temperature: 3 }), HUB_NOW);
    expect(nodes).toEqual([{ nodeNum: FROM, nodeId: '!a1b2c3d4', lastHeard: RX_TIME * 1000, snr: 6.25 }]);
  });
});

describe('decodeMeshPacket: POSITION_APP', () => {
  const position = (value: MessageInitShape<typeof Mesh.PositionSchema>) =>
    packet(Portnums.PortNum.POSITION_APP, toBinary(Mesh.PositionSchema, create(Mesh.PositionSchema, value)));

  it('scales latitude_i/longitude_i by 1e-7 and keeps the altitude', () => {
    const [node] = decodeMeshPacket(
      position({ latitudeI: 473_769_000, longitudeI: -85_417_000, altitude: 0 }),
      HUB_NOW,
    ).nodes;
    expect(node).toMatchObject({ latitude: 47.3769, longitude: -8.5417, altitude: 0 });
  });

  it('ignores an absent position and the 0,0 of a device without a fix', () => {
    for (const value of [{}, { latitudeI: 0, longitudeI: 0, altitude: 400 }, { latitudeI: 473_769_000 }]) {
      const [node] = decodeMeshPacket(position(value), HUB_NOW).nodes;
      expect(node).toEqual({ nodeNum: FROM, nodeId: '!a1b2c3d4', lastHeard: RX_TIME * 1000, snr: 6.25 });
    }
  });
});

describe('decodeMeshPacket: NODEINFO_APP', () => {
  it('maps names and the hardware model name', () => {
    const user = create(Mesh.UserSchema, {
      id: '!a1b2c3d4',
      shortName: 'RDG1',
      longName: 'Ridge Weather Station',
      hwModel: Mesh.HardwareModel.HELTEC_V3,
    });
    const [node] = decodeMeshPacket(
      packet(Portnums.PortNum.NODEINFO_APP, toBinary(Mesh.UserSchema, user)),
      HUB_NOW,
    ).nodes;
    expect(node).toMatchObject({
      shortName: 'RDG1',
      longName: 'Ridge Weather Station',
      hwModel: 'HELTEC_V3',
    });
  });
});

describe('decodeMeshPacket: what yields nothing or fails', () => {
  it('ignores encrypted packets', () => {
    const p = create(Mesh.MeshPacketSchema, {
      from: FROM,
      rxTime: RX_TIME,
      payloadVariant: { case: 'encrypted', value: Uint8Array.of(1, 2, 3, 4) },
    });
    expect(decodeMeshPacket(p, HUB_NOW)).toEqual({ readings: [], nodes: [] });
  });

  it('ignores a packet without a sender (from 0)', () => {
    expect(decodeMeshPacket(env({ temperature: 20 }), HUB_NOW).readings).toHaveLength(1);
    const anonymous = packet(
      Portnums.PortNum.TELEMETRY_APP,
      telemetry({ case: 'environmentMetrics', value: { temperature: 20 } }),
      { from: 0 },
    );
    expect(decodeMeshPacket(anonymous, HUB_NOW)).toEqual({ readings: [], nodes: [] });
  });

  it('throws PayloadDecodeError for a payload that does not decode', () => {
    const garbage = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff);
    for (const port of [
      Portnums.PortNum.TELEMETRY_APP,
      Portnums.PortNum.POSITION_APP,
      Portnums.PortNum.NODEINFO_APP,
    ]) {
      const attempt = () => decodeMeshPacket(packet(port, garbage), HUB_NOW);
      expect(attempt).toThrow(PayloadDecodeError);
      try {
        attempt();
      } catch (error) {
        expect((error as PayloadDecodeError).portnum).toBe(port);
      }
    }
    expect(() => decodeMeshPacket(packet(Portnums.PortNum.TELEMETRY_APP, garbage), HUB_NOW)).toThrow(
      /^cannot decode Telemetry \(portnum 67\)/,
    );
  });
});

describe('nodeUpdateFromNodeInfo', () => {
  it('maps user, position, last heard, snr and battery', () => {
    const info = create(Mesh.NodeInfoSchema, {
      num: FROM,
      user: { shortName: 'ORC2', longName: 'Orchard', hwModel: Mesh.HardwareModel.RAK4631 },
      position: { latitudeI: 473_800_000, longitudeI: 85_400_000, altitude: 512 },
      lastHeard: RX_TIME,
      snr: -3.5,
      deviceMetrics: { batteryLevel: 87 },
    });
    expect(nodeUpdateFromNodeInfo(info)).toEqual({
      nodeNum: FROM,
      nodeId: '!a1b2c3d4',
      shortName: 'ORC2',
      longName: 'Orchard',
      hwModel: 'RAK4631',
      latitude: 47.38,
      longitude: 8.54,
      altitude: 512,
      lastHeard: RX_TIME * 1000,
      snr: -3.5,
      batteryLevel: 87,
    });
  });

  it('leaves out what the NodeInfo does not carry', () => {
    expect(nodeUpdateFromNodeInfo(create(Mesh.NodeInfoSchema, { num: 5 }))).toEqual({
      nodeNum: 5,
      nodeId: '!00000005',
    });
  });
});

describe('FromRadio/ToRadio helpers', () => {
  it('decodes a FromRadio and rejects garbage with PayloadDecodeError', () => {
    const bytes = toBinary(
      Mesh.FromRadioSchema,
      create(Mesh.FromRadioSchema, { payloadVariant: { case: 'configCompleteId', value: 42 } }),
    );
    expect(decodeFromRadio(bytes).payloadVariant).toEqual({ case: 'configCompleteId', value: 42 });
    expect(() => decodeFromRadio(Uint8Array.of(0x0a, 0xff))).toThrow(PayloadDecodeError);
  });

  it('encodes a ToRadio', () => {
    const bytes = encodeToRadio(
      create(Mesh.ToRadioSchema, { payloadVariant: { case: 'wantConfigId', value: 7 } }),
    );
    // want_config_id is field 3, varint: tag 0x18.
    expect(Array.from(bytes)).toEqual([0x18, 7]);
  });
});
