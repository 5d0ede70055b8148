/**
 * Security review (issue 23), findings 5 and 6, over real MQTT against the hub's broker:
 *
 * - forged Meshtastic packets: an unencrypted envelope (or legacy JSON) from a gateway not in
 *   MESH_TRUSTED_GATEWAYS renames nobody; nothing in the name of the hub's own node is taken,
 *   encrypted or not, trusted gateway or not; a trusted gateway's unencrypted uplink is taken;
 * - retained messages: never kept on `msh/#` and `meshhub/ingest/#` (so never replayed to a
 *   gateway that subscribes for downlink), bounded elsewhere, deletable, counted by origin.
 *
 * "Nothing changed" is always read after a positive signal: a later, good publish whose effect
 * is visible (node updates are applied in order; retained messages are replayed in the order
 * of the subscription's filters).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import type { MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { ConfigError } from '../../src/config/load.js';
import { getJson, mqttOf, waitFor } from '../helpers/hub.js';
import {
  collect,
  connect,
  endClients,
  envelope,
  type MqttTestHub,
  meshTopic,
  startMqttHub,
} from './helpers.js';

const HUB_NODE = 0x0badf00d;
const GATEWAY_USER = { username: 'farm-gw', password: 'farm-gateway-pw-1', roles: ['device'] };
const ADMIN = { username: 'root', password: 'root-password-12345', roles: ['admin'] };

function user(longName: string): Uint8Array {
  return toBinary(Mesh.UserSchema, create(Mesh.UserSchema, { longName, shortName: longName.slice(0, 4) }));
}

/** A NODEINFO_APP envelope; `psk: 'AA=='` sends it unencrypted (a decoded MeshPacket). */
function nodeInfo(
  from: number,
  id: number,
  longName: string,
  options: { psk?: string; gatewayId?: string } = {},
) {
  return Buffer.from(
    envelope({ from, id, portnum: Portnums.PortNum.NODEINFO_APP, payload: user(longName), ...options }),
  );
}

async function nodeName(t: MqttTestHub, nodeId: string): Promise<string | undefined> {
  const r = await getJson(`${t.baseUrl}/api/v1/nodes`);
  return (r.body.data as Array<{ node_id: string; long_name?: string }>).find((n) => n.node_id === nodeId)
    ?.long_name;
}

/** Waits until `nodeId` is named `name`: the positive signal that earlier updates were applied. */
function named(t: MqttTestHub, nodeId: string, name: string): Promise<true> {
  return waitFor(
    async () => ((await nodeName(t, nodeId)) === name ? true : undefined),
    5_000,
    `${nodeId} named ${name}`,
  );
}

async function metric(t: MqttTestHub, series: string): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

/**
 * Publishes a good NodeInfo naming `from` `longName` and waits until the hub has it: what the same
 * client published before it has been handled by then (the forged packets the test looks at).
 */
async function heardAfter(
  t: MqttTestHub,
  client: MqttClient,
  from: number,
  id: number,
  longName: string,
): Promise<void> {
  await client.publishAsync(meshTopic(), nodeInfo(from, id, longName), { qos: 1 });
  await named(t, `!${from.toString(16).padStart(8, '0')}`, longName);
}

/** The hub's node kept its name, and the one packet sent in its name was refused as such. */
async function expectHubNodeNameRefusedOnce(t: MqttTestHub): Promise<void> {
  expect(await nodeName(t, '!0badf00d')).toBe('Hub radio');
  expect(await metric(t, 'meshhub_mqtt_mesh_refused_total{reason="from_hub_node"}')).toBe(1);
}

function sayHubNode(t: MqttTestHub): void {
  // As the radio actor says it once the radio's handshake names the hub's node.
  t.hub.bus.emit('radio.status', {
    state: 'disconnected',
    transport: 'none',
    simulated: false,
    myNodeNum: HUB_NODE,
  });
  t.hub.bus.emit('node.updated', { nodeNum: HUB_NODE, nodeId: '!0badf00d', longName: 'Hub radio' });
}

