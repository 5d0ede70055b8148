/**
 * Security review (issue 23), finding 12: what a client of the hub's mesh API (a raw TCP client
 * speaking the Meshtastic stream protocol) receives. No private key, admin key, WiFi or MQTT
 * password, in the handshake or in ADMIN_APP packets; no subscriber's text the hub sends (nor its
 * packet id, nor its ACK) and no text addressed to the hub's node, unless MESH_API_SHOW_HUB_TEXTS=true.
 *
 * "Not received" is read after a marker packet the radio reports later: frames to one client go
 * out in order on one socket.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Admin, Config, Mesh, ModuleConfig, Portnums } from '@meshtastic/protobufs';
import { afterEach, describe, expect, it } from 'vitest';
import type { MeshApiActor } from '../../src/mesh-api/mesh-api-actor.js';
import { RadioMirror } from '../../src/mesh-api/radio-mirror.js';
import { packetWithoutSecrets, restoreSecrets } from '../../src/mesh-api/secrets.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { send, subscriber, waitForStatus } from '../messaging/helpers.js';
import { RawClient, startMeshApiHub } from './helpers.js';

const PRIVATE_KEY = new Uint8Array(32).fill(0x5a);
const ADMIN_KEY = new Uint8Array(32).fill(0x6b);
const WIFI_PSK = 'wifi-secret-passphrase';
const MQTT_PASSWORD = 'mqtt-secret-password';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.reverse()) await fn();
  cleanups.length = 0;
});

async function hub(
  env: Record<string, string> = {},
): Promise<{ t: TestHub; api: MeshApiActor; port: number }> {
  const started = await startMeshApiHub(env);
  cleanups.push(() => started.t.stop());
  return started;
}

async function client(port: number): Promise<RawClient> {
  const c = await RawClient.connect(port);
  cleanups.push(() => c.close());
  return c;
}

const security = () =>
  create(Config.ConfigSchema, {
    payloadVariant: {
      case: 'security',
      value: { publicKey: new Uint8Array(32).fill(1), privateKey: PRIVATE_KEY, adminKey: [ADMIN_KEY] },
    },
  });
const network = () =>
  create(Config.ConfigSchema, {
    payloadVariant: { case: 'network', value: { wifiSsid: 'farm', wifiPsk: WIFI_PSK } },
  });
const mqtt = () =>
  create(ModuleConfig.ModuleConfigSchema, {
    payloadVariant: { case: 'mqtt', value: { enabled: true, username: 'gw', password: MQTT_PASSWORD } },
  });

/** The radio's handshake carried its secrets (as firmware sends them to its one API client). */
function radioWithSecrets(mirror: RadioMirror): void {
  mirror.fromRadio(
    create(Mesh.FromRadioSchema, { payloadVariant: { case: 'config', value: security() } }),
    Date.now(),
  );
  mirror.fromRadio(
    create(Mesh.FromRadioSchema, { payloadVariant: { case: 'config', value: network() } }),
    Date.now(),
  );
  mirror.fromRadio(
    create(Mesh.FromRadioSchema, { payloadVariant: { case: 'moduleConfig', value: mqtt() } }),
    Date.now(),
  );
}

function radioPacket(
  mirror: RadioMirror,
  packet: Parameters<typeof create<typeof Mesh.MeshPacketSchema>>[1],
): void {
  mirror.fromRadio(
    create(Mesh.FromRadioSchema, { payloadVariant: { case: 'packet', value: packet } }),
    Date.now(),
  );
}

function adminPacket(
  me: number,
  id: number,
  admin: Parameters<typeof create<typeof Admin.AdminMessageSchema>>[1],
) {
  return {
    from: me,
    to: me,
    id,
    payloadVariant: {
      case: 'decoded' as const,
      value: {
        portnum: Portnums.PortNum.ADMIN_APP,
        payload: toBinary(Admin.AdminMessageSchema, create(Admin.AdminMessageSchema, admin)),
      },
    },
  };
}

/** Reports a marker packet from the radio and waits until `c` has it: what came before has arrived. */
/** A node's text "@alice thanks" to the hub's own node, heard by the radio as packet `id`. */
function thanksToTheHub(mirror: RadioMirror, id: number): void {
  radioPacket(mirror, {
    from: 0x0a0b0c0e,
    to: mirror.myNodeNum!,
    id,
    payloadVariant: {
      case: 'decoded',
      value: {
        portnum: Portnums.PortNum.TEXT_MESSAGE_APP,
        payload: new TextEncoder().encode('@alice thanks'),
      },
    },
  });
}

