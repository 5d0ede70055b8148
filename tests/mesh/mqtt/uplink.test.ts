/**
 * MQTT uplink decoding without a broker: topics, envelopes (encrypted, plain, PKI), the receive
 * time rule, legacy JSON, and arbitrary bytes that must never throw.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums } from '@meshtastic/protobufs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChannelKeyring } from '../../../src/mesh/mqtt/channel-keys.js';
import { parseTrustedGateways, type TrustedGateways } from '../../../src/mesh/mqtt/trusted-gateways.js';
import { MeshUplinkDecoder, parseMeshTopic } from '../../../src/mesh/mqtt/uplink.js';
import { envelope, envTelemetryEnvelope } from '../../mqtt/helpers.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const decoder = new MeshUplinkDecoder({ keys: ChannelKeyring.fromConfig() });
const trustedGateways = parseTrustedGateways('!0000beef, !0000cafe@farm-gw') as TrustedGateways;
/** Trusts !0000beef from anyone and !0000cafe from MQTT user farm-gw. */
const trusting = new MeshUplinkDecoder({ keys: ChannelKeyring.fromConfig(), trustedGateways });
const topic = 'msh/EU_868/2/e/LongFast/!0000beef';

describe('parseMeshTopic', () => {
  it.each([
    ['msh/EU_868/2/e/LongFast/!0000beef', { kind: 'envelope', channel: 'LongFast', gatewayId: '!0000beef' }],
    ['msh/US/CA/Bay/2/e/Farm/!01020304', { kind: 'envelope', channel: 'Farm', gatewayId: '!01020304' }],
    ['msh/2/c/LongFast/!0000beef', { kind: 'envelope', channel: 'LongFast', gatewayId: '!0000beef' }],
    ['msh/EU_868/2/json/LongFast/!0000beef', { kind: 'json', channel: 'LongFast', gatewayId: '!0000beef' }],
    ['msh/EU_868/2/map/', { kind: 'other' }],
    ['msh/EU_868/2/stat/!0000beef', { kind: 'other' }],
    ['msh', { kind: 'other' }],
  ])('%s', (t, expected) => {
    expect(parseMeshTopic(t)).toEqual(expected);
  });
});

