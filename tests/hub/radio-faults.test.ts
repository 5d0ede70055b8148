/**
 * A radio that misbehaves after a valid handshake: corrupt frames, FromRadio bytes that are not
 * a protobuf, and a telemetry packet whose payload does not decode. The hub counts each one,
 * keeps running, and still stores the good reading that follows.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums, Telemetry } from '@meshtastic/protobufs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrame, StreamFramer } from '../../src/mesh/framing.js';
import { getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

const MY_NODE = 0x1234abcd;
const SENSOR = 0x0badf00d;
let device: Server;
let t: TestHub;

const fromRadio = (variant: Mesh.FromRadio['payloadVariant']) =>
  encodeFrame(toBinary(Mesh.FromRadioSchema, create(Mesh.FromRadioSchema, { payloadVariant: variant })));

function telemetryPacket(payload: Uint8Array, id: number) {
  return fromRadio({
    case: 'packet',
    value: create(Mesh.MeshPacketSchema, {
      from: SENSOR,
      to: 0xffffffff,
      id,
      rxTime: Math.floor(Date.now() / 1000),
      payloadVariant: {
        case: 'decoded',
        value: create(Mesh.DataSchema, { portnum: Portnums.PortNum.TELEMETRY_APP, payload }),
      },
    }),
  });
}

function onClient(socket: Socket): void {
  const framer = new StreamFramer();
  socket.on('data', (chunk) => {
    for (const event of framer.push(chunk)) {
      if (event.kind !== 'frame') continue;
      const toRadio = fromBinary(Mesh.ToRadioSchema, event.payload);
      if (toRadio.payloadVariant.case !== 'wantConfigId') continue;
      socket.write(
        fromRadio({ case: 'myInfo', value: create(Mesh.MyNodeInfoSchema, { myNodeNum: MY_NODE }) }),
      );
      socket.write(fromRadio({ case: 'configCompleteId', value: toRadio.payloadVariant.value }));
      // After the handshake: an oversized frame header, bytes that are no FromRadio, a telemetry
      // packet whose payload is garbage, then one good reading.
      socket.write(Buffer.from([0x94, 0xc3, 0x7f, 0xff, 1, 2, 3]));
      socket.write(encodeFrame(Uint8Array.from([0xff, 0xff, 0xff])));
      socket.write(telemetryPacket(Uint8Array.from([0x0a, 0xff, 0x01]), 1));
      const good = create(Telemetry.TelemetrySchema, {
        variant: {
          case: 'environmentMetrics',
          value: create(Telemetry.EnvironmentMetricsSchema, { temperature: 12.5 }),
        },
      });
      socket.write(telemetryPacket(toBinary(Telemetry.TelemetrySchema, good), 2));
    }
  });
  socket.on('error', () => {});
}

beforeAll(async () => {
  device = createServer(onClient);
  await new Promise<void>((r) => device.listen(0, '127.0.0.1', r));
  const { port } = device.address() as { port: number };
  t = await startTestHub({ RADIO: `tcp:127.0.0.1:${port}` });
});
afterAll(async () => {
  await t?.stop();
  await new Promise((r) => device.close(r));
});

describe('a radio sending garbage', () => {
  it('counts each kind of bad input, keeps running and stores the good reading after it', async () => {
    const latest = await waitFor(
      async () => {
        const r = await getJson(`${t.baseUrl}/api/v1/weather/latest?node_id=!0badf00d`);
        return r.body.data.length ? r : undefined;
      },
      10_000,
      'the good reading',
    );
    expect(latest.body.data[0]).toMatchObject({ node_id: '!0badf00d', temperature_c: 12.5 });

    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/meshhub_mesh_frame_errors_total\{reason="frame"\} 1\b/);
    expect(metrics).toMatch(/meshhub_mesh_frame_errors_total\{reason="protobuf"\} 1\b/);
    expect(metrics).toMatch(/meshhub_mesh_frame_errors_total\{reason="payload"\} 1\b/);

    const health = await getJson(`${t.baseUrl}/health`);
    expect(health.body.status).toBe('ok');
    expect(health.body.radio).toMatchObject({ state: 'connected', simulated: false, myNodeNum: MY_NODE });
  });
});
