import { create, toBinary } from '@bufbuild/protobuf';
import { Portnums, Telemetry } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import { decodeDeviceHealth, directLinkSample } from '../../src/device-health/decode.js';
import { type HeardPacket, type PacketMeta, packetMeta } from '../../src/domain/mesh.js';

const AT = Date.UTC(2025, 4, 1, 12);

function packet(
  variant: NonNullable<Parameters<typeof create<typeof Telemetry.TelemetrySchema>>[1]>['variant'],
  meta: Partial<PacketMeta> = {},
  portnum = Portnums.PortNum.TELEMETRY_APP,
): HeardPacket {
  return {
    from: 0xa1b2c3d4,
    to: 0xffffffff,
    id: 7,
    portnum,
    receivedAt: AT,
    meta: packetMeta({ hopLimit: 3, payloadBytes: 10, ...meta }),
    payload: toBinary(Telemetry.TelemetrySchema, create(Telemetry.TelemetrySchema, { variant })),
    readings: [],
    nodes: [],
  };
}

describe('decodeDeviceHealth', () => {
  it('keeps a 0 % battery and 0 uptime as values and leaves unsent fields out', () => {
    const sample = decodeDeviceHealth(
      packet({ case: 'deviceMetrics', value: { batteryLevel: 0, uptimeSeconds: 0, voltage: 3.41 } }),
    );
    expect(sample).toEqual({ nodeId: '!a1b2c3d4', at: AT, batteryLevel: 0, voltage: 3.41, uptimeSeconds: 0 });
  });

  it('reads every DEVICE_METRICS field', () => {
    const sent = {
      batteryLevel: 101,
      voltage: 4.2,
      channelUtilization: 12.5,
      airUtilTx: 1.25,
      uptimeSeconds: 3600,
    };
    expect(decodeDeviceHealth(packet({ case: 'deviceMetrics', value: sent }))).toEqual({
      nodeId: '!a1b2c3d4',
      at: AT,
      ...sent,
    });
  });

  it('reads LocalStats, its noise floor only when sent', () => {
    const withFloor = decodeDeviceHealth(
      packet({
        case: 'localStats',
        value: {
          uptimeSeconds: 99,
          channelUtilization: 8,
          airUtilTx: 0.5,
          numPacketsTx: 10,
          numPacketsRx: 200,
          numPacketsRxBad: 3,
          noiseFloor: -118,
        },
      }),
    );
    expect(withFloor).toMatchObject({
      channelUtilization: 8,
      airUtilTx: 0.5,
      uptimeSeconds: 99,
      localStats: { packetsTx: 10, packetsRx: 200, packetsRxBad: 3, noiseFloor: -118 },
    });
    const without = decodeDeviceHealth(packet({ case: 'localStats', value: { numPacketsTx: 1 } }));
    expect(without?.localStats).toEqual({ packetsTx: 1, packetsRx: 0, packetsRxBad: 0 });
  });

  it('ignores other telemetry, other ports, an empty report and a payload that does not decode', () => {
    expect(
      decodeDeviceHealth(packet({ case: 'environmentMetrics', value: { temperature: 20 } })),
    ).toBeUndefined();
    expect(decodeDeviceHealth(packet({ case: 'deviceMetrics', value: {} }))).toBeUndefined();
    expect(
      decodeDeviceHealth(
        packet({ case: 'deviceMetrics', value: { batteryLevel: 5 } }, {}, Portnums.PortNum.POSITION_APP),
      ),
    ).toBeUndefined();
    const broken = packet({ case: 'deviceMetrics', value: { batteryLevel: 5 } });
    broken.payload = new Uint8Array([0xff, 0xff, 0xff]);
    expect(decodeDeviceHealth(broken)).toBeUndefined();
  });
});

describe('directLinkSample', () => {
  const heard = (meta: Partial<PacketMeta>) => packet({ case: 'deviceMetrics', value: {} }, meta);

  it('takes SNR/RSSI of a packet the hub’s radio heard with no hop taken', () => {
    expect(directLinkSample(heard({ hopStart: 3, hopLimit: 3, snr: -7.25, rssi: -110 }), 'radio', 1)).toEqual(
      {
        nodeId: '!a1b2c3d4',
        at: AT,
        snr: -7.25,
        rssi: -110,
      },
    );
  });

  it('leaves out relayed packets, MQTT, unknown hop_start, no SNR and the hub’s own packets', () => {
    expect(directLinkSample(heard({ hopStart: 3, hopLimit: 2, snr: 5 }), 'radio', 1)).toBeUndefined();
    expect(directLinkSample(heard({ hopStart: 3, hopLimit: 3, snr: 5 }), 'mqtt', 1)).toBeUndefined();
    expect(directLinkSample(heard({ hopLimit: 3, snr: 5 }), 'radio', 1)).toBeUndefined();
    expect(directLinkSample(heard({ hopStart: 3, hopLimit: 3 }), 'radio', 1)).toBeUndefined();
    expect(
      directLinkSample(heard({ hopStart: 3, hopLimit: 3, snr: 5 }), 'radio', 0xa1b2c3d4),
    ).toBeUndefined();
  });
});
