/**
 * Meshtastic MQTT uplink into the real hub: ServiceEnvelopes encrypted with the default key and
 * with a custom key, legacy JSON, dedupe across gateways, and bad input (wrong key, malformed
 * protobuf) that is counted and never stops the broker or loses other readings.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { packetMeta } from '../../src/domain/mesh.js';
import { getJson, waitFor } from '../helpers/hub.js';
import {
  connect,
  endClients,
  envelope,
  envelopeOf,
  envTelemetryEnvelope,
  latestOf,
  type MqttTestHub,
  meshTopic,
  metricValue,
  startMqttHub,
} from './helpers.js';

const FARM_KEY = Buffer.alloc(32, 7).toString('base64');
let t: MqttTestHub;

beforeAll(async () => {
  // !0000beef (the helpers' gateway) is trusted: unencrypted envelopes and legacy JSON are read
  // (mesh-guards.test.ts covers the gateways that are not).
  t = await startMqttHub({
    MQTT_ALLOW_ANONYMOUS: 'true',
    MESH_CHANNEL_KEYS: `Farm=${FARM_KEY}`,
    MESH_TRUSTED_GATEWAYS: '!0000beef',
  });
});
afterEach(endClients);
afterAll(() => t.stop());

function rowsOf(nodeId: string): Array<Record<string, number | string | null>> {
  return t.hub.store.db.prepare('SELECT * FROM readings WHERE node_id = ? ORDER BY ts').all(nodeId) as Array<
    Record<string, number | string | null>
  >;
}

const metric = (name: string, labels: string) => metricValue(t.baseUrl, name, labels);

describe('ServiceEnvelope uplink', () => {
  it('decrypts a default-key (AQ==) LongFast packet and stores the reading before the PUBACK', async () => {
    const client = await connect(t.mqttUrl);
    const payload = envTelemetryEnvelope(0xa1b2c3d4, 0x1001, {
      temperature: 21.5,
      relativeHumidity: 48,
      barometricPressure: 1013.25,
    });
    await client.publishAsync(meshTopic(), Buffer.from(payload), { qos: 1 });
    // The PUBACK has arrived: the reading must already be committed.
    const rows = rowsOf('!a1b2c3d4');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ temperature_c: 21.5, humidity_percent: 48, pressure_pa: 101325 });
    expect(await latestOf(t.baseUrl, '!a1b2c3d4')).toMatchObject({
      temperature_c: 21.5,
      pressure_pa: 101325,
    });
  });

  it('decrypts with a configured custom 32-byte channel key', async () => {
    const client = await connect(t.mqttUrl);
    const payload = envTelemetryEnvelope(
      0x0badcafe,
      0x2002,
      { windSpeed: 4.5, windDirection: 270 },
      {
        channel: 'Farm',
        psk: FARM_KEY,
      },
    );
    await client.publishAsync(meshTopic('Farm'), Buffer.from(payload), { qos: 1 });
    expect(rowsOf('!0badcafe')[0]).toMatchObject({ wind_speed_ms: 4.5, wind_direction: 270 });
  });

  it('takes a packet on an unencrypted channel (decoded in the envelope) from a trusted gateway', async () => {
    const client = await connect(t.mqttUrl);
    const payload = envTelemetryEnvelope(0x00c0ffee, 0x3003, { temperature: -3.5 }, { psk: 'AA==' });
    await client.publishAsync(meshTopic(), Buffer.from(payload), { qos: 1 });
    expect(rowsOf('!00c0ffee')[0]).toMatchObject({ temperature_c: -3.5 });
  });

  it('counts a packet it cannot decrypt, stores nothing, and goes on with the next', async () => {
    const before = await metric('meshhub_mqtt_ingest_messages_total', 'outcome="undecryptable"');
    const client = await connect(t.mqttUrl);
    const secret = Buffer.alloc(16, 9).toString('base64');
    const bad = envTelemetryEnvelope(
      0x0defaced,
      0x4004,
      { temperature: 99 },
      { channel: 'Secret', psk: secret },
    );
    await client.publishAsync(meshTopic('Secret'), Buffer.from(bad), { qos: 1 });
    const good = envTelemetryEnvelope(0x0defaced, 0x4005, { temperature: 12 });
    await client.publishAsync(meshTopic(), Buffer.from(good), { qos: 1 });
    const rows = rowsOf('!0defaced');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ temperature_c: 12 });
    expect(await metric('meshhub_mqtt_ingest_messages_total', 'outcome="undecryptable"')).toBe(before + 1);
    expect(client.connected).toBe(true);
  });

  it('counts malformed protobuf and a telemetry payload that does not decode; the connection stays', async () => {
    const client = await connect(t.mqttUrl);
    await client.publishAsync(meshTopic(), Buffer.from([0xff, 0xff, 0xff, 0x07, 0x00, 0x13]), { qos: 1 });
    const junkTelemetry = envelope({
      from: 0x0aaaaaaa,
      id: 0x5005,
      portnum: Portnums.PortNum.TELEMETRY_APP,
      payload: Uint8Array.from([0x0a, 0xff, 0xff]),
    });
    await client.publishAsync(meshTopic(), Buffer.from(junkTelemetry), { qos: 1 });
    expect(
      await metric('meshhub_mqtt_ingest_messages_total', 'outcome="malformed_envelope"'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await metric('meshhub_mqtt_ingest_messages_total', 'outcome="malformed_payload"'),
    ).toBeGreaterThanOrEqual(1);
    expect(rowsOf('!0aaaaaaa')).toHaveLength(0);
    expect(client.connected).toBe(true);
    const good = envTelemetryEnvelope(0x0aaaaaaa, 0x5006, { temperature: 5 });
    await client.publishAsync(meshTopic(), Buffer.from(good), { qos: 1 });
    expect(rowsOf('!0aaaaaaa')).toHaveLength(1);
  });

  it('counts an ACK whose Routing payload does not decode, tells messaging nothing, and keeps the connection', async () => {
    const routed: unknown[] = [];
    t.hub.bus.on('test-routing', 'mesh.routing', (r) => routed.push(r));
    try {
      const client = await connect(t.mqttUrl);
      const before = await metric('meshhub_mqtt_ingest_messages_total', 'outcome="malformed_payload"');
      const junkAck = create(Mesh.MeshPacketSchema, {
        from: 0x0bbbbbbb,
        to: 0x0ccccccc,
        id: 0x5101,
        payloadVariant: {
          case: 'decoded',
          value: {
            portnum: Portnums.PortNum.ROUTING_APP,
            payload: Uint8Array.from([0x18, 0xff]),
            requestId: 42,
          },
        },
      });
      await client.publishAsync(meshTopic(), Buffer.from(envelopeOf(junkAck)), { qos: 1 });
      expect(await metric('meshhub_mqtt_ingest_messages_total', 'outcome="malformed_payload"')).toBe(
        before + 1,
      );
      expect(routed).toEqual([]);
      expect(client.connected).toBe(true);
    } finally {
      t.hub.bus.removeOwner('test-routing');
    }
  });

  it('stores a packet heard through three gateways once, even with different rx_time', async () => {
    const client = await connect(t.mqttUrl);
    const now = Math.floor(Date.now() / 1000);
    const before = await metric('meshhub_mqtt_ingest_messages_total', 'outcome="duplicate"');
    await Promise.all(
      ['!00000001', '!00000002', '!00000003'].map((gateway, i) =>
        client.publishAsync(
          meshTopic('LongFast', gateway),
          Buffer.from(
            envTelemetryEnvelope(
              0x11112222,
              0x6006,
              { temperature: 17.25 },
              { gatewayId: gateway, rxTimeSeconds: now - i },
            ),
          ),
          { qos: 1 },
        ),
      ),
    );
    expect(rowsOf('!11112222')).toHaveLength(1);
    expect(await metric('meshhub_mqtt_ingest_messages_total', 'outcome="duplicate"')).toBe(before + 2);
  });

  it('feeds position and node info into the node table', async () => {
    const client = await connect(t.mqttUrl);
    const position = toBinary(
      Mesh.PositionSchema,
      create(Mesh.PositionSchema, { latitudeI: 473_769_000, longitudeI: 85_417_000, altitude: 410 }),
    );
    const user = toBinary(
      Mesh.UserSchema,
      create(Mesh.UserSchema, {
        longName: 'Hilltop station',
        shortName: 'HILL',
        hwModel: Mesh.HardwareModel.HELTEC_V3,
      }),
    );
    await client.publishAsync(
      meshTopic(),
      Buffer.from(
        envelope({ from: 0x33334444, id: 0x7007, portnum: Portnums.PortNum.POSITION_APP, payload: position }),
      ),
      { qos: 1 },
    );
    await client.publishAsync(
      meshTopic(),
      Buffer.from(
        envelope({ from: 0x33334444, id: 0x7008, portnum: Portnums.PortNum.NODEINFO_APP, payload: user }),
      ),
      { qos: 1 },
    );
    const node = await waitFor(async () => {
      const r = await getJson(`${t.baseUrl}/api/v1/nodes`);
      const n = r.body.data.find((x: { node_id: string }) => x.node_id === '!33334444');
      return n?.long_name ? n : undefined;
    });
    expect(node).toMatchObject({
      long_name: 'Hilltop station',
      short_name: 'HILL',
      hw_model: 'HELTEC_V3',
      latitude: 47.3769,
      longitude: 8.5417,
      altitude: 410,
    });
  });
});

describe('legacy JSON uplink (/2/json/) from a trusted gateway', () => {
  it('stores telemetry with pm100 as PM10 and barometric_pressure in Pa', async () => {
    const client = await connect(t.mqttUrl);
    const message = {
      id: 0x8008,
      from: 0x55556666,
      to: 0xffffffff,
      channel: 0,
      type: 'telemetry',
      sender: '!0000beef',
      timestamp: Math.floor(Date.now() / 1000),
      payload: {
        temperature: 19.5,
        relative_humidity: 61,
        barometric_pressure: 998.5,
        pm10: 3,
        pm25: 7,
        pm100: 11,
      },
    };
    await client.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', JSON.stringify(message), { qos: 1 });
    const rows = rowsOf('!55556666');
    expect(rows).toHaveLength(1);
    // pm10 in Meshtastic JSON is pm10_standard, i.e. PM1.0: not stored; pm100 is PM10.
    expect(rows[0]).toMatchObject({
      temperature_c: 19.5,
      humidity_percent: 61,
      pressure_pa: 99850,
      pm25_ugm3: 7,
      pm10_ugm3: 11,
    });
  });

  it('dedupes JSON and protobuf copies of the same packet', async () => {
    const client = await connect(t.mqttUrl);
    await client.publishAsync(
      meshTopic(),
      Buffer.from(envTelemetryEnvelope(0x77778888, 0x9009, { temperature: 8 })),
      { qos: 1 },
    );
    const json = {
      id: 0x9009,
      from: 0x77778888,
      type: 'telemetry',
      payload: { temperature: 8 },
      timestamp: 0,
    };
    await client.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', JSON.stringify(json), { qos: 1 });
    expect(rowsOf('!77778888')).toHaveLength(1);
  });

  it('counts invalid JSON and keeps the connection', async () => {
    const client = await connect(t.mqttUrl);
    await client.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', '{"from": ', { qos: 1 });
    await client.publishAsync('msh/EU_868/2/json/LongFast/!0000beef', '[1,2,3]', { qos: 1 });
    expect(
      await metric('meshhub_mqtt_ingest_messages_total', 'format="legacy_json",outcome="malformed_json"'),
    ).toBe(2);
    expect(client.connected).toBe(true);
  });
});

describe('the hub radio and MQTT share one dedupe', () => {
  it('does not store a packet again that the radio path already took', async () => {
    // The radio actor hands what it hears to the same fan-out the broker uses (the module context's `mesh`).
    const heard = {
      from: 0x9999aaaa,
      to: 0xffffffff,
      id: 0xa00a,
      portnum: 67,
      receivedAt: Date.now(),
      meta: packetMeta({ hopLimit: 3 }),
      payload: new Uint8Array(0),
      readings: [],
      nodes: [],
    };
    expect(t.hub.mesh.deliver(heard, 'radio')).toBe(true);
    const client = await connect(t.mqttUrl);
    await client.publishAsync(
      meshTopic(),
      Buffer.from(envTelemetryEnvelope(0x9999aaaa, 0xa00a, { temperature: 1 })),
      { qos: 1 },
    );
    const db = new Database(`${t.dataDir}/meshhub.sqlite`, { readonly: true });
    const n = db.prepare('SELECT count(*) AS n FROM readings WHERE node_id = ?').get('!9999aaaa') as {
      n: number;
    };
    db.close();
    expect(n.n).toBe(0);
  });
});

describe('the plain JSON topic meshhub/ingest/readings', () => {
  it('stores the good readings of an array, counts the bad ones by reason, and keeps the connection', async () => {
    const client = await connect(t.mqttUrl);
    const before = await metric('meshhub_ingest_rejected_readings_total', 'reason="out_of_range"');
    await client.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify([
        { node_id: 'json-a', timestamp: '2026-03-01T10:00:00Z', temperature_c: 4.5 },
        { node_id: 'json-a', timestamp: '2026-03-01T10:01:00Z', temperature_c: 400 },
        { node_id: 'json-a', timestamp: '2026-03-01T10:02:00Z', temperature_c: 'cold' },
        { node_id: 'json-a', timestamp: '2099-01-01T00:00:00Z', temperature_c: 5 },
        { node_id: 'json-a', timestamp: '2026-03-01T10:04:00Z', humidity_percent: 63, mood: 'sunny' },
        { node_id: 'json-a', timestamp: '2026-03-01T10:05:00Z', humidity_percent: 64 },
      ]),
      { qos: 1 },
    );
    expect(rowsOf('json-a')).toHaveLength(2);
    expect(await metric('meshhub_ingest_rejected_readings_total', 'reason="out_of_range"')).toBe(before + 1);
    expect(
      await metric('meshhub_ingest_rejected_readings_total', 'reason="timestamp_in_future"'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await metric('meshhub_ingest_rejected_readings_total', 'reason="unknown_field"'),
    ).toBeGreaterThanOrEqual(1);
    expect(client.connected).toBe(true);
  });

  it('takes a single object, and counts a payload that is not JSON', async () => {
    const client = await connect(t.mqttUrl);
    await client.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'json-b', pm25_ugm3: 12 }),
      { qos: 1 },
    );
    await client.publishAsync('meshhub/ingest/readings', 'temperature=20', { qos: 1 });
    expect(rowsOf('json-b')).toHaveLength(1);
    expect(
      await metric('meshhub_mqtt_ingest_messages_total', 'format="readings_json",outcome="malformed_json"'),
    ).toBe(1);
    expect(client.connected).toBe(true);
  });
});