async function marker(mirror: RadioMirror, c: RawClient, id: number): Promise<void> {
  radioPacket(mirror, {
    from: 0x0a0b0c0d,
    to: 0xffffffff,
    id,
    payloadVariant: {
      case: 'decoded',
      value: { portnum: Portnums.PortNum.POSITION_APP, payload: new Uint8Array() },
    },
  });
  await waitFor(() => c.packets().some((p) => p.id === id), 10_000, `marker ${id}`);
}

/** Every byte the client received, as one buffer. */
function bytesOf(c: RawClient): Buffer {
  return Buffer.concat(c.received.map((m) => Buffer.from(toBinary(Mesh.FromRadioSchema, m))));
}

function secretsIn(c: RawClient): string[] {
  const all = bytesOf(c);
  const found: string[] = [];
  if (all.includes(Buffer.from(PRIVATE_KEY))) found.push('private key');
  if (all.includes(Buffer.from(ADMIN_KEY))) found.push('admin key');
  if (all.includes(Buffer.from(WIFI_PSK))) found.push('wifi psk');
  if (all.includes(Buffer.from(MQTT_PASSWORD))) found.push('mqtt password');
  return found;
}

const textOf = (p: Mesh.MeshPacket) =>
  p.payloadVariant.case === 'decoded' && p.payloadVariant.value.portnum === Portnums.PortNum.TEXT_MESSAGE_APP
    ? new TextDecoder().decode(p.payloadVariant.value.payload)
    : undefined;

/** A subscriber's text sent by the hub and acknowledged; its packet id. */
async function hubText(t: TestHub, text: string): Promise<number> {
  const nodes = (await (await fetch(`${t.baseUrl}/api/v1/nodes`)).json()) as {
    data: Array<{ node_id: string }>;
  };
  const me = `!${t.hub.bus.last('radio.status')!.myNodeNum!.toString(16).padStart(8, '0')}`;
  const target = nodes.data.find((n) => n.node_id !== me)!.node_id;
  const token = await subscriber(t, 'alice');
  const res = await send(t, token, target, text);
  expect(res.status).toBe(202);
  await waitForStatus(t, token, res.body.id, 'delivered');
  return t.hub.store.db
    .prepare('SELECT packet_id FROM message_packets ORDER BY sent_at DESC LIMIT 1')
    .pluck()
    .get() as number;
}

