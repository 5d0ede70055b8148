/**
 * Who may connect, publish and subscribe, against the real hub's broker: username/password from
 * an scrypt-hashed user store, hub-issued JWTs as the password, anonymous off by default, and the
 * per-role ACLs (device, integration, admin); refusals are counted and no secret reaches the log.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/hub.js';
import {
  collect,
  connect,
  endClients,
  grantedQos,
  type LocalIssuer,
  localIssuer,
  type MqttTestHub,
  metricValue,
  refusedCode,
  startMqttHub,
} from './helpers.js';

const PASSWORDS = {
  sensor: 'correct horse battery',
  ha: 'integration secret 42',
  root: 'admin pass phrase',
  viewer: 'only a subscriber',
};
let t: MqttTestHub;
let issuer: LocalIssuer;
const logs: string[] = [];

beforeAll(async () => {
  issuer = await localIssuer();
  const users = [
    { username: 'sensor', password: PASSWORDS.sensor, roles: ['device'] },
    { username: 'ha', password: PASSWORDS.ha, roles: ['integration'] },
    { username: 'root', password: PASSWORDS.root, roles: ['admin'] },
    { username: 'viewer', password: PASSWORDS.viewer, roles: ['subscriber'] },
  ];
  t = await startMqttHub({}, { users, tokenVerifier: issuer.verifier }, logs);
});
afterEach(endClients);
afterAll(() => t.stop());

const as = (user: keyof typeof PASSWORDS) =>
  connect(t.mqttUrl, { username: user, password: PASSWORDS[user] });

const metric = (name: string, labels: string) => metricValue(t.baseUrl, name, labels);

function closed(client: Awaited<ReturnType<typeof connect>>): Promise<void> {
  return new Promise((resolve) => client.once('close', () => resolve()));
}

/** Publishes `reading` as JSON on the readings ingestion topic (QoS 1 by default: resolves on the PUBACK). */
function publishReading(
  client: Awaited<ReturnType<typeof connect>>,
  reading: Record<string, unknown>,
  qos: 0 | 1 = 1,
): Promise<unknown> {
  return client.publishAsync('meshhub/ingest/readings', JSON.stringify(reading), { qos });
}

describe('logging in', () => {
  it('refuses anonymous clients unless MQTT_ALLOW_ANONYMOUS is set (CONNACK 5)', async () => {
    expect(await refusedCode(t.mqttUrl)).toBe(5);
    expect(
      await metric('meshhub_mqtt_auth_failures_total', 'reason="anonymous_not_allowed"'),
    ).toBeGreaterThanOrEqual(1);
  });

  it('takes a username and password checked against the user store', async () => {
    const client = await as('sensor');
    expect(client.connected).toBe(true);
  });

  it('refuses a wrong password and an unknown user alike (CONNACK 4)', async () => {
    expect(await refusedCode(t.mqttUrl, { username: 'sensor', password: 'wrong' })).toBe(4);
    expect(await refusedCode(t.mqttUrl, { username: 'nobody', password: PASSWORDS.sensor })).toBe(4);
  });

  it('refuses a user without any MQTT role with the CONNACK of a wrong password (4); the metric tells them apart', async () => {
    const right = await refusedCode(t.mqttUrl, { username: 'viewer', password: PASSWORDS.viewer });
    const wrong = await refusedCode(t.mqttUrl, { username: 'viewer', password: 'not the password' });
    expect(right).toBe(4);
    expect(wrong).toBe(right);
    expect(await metric('meshhub_mqtt_auth_failures_total', 'reason="no_mqtt_role"')).toBeGreaterThanOrEqual(
      1,
    );
  });

  it('takes a hub-issued JWT as the password, roles from its claims', async () => {
    const token = await issuer.token(['device']);
    const client = await connect(t.mqttUrl, { username: 'anything', password: token });
    await publishReading(client, { node_id: 'jwt-sensor', temperature_c: 3 });
    expect(
      t.hub.store.db.prepare("SELECT count(*) AS n FROM readings WHERE node_id = 'jwt-sensor'").get(),
    ).toEqual({
      n: 1,
    });
  });

  it('refuses an expired token and a token from an untrusted issuer (CONNACK 4)', async () => {
    const expired = await issuer.token(['admin'], { expiresIn: Math.floor(Date.now() / 1000) - 120 });
    const foreign = await issuer.token(['admin'], { issuer: 'https://evil.example' });
    expect(await refusedCode(t.mqttUrl, { username: 'x', password: expired })).toBe(4);
    expect(await refusedCode(t.mqttUrl, { username: 'x', password: foreign })).toBe(4);
  });

  it('logs a line for a bad readings payload on MQTT, beside the counter', async () => {
    const client = await as('sensor');
    await client.publishAsync('meshhub/ingest/readings', '{"node_id": "x", "temperature_c": }', { qos: 1 });
    expect(logs.some((line) => line.includes('readings payload is not valid JSON'))).toBe(true);
  });

  it('never writes a password or token into the log', async () => {
    await refusedCode(t.mqttUrl, { username: 'sensor', password: 'a-wrong-password-123' });
    const token = await issuer.token(['integration']);
    await connect(t.mqttUrl, { username: 'x', password: token });
    const all = logs.join('\n');
    expect(all).toContain('mqtt login refused');
    for (const secret of [...Object.values(PASSWORDS), 'a-wrong-password-123', token])
      expect(all).not.toContain(secret);
  });
});