describe('forged mesh packets, no trusted gateway (the default)', () => {
  let t: MqttTestHub;
  let device: MqttClient;
  beforeAll(async () => {
    t = await startMqttHub({ MQTT_ALLOW_ANONYMOUS: 'true' });
    sayHubNode(t);
  });
  afterEach(endClients);
  afterAll(() => t.stop());

  it('an unencrypted envelope renames nobody: neither a node nor the hub radio', async () => {
    device = await connect(t.mqttUrl);
    await device.publishAsync(meshTopic(), nodeInfo(0x0a0a0a0a, 0x100, 'Hilltop'), { qos: 1 });
    await named(t, '!0a0a0a0a', 'Hilltop');
    await named(t, '!0badf00d', 'Hub radio');

    await device.publishAsync(meshTopic(), nodeInfo(0x0a0a0a0a, 0x101, 'Pwned', { psk: 'AA==' }), { qos: 1 });
    await device.publishAsync(meshTopic(), nodeInfo(HUB_NODE, 0x102, 'Pwned hub', { psk: 'AA==' }), {
      qos: 1,
    });
    // A later, good packet is applied: the forged ones before it were not.
    await heardAfter(t, device, 0x0b0b0b0b, 0x103, 'Signal');
    expect(await nodeName(t, '!0a0a0a0a')).toBe('Hilltop');
    expect(await nodeName(t, '!0badf00d')).toBe('Hub radio');
    expect(await metric(t, 'meshhub_mqtt_mesh_refused_total{reason="unencrypted_untrusted"}')).toBe(2);
    expect(device.connected).toBe(true);
  });

  it('legacy JSON is unencrypted too: refused before it is read', async () => {
    device = await connect(t.mqttUrl);
    const json = (from: number, id: number, longname: string) =>
      JSON.stringify({ id, from, to: 0xffffffff, type: 'nodeinfo', payload: { longname, shortname: 'X' } });
    await device.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', json(0x0a0a0a0a, 0x200, 'Pwned'), {
      qos: 1,
    });
    await device.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', json(HUB_NODE, 0x201, 'Pwned'), {
      qos: 1,
    });
    await heardAfter(t, device, 0x0b0b0b0b, 0x202, 'Signal 2');
    expect(await nodeName(t, '!0a0a0a0a')).toBe('Hilltop');
    expect(await nodeName(t, '!0badf00d')).toBe('Hub radio');
    expect(
      await metric(t, 'meshhub_mqtt_ingest_messages_total{format="legacy_json",outcome="refused"}'),
    ).toBe(2);
  });

  it("an encrypted packet in the hub node's name is refused (the default key is public)", async () => {
    device = await connect(t.mqttUrl);
    await device.publishAsync(meshTopic(), nodeInfo(HUB_NODE, 0x300, 'Pwned hub'), { qos: 1 });
    await heardAfter(t, device, 0x0b0b0b0b, 0x301, 'Signal 3');
    await expectHubNodeNameRefusedOnce(t);
  });
});

