/**
 * The hub as a Meshtastic radio for the official apps (issue 16, part 1): the Meshtastic project's
 * own client (@meshtastic/core over @meshtastic/transport-node) and raw-socket clients, at once,
 * against a hub on the simulator over real loopback TCP.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { MeshDevice, Protobuf } from '@meshtastic/core';
import { Admin, Mesh, Portnums } from '@meshtastic/protobufs';
import { TransportNode } from '@meshtastic/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MeshApiActor } from '../../src/mesh-api/mesh-api-actor.js';
import { MessageGatewayActor } from '../../src/messaging/gateway-actor.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { RawClient, startMeshApiHub } from './helpers.js';

const CONFIGURED = 7; // DeviceStatusEnum.DeviceConfigured

let t: TestHub;
let api: MeshApiActor;
let port: number;
let device: MeshDevice;
let a: RawClient;
let b: RawClient;
let myNodeNum: number;
let pacedSends = 0;

beforeAll(async () => {
  ({ t, api, port } = await startMeshApiHub());
  myNodeNum = t.hub.bus.last('radio.status')!.myNodeNum!;
  // Count turns in the gateway's airtime queue: client packets must take one each.
  const gateway = t.hub.supervisor.actors.find(
    (x) => x instanceof MessageGatewayActor,
  ) as MessageGatewayActor;
  const sendPaced = gateway.sendPaced.bind(gateway);
  gateway.sendPaced = (bytes, transmit) => {
    pacedSends++;
    return sendPaced(bytes, transmit);
  };
  device = new MeshDevice(await TransportNode.create('127.0.0.1', port));
  device.log.settings.minLevel = 5; // errors only
  let status = 0;
  device.events.onDeviceStatus.subscribe((s: number) => {
    status = s;
  });
  a = await RawClient.connect(port);
  b = await RawClient.connect(port);
  void device.configure();
  await Promise.all([a.handshake(1111), b.handshake(2222)]);
  await waitFor(() => status === CONFIGURED, 10_000, '@meshtastic/core configured');
}, 30_000);

afterAll(async () => {
  await device?.disconnect().catch(() => {});
  a?.close();
  b?.close();
  await t?.stop();
});

describe('mesh API with three clients at once', () => {
  it('answers want_config_id from the hub state, in firmware order, echoing each nonce', async () => {
    const replay = await a.handshake(424242);
    const cases = replay.map((m) => m.payloadVariant.case);
    expect(cases[0]).toBe('myInfo');
    expect(cases.at(-1)).toBe('configCompleteId');
    expect(replay.at(-1)!.payloadVariant.value).toBe(424242);
    const my = replay[0]!.payloadVariant.value as Mesh.MyNodeInfo;
    expect(my.myNodeNum).toBe(myNodeNum);
    expect(cases.indexOf('metadata')).toBeLessThan(cases.indexOf('channel'));
    expect(cases.lastIndexOf('channel')).toBeLessThan(cases.indexOf('config'));
    expect(replay.filter((m) => m.payloadVariant.case === 'channel')).toHaveLength(8);
    const configs = replay.flatMap((m) =>
      m.payloadVariant.case === 'config' ? [m.payloadVariant.value.payloadVariant.case] : [],
    );
    expect(configs).toContain('lora');
    // Our own node comes right after my_info, before the metadata (PhoneAPI STATE_SEND_OWN_NODEINFO).
    const firstNode = replay.find((m) => m.payloadVariant.case === 'nodeInfo')!.payloadVariant
      .value as Mesh.NodeInfo;
    expect(firstNode.num).toBe(myNodeNum);
    // @meshtastic/core saw the same device.
    expect(device.configId).toBeGreaterThan(0);
  });

  it('replays the node database with positions and last-heard times from the hub node table', async () => {
    const stored = new NodeRepository(t.hub.store.db).list();
    const withPosition = stored.filter((n) => n.latitude !== undefined && n.nodeNum !== myNodeNum);
    expect(withPosition.length).toBeGreaterThan(0);
    const replay = await b.handshake(31337);
    const infos = new Map(
      replay.flatMap((m) =>
        m.payloadVariant.case === 'nodeInfo'
          ? [[m.payloadVariant.value.num, m.payloadVariant.value] as const]
          : [],
      ),
    );
    for (const node of stored) expect(infos.has(node.nodeNum)).toBe(true);
    for (const node of withPosition) {
      const info = infos.get(node.nodeNum)!;
      expect(info.position?.latitudeI).toBe(Math.round(node.latitude! * 1e7));
      expect(info.position?.longitudeI).toBe(Math.round(node.longitude! * 1e7));
      expect(info.lastHeard).toBeGreaterThanOrEqual(Math.floor((node.lastHeard ?? 0) / 1000));
      expect(info.lastHeard).toBeGreaterThan(0);
    }
    // Nonce 69420: config only, no other nodes.
    const configOnly = await b.handshake(69420);
    expect(
      configOnly
        .filter((m) => m.payloadVariant.case === 'nodeInfo')
        .map((m) => (m.payloadVariant.value as Mesh.NodeInfo).num),
    ).toEqual([myNodeNum]);
  });

  it('sends a client text through the airtime queue and ACKs it to that client with its own id', async () => {
    const target = new NodeRepository(t.hub.store.db).list().find((n) => n.nodeNum !== myNodeNum)!;
    const before = pacedSends;
    const id = await device.sendText('hello from the app', target.nodeNum, true);
    expect(pacedSends).toBe(before + 1);
    // The ACK the core client resolved on carried its own packet id as request_id.
    const acked = await waitFor(() =>
      a.packets().find((p) => {
        if (p.payloadVariant.case !== 'decoded') return false;
        const d = p.payloadVariant.value;
        return d.portnum === Portnums.PortNum.ROUTING_APP && d.requestId === id;
      }),
    );
    const routing = fromBinary(Mesh.RoutingSchema, (acked.payloadVariant.value as Mesh.Data).payload);
    expect(routing.variant).toEqual({ case: 'errorReason', value: Mesh.Routing_Error.NONE });
    // The other clients see the text the hub sent, as sent from the hub's node.
    for (const client of [a, b]) {
      const echo = await waitFor(() => client.packets().find((p) => p.id === id));
      expect(echo.from).toBe(myNodeNum);
      expect(echo.to).toBe(target.nodeNum);
    }
  });

  it('fans every packet the radio hears out to every client', async () => {
    const coreIds = new Set<number>();
    device.events.onMeshPacket.subscribe((p: Protobuf.Mesh.MeshPacket) => coreIds.add(p.id));
    const heard = await waitFor(
      () => {
        const ids = a
          .packets()
          .filter((p) => p.from !== myNodeNum)
          .map((p) => p.id);
        return ids.find((id) => b.packets().some((p) => p.id === id) && coreIds.has(id));
      },
      15_000,
      'one radio packet seen by all three clients',
    );
    expect(heard).toBeGreaterThan(0);
  });

  it('answers a heartbeat with the queue status', async () => {
    const start = a.received.length;
    a.send({ payloadVariant: { case: 'heartbeat', value: {} } });
    const status = await waitFor(() =>
      a.received.slice(start).find((m) => m.payloadVariant.case === 'queueStatus'),
    );
    expect((status.payloadVariant.value as Mesh.QueueStatus).maxlen).toBeGreaterThan(0);
  });

  it('refuses admin writes with NOT_AUTHORIZED and never hands them to the radio', async () => {
    const before = pacedSends;
    const lora = create(Protobuf.Config.ConfigSchema, {
      payloadVariant: { case: 'lora', value: { hopLimit: 7 } },
    });
    await expect(device.setConfig(lora)).rejects.toMatchObject({ error: Mesh.Routing_Error.NOT_AUTHORIZED });
    const reboot = toBinary(
      Admin.AdminMessageSchema,
      create(Admin.AdminMessageSchema, { payloadVariant: { case: 'rebootSeconds', value: 1 } }),
    );
    const id = 0x1234abcd;
    b.send({
      payloadVariant: {
        case: 'packet',
        value: {
          to: myNodeNum,
          id,
          wantAck: true,
          payloadVariant: {
            case: 'decoded',
            value: { portnum: Portnums.PortNum.ADMIN_APP, payload: reboot, wantResponse: true },
          },
        },
      },
    });
    const refusal = await waitFor(() =>
      b.packets().find((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === id),
    );
    const routing = fromBinary(Mesh.RoutingSchema, (refusal.payloadVariant.value as Mesh.Data).payload);
    expect(routing.variant).toEqual({ case: 'errorReason', value: Mesh.Routing_Error.NOT_AUTHORIZED });
    expect(pacedSends).toBe(before);
    // The refusal is for its sender only.
    expect(
      a.packets().some((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === id),
    ).toBe(false);
  });

  it('survives random bytes, corrupt frames, oversize lengths and malformed protobufs', async () => {
    const rogue = await RawClient.connect(port);
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed >>> 24;
    };
    rogue.writeRaw(Uint8Array.from({ length: 20_000 }, random));
    rogue.writeRaw(Uint8Array.of(0x94, 0xc3, 0xff, 0xff, 1, 2, 3)); // length 65535 > 512
    rogue.writeRaw(Uint8Array.of(0x94, 0xc3, 0x00, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff)); // not a ToRadio
    rogue.writeRaw(Uint8Array.of(0x94, 0xc3, 0x02, 0x01)); // 513, then a cut frame
    // After the noise, the same connection still speaks the protocol.
    const replay = await rogue.handshake(5150);
    expect(replay.at(-1)!.payloadVariant.value).toBe(5150);
    const errors = await t.hub.metrics.registry.getSingleMetricAsString(
      'meshhub_mesh_api_frame_errors_total',
    );
    expect(errors).toMatch(/reason="frame"/);
    expect(errors).toMatch(/reason="protobuf"/);
    rogue.close();
    // The hub goes on: other clients still get radio packets.
    const n = a.packets().length;
    await waitFor(() => a.packets().length > n, 15_000, 'packets after the noise');
    expect(t.hub.supervisor.status().find((s) => s.name === 'mesh-api')?.state).toBe('running');
  });

  it('drops a client that stops reading while the others go on', async () => {
    const stalled = await RawClient.connect(port);
    await stalled.handshake(9999);
    stalled.socket.pause();
    await waitFor(() => api.clients.length === 4);
    const mirror = api.mirror;
    const text = new Uint8Array(200).fill(0x41);
    let id = 0x7000_0000;
    // A radio talking faster than the stalled client reads: it is dropped, nobody waits for it.
    for (let batch = 0; batch < 400 && api.clients.length === 4; batch++) {
      for (let i = 0; i < 200; i++) {
        mirror.fromRadio(
          create(Mesh.FromRadioSchema, {
            payloadVariant: {
              case: 'packet',
              value: {
                from: 0x0badf00d,
                to: 0xffffffff,
                id: ++id,
                payloadVariant: {
                  case: 'decoded',
                  value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: text },
                },
              },
            },
          }),
          Date.now(),
        );
      }
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => api.clients.length === 3, 10_000, 'the stalled client dropped');
    const drops = await t.hub.metrics.registry.getSingleMetricAsString('meshhub_mesh_api_disconnects_total');
    expect(drops).toMatch(/reason="slow"} 1/);
    const last = id;
    await waitFor(
      () => a.packets().some((p) => p.id === last) && b.packets().some((p) => p.id === last),
      30_000,
      'the others got the last packet',
    );
    const health = (await (await fetch(`${t.baseUrl}/health`)).json()) as {
      actors: Array<{ name: string; clients?: unknown[] }>;
    };
    const entry = health.actors.find((x) => x.name === 'mesh-api');
    expect(entry?.clients).toHaveLength(3);
  }, 60_000);
});
