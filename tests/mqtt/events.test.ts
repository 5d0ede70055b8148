/**
 * Events out of the real hub, seen by an MQTT subscriber over the wire: retained
 * `meshhub/status`, `meshhub/readings/<node>` (the latest merged reading), `meshhub/nodes/<node>`
 * and its availability, Home Assistant discovery configs with the right device classes and
 * units, and all of it republished after a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mqttOf, waitFor } from '../helpers/hub.js';
import {
  connect,
  endClients,
  envelope,
  type LocalIssuer,
  localIssuer,
  type MqttTestHub,
  meshTopic,
  startMqttHub,
} from './helpers.js';

let t: MqttTestHub;
let issuer: LocalIssuer;
/** Every message an admin subscriber to `#` has received: the latest payload and a count per topic. */
let state: Watcher;

interface Watcher {
  latest: Map<string, string>;
  count: Map<string, number>;
}

async function watchAll(url: string): Promise<Watcher> {
  const client = await connect(url, { username: 'admin', password: await issuer.token(['admin']) });
  const w: Watcher = { latest: new Map(), count: new Map() };
  client.on('message', (topic, payload) => {
    w.latest.set(topic, payload.toString());
    w.count.set(topic, (w.count.get(topic) ?? 0) + 1);
  });
  await client.subscribeAsync('#');
  return w;
}

beforeAll(async () => {
  issuer = await localIssuer();
  t = await startMqttHub(
    { MQTT_ALLOW_ANONYMOUS: 'true', NODE_OFFLINE_AFTER: '3s' },
    { tokenVerifier: issuer.verifier },
  );
  state = await watchAll(t.mqttUrl);
});
afterAll(async () => {
  await endClients();
  await t.stop();
});

async function ingest(url: string, body: unknown): Promise<void> {
  const device = await connect(url);
  await device.publishAsync('meshhub/ingest/readings', JSON.stringify(body), { qos: 1 });
  await device.endAsync();
}

const json = (topic: string, w: Watcher = state) => {
  const payload = w.latest.get(topic);
  return payload === undefined ? undefined : JSON.parse(payload);
};

describe('retained hub events', () => {
  it('says the hub is online', async () => {
    await waitFor(() => state.latest.get('meshhub/status') === 'online');
  });

  it('publishes the latest merged reading of a node after each commit', async () => {
    const now = Date.now();
    await ingest(t.mqttUrl, {
      node_id: 'orchard',
      timestamp: new Date(now - 2_000).toISOString(),
      temperature_c: 11.5,
    });
    await ingest(t.mqttUrl, {
      node_id: 'orchard',
      timestamp: new Date(now - 1_000).toISOString(),
      humidity_percent: 80,
    });
    const message = await waitFor(() => {
      const m = json('meshhub/readings/orchard');
      return m?.humidity_percent === 80 ? m : undefined;
    });
    expect(message).toEqual({
      node_id: 'orchard',
      timestamp: new Date(now - 1_000).toISOString(),
      temperature_c: 11.5,
      humidity_percent: 80,
    });
  });

  it('publishes the node record and its availability', async () => {
    const user = toBinary(
      Mesh.UserSchema,
      create(Mesh.UserSchema, {
        longName: 'Barn roof',
        shortName: 'BARN',
        hwModel: Mesh.HardwareModel.RAK4631,
      }),
    );
    const device = await connect(t.mqttUrl);
    await device.publishAsync(
      meshTopic(),
      Buffer.from(
        envelope({ from: 0x0a0b0c0d, id: 77, portnum: Portnums.PortNum.NODEINFO_APP, payload: user }),
      ),
      { qos: 1 },
    );
    const node = await waitFor(() => json('meshhub/nodes/!0a0b0c0d'));
    expect(node).toMatchObject({
      node_id: '!0a0b0c0d',
      long_name: 'Barn roof',
      short_name: 'BARN',
      hw_model: 'RAK4631',
    });
    await waitFor(() => state.latest.get('meshhub/nodes/!0a0b0c0d/availability') === 'online');
  });

  it('flips a node to offline once it has not been heard for NODE_OFFLINE_AFTER', async () => {
    await ingest(t.mqttUrl, { node_id: 'fading', temperature_c: 3 });
    const topic = 'meshhub/nodes/fading/availability';
    await waitFor(() => state.latest.get(topic) === 'online');
    await waitFor(() => state.latest.get(topic) === 'offline', 15_000, 'the node to go offline');
    // Heard again: online again.
    await ingest(t.mqttUrl, { node_id: 'fading', temperature_c: 4 });
    await waitFor(() => state.latest.get(topic) === 'online');
  });
});