describe('MESH_TRUSTED_GATEWAYS', () => {
  let t: MqttTestHub;
  beforeAll(async () => {
    t = await startMqttHub(
      { MQTT_ALLOW_ANONYMOUS: 'true', MESH_TRUSTED_GATEWAYS: '!0000cafe, !0000d00d@farm-gw' },
      { users: [GATEWAY_USER] },
    );
    sayHubNode(t);
  });
  afterEach(endClients);
  afterAll(() => t.stop());

  it("takes a trusted gateway's unencrypted uplink, a bound one only from its login", async () => {
    const anonymous = await connect(t.mqttUrl);
    const plain = (from: number, id: number, name: string, gatewayId: string) =>
      nodeInfo(from, id, name, { psk: 'AA==', gatewayId });
    await anonymous.publishAsync(
      meshTopic('LongFast', '!0000cafe'),
      plain(0x0c0c0c0c, 0x400, 'Plain', '!0000cafe'),
      {
        qos: 1,
      },
    );
    await named(t, '!0c0c0c0c', 'Plain');
    // Bound to the MQTT user farm-gw: an anonymous device naming it is not believed.
    await anonymous.publishAsync(
      meshTopic('LongFast', '!0000d00d'),
      plain(0x0c0c0c0c, 0x401, 'Pwned', '!0000d00d'),
      {
        qos: 1,
      },
    );
    // The envelope must name the topic's gateway.
    await anonymous.publishAsync(
      meshTopic('LongFast', '!0000cafe'),
      plain(0x0c0c0c0c, 0x402, 'Pwned', '!0000beef'),
      {
        qos: 1,
      },
    );
    await anonymous.publishAsync(meshTopic(), nodeInfo(0x0e0e0e0e, 0x404, 'Signal'), { qos: 1 });
    await named(t, '!0e0e0e0e', 'Signal');
    expect(await nodeName(t, '!0c0c0c0c')).toBe('Plain');
    expect(await metric(t, 'meshhub_mqtt_mesh_refused_total{reason="unencrypted_untrusted"}')).toBe(2);
    const gateway = await connect(t.mqttUrl, {
      username: GATEWAY_USER.username,
      password: GATEWAY_USER.password,
    });
    await gateway.publishAsync(
      meshTopic('LongFast', '!0000d00d'),
      plain(0x0c0c0c0c, 0x403, 'Farm', '!0000d00d'),
      {
        qos: 1,
      },
    );
    await named(t, '!0c0c0c0c', 'Farm');
  });

  it("refuses the hub node's name even from a trusted gateway", async () => {
    const anonymous = await connect(t.mqttUrl);
    await anonymous.publishAsync(
      meshTopic('LongFast', '!0000cafe'),
      nodeInfo(HUB_NODE, 0x500, 'Pwned hub', { psk: 'AA==', gatewayId: '!0000cafe' }),
      { qos: 1 },
    );
    await heardAfter(t, anonymous, 0x0d0d0d0d, 0x501, 'Signal');
    await expectHubNodeNameRefusedOnce(t);
  });
});