describe('MeshUplinkDecoder', () => {
  it("uses a gateway's rx_time when it is plausible, else the hub's clock", () => {
    const rx = NOW / 1000 - 30;
    const near = decoder.decode(
      topic,
      envTelemetryEnvelope(0x10, 1, { temperature: 1 }, { rxTimeSeconds: rx }),
      NOW,
    );
    expect(near).toMatchObject({
      kind: 'packet',
      receivedAt: rx * 1000,
      readings: [{ timestamp: rx * 1000 }],
    });
    // A gateway without a set clock: 1970 plus its uptime.
    const unset = decoder.decode(
      topic,
      envTelemetryEnvelope(0x10, 2, { temperature: 1 }, { rxTimeSeconds: 5_000 }),
      NOW,
    );
    expect(unset).toMatchObject({ kind: 'packet', receivedAt: NOW, readings: [{ timestamp: NOW }] });
  });

  it('finds the key by channel hash when the channel name is not configured', () => {
    const packet = envTelemetryEnvelope(0x20, 3, { temperature: 2 });
    expect(decoder.decode('msh/EU_868/2/e/Renamed/!0000beef', packet, NOW)).toMatchObject({
      kind: 'packet',
      readings: [{ nodeId: '!00000020', temperatureC: 2 }],
    });
  });

  it('ignores PKI direct messages, map reports and packets without a sender', () => {
    const pki = toBinary(
      Mqtt.ServiceEnvelopeSchema,
      create(Mqtt.ServiceEnvelopeSchema, {
        channelId: 'PKI',
        gatewayId: '!0000beef',
        packet: {
          from: 5,
          to: 6,
          id: 7,
          pkiEncrypted: true,
          payloadVariant: { case: 'encrypted', value: Uint8Array.of(1, 2, 3) },
        },
      }),
    );
    expect(decoder.decode('msh/EU_868/2/e/PKI/!0000beef', pki, NOW)).toEqual({
      kind: 'ignored',
      reason: 'pki',
    });
    expect(decoder.decode('msh/EU_868/2/map/', Uint8Array.of(1), NOW)).toMatchObject({ kind: 'ignored' });
    const noSender = envelope({
      from: 0,
      id: 9,
      portnum: Portnums.PortNum.TEXT_MESSAGE_APP,
      payload: Buffer.from('hi'),
    });
    expect(decoder.decode(topic, noSender, NOW)).toEqual({ kind: 'ignored', reason: 'no_sender' });
  });

  it('refuses an envelope without a packet', () => {
    const empty = toBinary(
      Mqtt.ServiceEnvelopeSchema,
      create(Mqtt.ServiceEnvelopeSchema, { channelId: 'LongFast' }),
    );
    expect(decoder.decode(topic, empty, NOW)).toMatchObject({
      kind: 'rejected',
      reason: 'malformed_envelope',
    });
  });

  it('reads a legacy JSON position and node info from a trusted gateway', () => {
    const json = (body: object) => Buffer.from(JSON.stringify(body));
    const jsonTopic = 'msh/EU_868/2/json/LongFast/!0000beef';
    expect(
      trusting.decode(
        jsonTopic,
        json({
          from: 42,
          id: 1,
          type: 'position',
          payload: { latitude_i: 473769000, longitude_i: 85417000, altitude: 400 },
        }),
        NOW,
      ),
    ).toMatchObject({
      kind: 'packet',
      gatewayId: '!0000beef',
      trusted: true,
      nodes: [{ nodeId: '!0000002a', latitude: 47.3769, longitude: 8.5417, altitude: 400 }],
    });
    expect(
      trusting.decode(
        jsonTopic,
        json({
          from: 42,
          id: 2,
          type: 'nodeinfo',
          payload: { longname: 'Ridge', shortname: 'RDG', hardware: Mesh.HardwareModel.TBEAM },
        }),
        NOW,
      ),
    ).toMatchObject({
      kind: 'packet',
      portnum: Portnums.PortNum.NODEINFO_APP,
      nodes: [{ longName: 'Ridge', shortName: 'RDG', hwModel: 'TBEAM' }],
    });
    expect(trusting.decode(jsonTopic, json({ from: -1, id: 2 }), NOW)).toMatchObject({
      kind: 'rejected',
      reason: 'malformed_json',
    });
  });

  it('refuses unencrypted packets and legacy JSON unless the gateway is trusted (for its MQTT user)', () => {
    const plain = envTelemetryEnvelope(0x40, 5, { temperature: 4 }, { psk: 'AA==', gatewayId: '!0000beef' });
    const untrusted = { kind: 'rejected', reason: 'unencrypted_untrusted' };
    expect(decoder.decode(topic, plain, NOW)).toMatchObject(untrusted);
    expect(trusting.decode(topic, plain, NOW)).toMatchObject({ kind: 'packet', trusted: true });
    // The envelope naming another gateway than the topic: the topic's trust does not carry over.
    const other = envTelemetryEnvelope(0x40, 6, { temperature: 4 }, { psk: 'AA==', gatewayId: '!0000abcd' });
    expect(trusting.decode(topic, other, NOW)).toMatchObject(untrusted);
    // Bound to a login: only that MQTT user is believed.
    const cafe = 'msh/EU_868/2/e/LongFast/!0000cafe';
    const fromCafe = envTelemetryEnvelope(
      0x40,
      7,
      { temperature: 4 },
      { psk: 'AA==', gatewayId: '!0000cafe' },
    );
    expect(trusting.decode(cafe, fromCafe, NOW, 'someone-else')).toMatchObject(untrusted);
    expect(trusting.decode(cafe, fromCafe, NOW)).toMatchObject(untrusted);
    expect(trusting.decode(cafe, fromCafe, NOW, 'farm-gw')).toMatchObject({ kind: 'packet', trusted: true });
    // Encrypted packets are read from any gateway, marked untrusted.
    const sealed = envTelemetryEnvelope(0x40, 8, { temperature: 4 }, { gatewayId: '!00001234' });
    expect(decoder.decode('msh/EU_868/2/e/LongFast/!00001234', sealed, NOW)).toMatchObject({
      kind: 'packet',
      trusted: false,
      gatewayId: '!00001234',
    });
    const json = Buffer.from(
      JSON.stringify({ from: 42, id: 3, type: 'nodeinfo', payload: { longname: 'X' } }),
    );
    expect(decoder.decode('msh/EU_868/2/json/LongFast/!0000beef', json, NOW)).toMatchObject(untrusted);
  });

  it('parses MESH_TRUSTED_GATEWAYS', () => {
    expect(parseTrustedGateways('')).toMatchObject({ entries: [] });
    expect(parseTrustedGateways('!A1B2C3D4').toString()).not.toContain('not a gateway id');
    expect((parseTrustedGateways('!A1B2C3D4') as TrustedGateways).trusts('!a1b2c3d4', undefined)).toBe(true);
    for (const bad of ['a1b2c3d4', '!a1b2', '!a1b2c3d4@', '!a1b2c3d4@a@b', '#'])
      expect(parseTrustedGateways(bad)).toContain('is not a gateway id');
  });

  it('never throws on arbitrary bytes, on any uplink topic', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(topic, 'msh/EU_868/2/json/LongFast/!0000beef', 'msh/x/2/c/Farm/!1'),
        fc.uint8Array({ maxLength: 300 }),
        (t, bytes) => {
          for (const d of [decoder, trusting]) {
            const result = d.decode(t, bytes, NOW);
            expect(['packet', 'rejected', 'ignored']).toContain(result.kind);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('never throws on mutated real envelopes', () => {
    const base = envTelemetryEnvelope(0x30, 4, { temperature: 3, relativeHumidity: 40 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(base.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        (flips) => {
          const bytes = Uint8Array.from(base);
          for (const [at, value] of flips) bytes[at] = value;
          expect(['packet', 'rejected', 'ignored']).toContain(decoder.decode(topic, bytes, NOW).kind);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