describe('the mesh API keeps secrets and conversations from its clients (default)', () => {
  it('sends no private key, admin key, WiFi or MQTT password, in the handshake or in admin packets', async () => {
    const { api, port } = await hub({ MESSAGE_AIRTIME_PERCENT: '100' });
    radioWithSecrets(api.mirror);
    const app = await client(port);
    const replay = await app.handshake(4711);
    const sec = replay.find(
      (m) => m.payloadVariant.case === 'config' && m.payloadVariant.value.payloadVariant.case === 'security',
    )!.payloadVariant.value as Config.Config;
    // The section is there (the apps show it), its public key too; the secrets are blank.
    expect(sec.payloadVariant.value).toMatchObject({ privateKey: new Uint8Array(0), adminKey: [] });
    expect((sec.payloadVariant.value as Config.Config_SecurityConfig).publicKey).toHaveLength(32);
    // An app's admin read answered by the radio, and another app's set_config, as the radio reports them.
    const me = api.mirror.myNodeNum!;
    radioPacket(
      api.mirror,
      adminPacket(me, 0x100, { payloadVariant: { case: 'getConfigResponse', value: security() } }),
    );
    radioPacket(
      api.mirror,
      adminPacket(me, 0x101, { payloadVariant: { case: 'getConfigResponse', value: network() } }),
    );
    radioPacket(
      api.mirror,
      adminPacket(me, 0x102, { payloadVariant: { case: 'getModuleConfigResponse', value: mqtt() } }),
    );
    await marker(api.mirror, app, 0x1ff);
    expect(app.packets().filter((p) => [0x100, 0x101, 0x102].includes(p.id))).toHaveLength(3);
    expect(secretsIn(app)).toEqual([]);
  });

  it("shows neither a subscriber's text the hub sends (nor its ACK) nor a text to the hub's node", async () => {
    const { t, api, port } = await hub({ MESSAGE_AIRTIME_PERCENT: '100' });
    const app = await client(port);
    await app.handshake(4712);
    const packetId = await hubText(t, 'the gate code is 4711');
    thanksToTheHub(api.mirror, 0x200);
    await marker(api.mirror, app, 0x2ff);
    expect(app.packets().filter((p) => p.id === packetId)).toEqual([]);
    expect(app.packets().map(textOf).filter(Boolean)).toEqual([]);
    const acks = app
      .packets()
      .filter((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === packetId);
    expect(acks).toEqual([]);
  });
});

describe('ACKs and NAKs from clients', () => {
  it('refuses a ROUTING_APP packet with BAD_REQUEST and never hands it to the radio', async () => {
    const { api, port } = await hub();
    const app = await client(port);
    await app.handshake(4714);
    const me = api.mirror.myNodeNum!;
    const sent: number[] = [];
    api.mirror.subscribe((e) => {
      if (e.kind === 'sent') sent.push(e.packet.id);
    });
    const nak = toBinary(
      Mesh.RoutingSchema,
      create(Mesh.RoutingSchema, { variant: { case: 'errorReason', value: Mesh.Routing_Error.NO_CHANNEL } }),
    );
    app.send({
      payloadVariant: {
        case: 'packet',
        value: {
          to: me,
          id: 0x4000,
          payloadVariant: {
            case: 'decoded',
            value: { portnum: Portnums.PortNum.ROUTING_APP, payload: nak, requestId: 0x1234 },
          },
        },
      },
    });
    const refusal = await waitFor(() =>
      app
        .packets()
        .find((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === 0x4000),
    );
    const routing = fromBinary(Mesh.RoutingSchema, (refusal.payloadVariant.value as Mesh.Data).payload);
    expect(routing.variant).toEqual({ case: 'errorReason', value: Mesh.Routing_Error.BAD_REQUEST });
    expect(sent).not.toContain(0x4000);
  });
});

describe('MESH_API_SHOW_HUB_TEXTS=true', () => {
  it("shows the hub's texts with their ids and ACKs, and texts to the hub's node", async () => {
    const { t, api, port } = await hub({ MESSAGE_AIRTIME_PERCENT: '100', MESH_API_SHOW_HUB_TEXTS: 'true' });
    const app = await client(port);
    await app.handshake(4713);
    const packetId = await hubText(t, 'the gate code is 4711');
    thanksToTheHub(api.mirror, 0x300);
    await marker(api.mirror, app, 0x3ff);
    expect(
      app
        .packets()
        .filter((p) => p.id === packetId)
        .map(textOf),
    ).toEqual(['the gate code is 4711']);
    expect(
      app
        .packets()
        .some((p) => p.payloadVariant.case === 'decoded' && p.payloadVariant.value.requestId === packetId),
    ).toBe(true);
    expect(app.packets().find((p) => p.id === 0x300)).toBeDefined();
  });
});

describe('secrets.ts', () => {
  it('blanks secrets in admin packets and fills them back into an admin write', () => {
    const mirror = new RadioMirror();
    radioWithSecrets(mirror);
    const packet = (admin: Parameters<typeof adminPacket>[2]) =>
      create(Mesh.MeshPacketSchema, adminPacket(1, 1, admin));
    const adminOf = (p: Mesh.MeshPacket) =>
      fromBinary(Admin.AdminMessageSchema, (p.payloadVariant.value as Mesh.Data).payload).payloadVariant;
    // A client's set_config echoed to the others: blank.
    const write = packet({ payloadVariant: { case: 'setConfig', value: security() } });
    expect(adminOf(packetWithoutSecrets(write))).toMatchObject({
      value: { payloadVariant: { value: { privateKey: new Uint8Array(0), adminKey: [] } } },
    });
    // An app saving the security section it was shown blank: the radio keeps its keys.
    const blank = security();
    if (blank.payloadVariant.case === 'security') {
      blank.payloadVariant.value.privateKey = new Uint8Array(0);
      blank.payloadVariant.value.adminKey = [];
      blank.payloadVariant.value.serialEnabled = true;
    }
    const restored = adminOf(
      restoreSecrets(packet({ payloadVariant: { case: 'setConfig', value: blank } }), mirror),
    );
    expect(restored).toMatchObject({
      value: {
        payloadVariant: { value: { privateKey: PRIVATE_KEY, adminKey: [ADMIN_KEY], serialEnabled: true } },
      },
    });
    const mqttBlank = mqtt();
    if (mqttBlank.payloadVariant.case === 'mqtt') mqttBlank.payloadVariant.value.password = '';
    expect(
      adminOf(
        restoreSecrets(packet({ payloadVariant: { case: 'setModuleConfig', value: mqttBlank } }), mirror),
      ),
    ).toMatchObject({ value: { payloadVariant: { value: { password: MQTT_PASSWORD } } } });
    // Anything else passes untouched (the same object).
    const text = create(Mesh.MeshPacketSchema, {
      payloadVariant: { case: 'decoded', value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP } },
    });
    expect(packetWithoutSecrets(text)).toBe(text);
    expect(restoreSecrets(text, mirror)).toBe(text);
  });
});