describe('a device', () => {
  it('publishes to ingestion topics', async () => {
    const client = await as('sensor');
    await publishReading(client, { node_id: 'dev-1', humidity_percent: 40 });
    await client.publishAsync('msh/EU_868/2/map/', Buffer.from([1, 2, 3]), { qos: 1 });
  });

  it('is disconnected for publishing on the hub event topics, and changes nothing there', async () => {
    const watcher = await as('root');
    const seen = collect(watcher, 'meshhub/readings/!a1b2c3d4');
    await seen.ready;
    const client = await as('sensor');
    const gone = closed(client);
    await client.publishAsync('meshhub/readings/!a1b2c3d4', JSON.stringify({ temperature_c: 99 }), {
      qos: 0,
    });
    await gone;
    expect(await metric('meshhub_mqtt_denied_total', 'action="publish"')).toBeGreaterThanOrEqual(1);
    // A fresh subscriber sees no such retained message either.
    const later = await as('root');
    const retained = collect(later, 'meshhub/readings/!a1b2c3d4');
    await retained.ready;
    await (await as('root')).subscribeAsync('meshhub/none');
    expect(seen.messages).toEqual([]);
    expect(retained.messages).toEqual([]);
  });

  it('may not subscribe to the hub event topics (SUBACK 0x80), but stays connected', async () => {
    const client = await as('sensor');
    expect(await grantedQos(client, ['meshhub/#', 'homeassistant/#', '#'])).toEqual([128, 128, 128]);
    expect(client.connected).toBe(true);
    // Meshtastic gateways subscribe to their root for downlink: allowed.
    expect(await grantedQos(client, ['msh/EU_868/2/e/LongFast/#'])).toEqual([0]);
  });
});

describe('an integration', () => {
  it('subscribes to the hub event topics and gets the retained state', async () => {
    const device = await as('sensor');
    await publishReading(device, { node_id: 'porch', temperature_c: 14.5 });
    const ha = await as('ha');
    const readings = collect(ha, 'meshhub/readings/#');
    await readings.ready;
    const message = await waitFor(() => readings.messages.find((m) => m.topic === 'meshhub/readings/porch'));
    expect(JSON.parse(message.payload)).toMatchObject({ node_id: 'porch', temperature_c: 14.5 });
  });

  it('may not subscribe to raw mesh traffic or $SYS, nor use wildcards reaching past its topics', async () => {
    const ha = await as('ha');
    expect(await grantedQos(ha, ['msh/#', '$SYS/#', '+/readings/#', '#'])).toEqual([128, 128, 128, 128]);
    expect(await metric('meshhub_mqtt_denied_total', 'action="subscribe"')).toBeGreaterThanOrEqual(4);
  });

  it('is disconnected for publishing readings', async () => {
    const ha = await as('ha');
    const gone = closed(ha);
    await publishReading(ha, { node_id: 'x', temperature_c: 1 }, 0);
    await gone;
    expect(t.hub.store.db.prepare("SELECT count(*) AS n FROM readings WHERE node_id = 'x'").get()).toEqual({
      n: 0,
    });
  });

  it("may publish Home Assistant's own status (its birth message)", async () => {
    const ha = await as('ha');
    await ha.publishAsync('homeassistant/status', 'online', { qos: 1 });
    expect(ha.connected).toBe(true);
  });
});

describe('an admin', () => {
  it('publishes readings and subscribes to everything', async () => {
    const root = await as('root');
    expect(await grantedQos(root, ['#', '$SYS/#'])).toEqual([0, 0]);
    await publishReading(root, { node_id: 'adm', pm25_ugm3: 4 });
  });

  it('still may not publish on the hub event topics', async () => {
    const root = await as('root');
    const gone = closed(root);
    await root.publishAsync('meshhub/status', 'offline', { qos: 0 });
    await gone;
  });
});