describe('Home Assistant discovery', () => {
  it('configures one sensor per metric with its device class, unit and state template', async () => {
    await ingest(t.mqttUrl, {
      node_id: '!c0ffee01',
      temperature_c: 20.5,
      humidity_percent: 55,
      pressure_pa: 100_800,
      wind_speed_ms: 3.2,
      wind_direction: 225,
      pm25_ugm3: 8,
      pm10_ugm3: 14,
      gas_resistance_kohm: 120.5,
    });
    const prefix = 'homeassistant/sensor/c0ffee01/';
    await waitFor(() => [...state.latest.keys()].filter((k) => k.startsWith(prefix)).length === 8);
    const expected: Record<string, { device_class?: string; unit: string; state_class: string }> = {
      temperature_c: { device_class: 'temperature', unit: '°C', state_class: 'measurement' },
      humidity_percent: { device_class: 'humidity', unit: '%', state_class: 'measurement' },
      pressure_pa: { device_class: 'pressure', unit: 'Pa', state_class: 'measurement' },
      wind_speed_ms: { device_class: 'wind_speed', unit: 'm/s', state_class: 'measurement' },
      wind_direction: { device_class: 'wind_direction', unit: '°', state_class: 'measurement_angle' },
      pm25_ugm3: { device_class: 'pm25', unit: 'µg/m³', state_class: 'measurement' },
      pm10_ugm3: { device_class: 'pm10', unit: 'µg/m³', state_class: 'measurement' },
      gas_resistance_kohm: { unit: 'kΩ', state_class: 'measurement' },
    };
    for (const [field, spec] of Object.entries(expected)) {
      const config = json(`${prefix}${field}/config`);
      expect(config).toMatchObject({
        unique_id: `meshhub_c0ffee01_${field}`,
        state_topic: 'meshhub/readings/!c0ffee01',
        value_template: `{{ value_json.${field} }}`,
        unit_of_measurement: spec.unit,
        state_class: spec.state_class,
        availability: [{ topic: 'meshhub/status' }, { topic: 'meshhub/nodes/!c0ffee01/availability' }],
        availability_mode: 'all',
        device: { identifiers: ['meshhub_c0ffee01'], name: '!c0ffee01', manufacturer: 'Meshtastic' },
      });
      expect(config.device_class).toBe(spec.device_class);
    }
    // The template's field is in the state topic's payload.
    const reading = json('meshhub/readings/!c0ffee01');
    for (const field of Object.keys(expected)) expect(reading[field]).toEqual(expect.any(Number));
  });

  it('gives a plain sensor id a safe discovery id', async () => {
    await ingest(t.mqttUrl, { node_id: 'shed.east:2', temperature_c: 9 });
    const configs = await waitFor(() =>
      [...state.latest].find(
        ([k, v]) => k.endsWith('/config') && JSON.parse(v).state_topic === 'meshhub/readings/shed.east:2',
      ),
    );
    expect(configs[0]).toMatch(/^homeassistant\/sensor\/shed_east_2_[0-9a-f]{6}\/temperature_c\/config$/);
    expect(JSON.parse(configs[1]).device).toMatchObject({ name: 'shed.east:2', model: 'Sensor' });
  });

  it('resends the configs when Home Assistant says it is online (its birth message)', async () => {
    await ingest(t.mqttUrl, { node_id: 'birth', temperature_c: 9 });
    const topic = 'homeassistant/sensor/birth/temperature_c/config';
    await waitFor(() => state.count.get(topic) === 1);
    // What Home Assistant publishes when it (re)starts; it needs the integration (or admin) role.
    const ha = await connect(t.mqttUrl, { username: 'ha', password: await issuer.token(['integration']) });
    await ha.publishAsync('homeassistant/status', 'online', { qos: 1 });
    await waitFor(() => state.count.get(topic) === 2, 10_000, 'the config to be sent again');
  });
});

describe('switches and restarts', () => {
  it('publishes no discovery with HA_DISCOVERY=false', async () => {
    const quiet = await startMqttHub(
      { MQTT_ALLOW_ANONYMOUS: 'true', HA_DISCOVERY: 'false' },
      { tokenVerifier: issuer.verifier },
    );
    try {
      const w = await watchAll(quiet.mqttUrl);
      await ingest(quiet.mqttUrl, { node_id: 'quiet', temperature_c: 1 });
      await waitFor(() => w.latest.has('meshhub/nodes/quiet/availability'));
      await mqttOf(quiet.hub).settle();
      expect(w.latest.has('meshhub/readings/quiet')).toBe(true);
      expect([...w.latest.keys()].filter((topic) => topic.startsWith('homeassistant/'))).toEqual([]);
    } finally {
      await quiet.stop();
    }
  });

  it('tells subscribers offline on the way down, and republishes the state after a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-mqtt-restart-'));
    try {
      const first = await startMqttHub(
        { MQTT_ALLOW_ANONYMOUS: 'true', DATA_DIR: dataDir },
        { tokenVerifier: issuer.verifier },
      );
      const w1 = await watchAll(first.mqttUrl);
      await ingest(first.mqttUrl, { node_id: 'survivor', temperature_c: 22 });
      await waitFor(() => json('meshhub/readings/survivor', w1));
      await first.stop();
      expect(w1.latest.get('meshhub/status')).toBe('offline');

      const second = await startMqttHub(
        { MQTT_ALLOW_ANONYMOUS: 'true', DATA_DIR: dataDir },
        { tokenVerifier: issuer.verifier },
      );
      try {
        const w2 = await watchAll(second.mqttUrl);
        await waitFor(() => w2.latest.has('homeassistant/sensor/survivor/temperature_c/config'));
        expect(json('meshhub/readings/survivor', w2)).toMatchObject({
          node_id: 'survivor',
          temperature_c: 22,
        });
        expect(w2.latest.get('meshhub/status')).toBe('online');
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