describe('retained messages', () => {
  let t: MqttTestHub;
  beforeAll(async () => {
    t = await startMqttHub(
      { MQTT_ALLOW_ANONYMOUS: 'true', MQTT_RETAINED_MAX_MESSAGES: '3', MQTT_RETAINED_MAX_BYTES: '2048' },
      { users: [ADMIN] },
    );
    await mqttOf(t.hub).settle();
  });
  afterEach(endClients);
  afterAll(() => t.stop());

  const held = (origin: string) => metric(t, `meshhub_mqtt_retained_messages{origin="${origin}"}`);
  const heldBytes = (origin: string) => metric(t, `meshhub_mqtt_retained_bytes{origin="${origin}"}`);

  it('keeps nothing retained on msh/# or meshhub/ingest/#: a gateway subscribing later gets no replay', async () => {
    const device = await connect(t.mqttUrl);
    const junk = Buffer.alloc(200 * 1024, 0x42);
    for (let i = 0; i < 5; i++)
      await device.publishAsync(`msh/EU_868/2/e/LongFast/!0000be0${i}`, junk, { qos: 1, retain: true });
    await device.publishAsync('meshhub/ingest/readings', '{"node_id":"x"}', { qos: 1, retain: true });

    // A gateway (and an admin) subscribing now: the hub's retained `meshhub/status` comes after
    // any retained `msh/…` would have (the filters' order), so its arrival ends the wait.
    const admin = await connect(t.mqttUrl, { username: ADMIN.username, password: ADMIN.password });
    const replayed: string[] = [];
    admin.on('message', (topic) => replayed.push(topic));
    await admin.subscribeAsync(['msh/#', 'meshhub/status']);
    await waitFor(() => (replayed.length ? true : undefined), 5_000, 'the retained meshhub/status');
    expect(replayed).toEqual(['meshhub/status']);
    const gateway = await connect(t.mqttUrl);
    const downlink = collect(gateway, 'msh/#');
    await downlink.ready;
    // A live publish after the subscription reaches it, not retained; nothing came before it.
    await device.publishAsync('msh/EU_868/2/e/LongFast/!0000be09', Buffer.from('live'), { qos: 1 });
    await waitFor(() => (downlink.messages.length ? true : undefined), 5_000, 'the live publish');
    expect(downlink.messages).toEqual([
      { topic: 'msh/EU_868/2/e/LongFast/!0000be09', payload: 'live', retain: false },
    ]);
    expect(await metric(t, 'meshhub_mqtt_retained_refused_total{reason="ingest_topic"}')).toBe(6);
    expect(await held('clients')).toBe(0);
    expect(await heldBytes('clients')).toBe(0);
  });

  it("bounds clients' retained messages elsewhere, lets them be deleted, and counts the hub's apart", async () => {
    const persistence = mqttOf(t.hub) as unknown as { broker: { aedes: { persistence: RetainedSource } } };
    const retainedTopics = () => retainedOf(persistence.broker.aedes.persistence, 'homeassistant/status');
    const hubBefore = await held('hub');
    const admin = await connect(t.mqttUrl, { username: ADMIN.username, password: ADMIN.password });
    // homeassistant/status is the one topic outside ingestion a client may publish (admins and integrations).
    await admin.publishAsync('homeassistant/status', Buffer.alloc(4096, 0x41), { qos: 1, retain: true });
    expect(await retainedTopics()).toEqual([]);
    expect(await metric(t, 'meshhub_mqtt_retained_refused_total{reason="limit"}')).toBe(1);
    expect(await held('clients')).toBe(0);

    await admin.publishAsync('homeassistant/status', 'online', { qos: 1, retain: true });
    expect(await held('clients')).toBe(1);
    expect(await heldBytes('clients')).toBe('online'.length + 'homeassistant/status'.length);
    expect(await retainedTopics()).toEqual(['online']);
    // An empty payload deletes it, as MQTT says, and frees its share.
    await admin.publishAsync('homeassistant/status', Buffer.alloc(0), { qos: 1, retain: true });
    expect(await held('clients')).toBe(0);
    expect(await heldBytes('clients')).toBe(0);
    expect(await retainedTopics()).toEqual([]);
    // The hub's own retained state is never refused and is counted apart.
    expect(hubBefore).toBeGreaterThanOrEqual(1);
    expect(await held('hub')).toBe(hubBefore);
    expect(await heldBytes('hub')).toBeGreaterThan(0);
  });
});

interface RetainedSource {
  createRetainedStream(pattern: string): AsyncIterable<{ payload: Buffer }>;
}

async function retainedOf(persistence: RetainedSource, pattern: string): Promise<string[]> {
  const out: string[] = [];
  for await (const packet of persistence.createRetainedStream(pattern)) out.push(packet.payload.toString());
  return out;
}

describe('settings', () => {
  it('MESH_TRUSTED_GATEWAYS trusts nobody by default; retained bounds are modest; bad values are named', () => {
    const c = loadConfig({});
    expect(c.MESH_TRUSTED_GATEWAYS.entries).toEqual([]);
    expect(c.MESH_TRUSTED_GATEWAYS.trusts('!0000beef', undefined)).toBe(false);
    expect(c).toMatchObject({ MQTT_RETAINED_MAX_MESSAGES: 100, MQTT_RETAINED_MAX_BYTES: 1_048_576 });
    const bound = loadConfig({ MESH_TRUSTED_GATEWAYS: '!a1b2c3d4@farm-gw' }).MESH_TRUSTED_GATEWAYS;
    expect(bound.trusts('!a1b2c3d4', 'farm-gw')).toBe(true);
    expect(bound.trusts('!a1b2c3d4', 'other')).toBe(false);
    let problems: string[] = [];
    try {
      loadConfig({ MESH_TRUSTED_GATEWAYS: '!a1b2c3d4, gateway-2', MQTT_RETAINED_MAX_MESSAGES: '-1' });
    } catch (e) {
      if (e instanceof ConfigError) problems = e.problems;
    }
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^MESH_TRUSTED_GATEWAYS: "gateway-2" is not a gateway id/),
        expect.stringMatching(/^MQTT_RETAINED_MAX_MESSAGES: /),
      ]),
    );
  });
});
