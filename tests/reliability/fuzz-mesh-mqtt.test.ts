/**
 * Issue 17, bad input everywhere: MQTT and the Meshtastic stream. The built hub (child process)
 * reaches its radio (the simulator, quiet after its handshake) through a TCP hop that injects
 * bytes as if the radio sent them; fast-check generates:
 *
 * - MQTT publishes on every topic the hub listens on (`meshhub/ingest/readings`, Meshtastic
 *   uplink `msh/…/2/e/<channel>/<gateway>` and legacy `msh/…/2/json/…`, `homeassistant/status`)
 *   and topics beside them: random bytes, ServiceEnvelopes cut short, readings that carry a field
 *   nobody declared (refused by rule: README "Readings over HTTP and on meshhub/ingest/readings");
 * - the stream from the radio: random bytes (the device's log), frames with lengths past 512,
 *   frames cut short, and frames whose payload is no FromRadio;
 * - the hub's own Meshtastic TCP API (MESH_API_PORT), as a client: the same kinds of bytes;
 * - forgeries the hub refuses by rule (README "MQTT: mesh packets and retained messages"), with
 *   one gateway in MESH_TRUSTED_GATEWAYS: well-formed unencrypted envelopes (node info, position,
 *   telemetry, texts, ACKs) and legacy JSON from gateways that are not trusted (or whose envelope
 *   names another gateway than the topic), and encrypted packets in the hub node's name, texts
 *   to the hub's node and ACKs, from any gateway; every publish randomly retained.
 *
 * Generated inputs are bad by construction: where random bytes could by chance be a valid
 * message, the official protobuf schema (@meshtastic/protobufs) is the oracle and such inputs are
 * left out. Afterwards: the same process, /health ok with the radio connected, the broker and the
 * TCP API still serve a proper client, and every table's digest unchanged.
 */
import { join } from 'node:path';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums } from '@meshtastic/protobufs';
import fc from 'fast-check';
import { connectAsync, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFrame } from '../../src/mesh/framing.js';
import { alwaysPresent } from '../../src/mesh/simulator/presence.js';
import { waitFor } from '../helpers/hub.js';
import { testSimulator } from '../helpers/simulator.js';
import { RawClient } from '../mesh/helpers.js';
import { envelope, envelopeOf, envTelemetryEnvelope, telemetryPayload } from '../mqtt/helpers.js';
import { HubProcess, pause, removeDir, scenarioSeed, scratchDir } from './helpers/hub-process.js';
import { changedTables, digestTables } from './helpers/leaks.js';
import { RadioProxy } from './helpers/radio-proxy.js';

const SEED = scenarioSeed('fuzz MQTT and the Meshtastic stream');
const RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 300);
/** The one gateway in MESH_TRUSTED_GATEWAYS: its unencrypted uplink would be believed. */
const TRUSTED_GATEWAY = '!0000cafe';

const sim = testSimulator({
  seed: 13,
  telemetryIntervalMs: 86_400_000,
  // Nobody comes or goes: the mesh stays quiet after the handshake.
  presence: alwaysPresent,
});
let proxy: RadioProxy;
const dataDir = scratchDir('fuzz-mesh');
let hub: HubProcess;
const db = () => join(dataDir, 'meshhub.sqlite');

/** True when the official schema reads `bytes` as a message the hub would act on. */
function decodesAs<T extends Mesh.FromRadio | Mesh.ToRadio | Mqtt.ServiceEnvelope>(
  schema: Parameters<typeof fromBinary>[0],
  bytes: Uint8Array,
  acts: (m: T) => boolean,
): boolean {
  try {
    return acts(fromBinary(schema, bytes) as T);
  } catch {
    return false;
  }
}

const randomBytes = (max: number) => fc.uint8Array({ maxLength: max });

/** Frames a device or client could send that carry nothing the hub acts on. */
function badFrames(acts: (payload: Uint8Array) => boolean): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    // The device's log text, or noise.
    randomBytes(600),
    // A header announcing more than 512 bytes, then whatever follows.
    fc
      .tuple(fc.integer({ min: 513, max: 0xffff }), randomBytes(64))
      .map(([n, rest]) => Uint8Array.from([0x94, 0xc3, n >> 8, n & 0xff, ...rest])),
    // A frame whose payload is not a message the hub acts on.
    randomBytes(512)
      .filter((p) => !acts(p))
      .map((p) => encodeFrame(p)),
    // A frame cut short (the rest never comes, or a new frame starts inside it).
    fc
      .tuple(randomBytes(200), fc.boolean())
      .filter(([p]) => !acts(p))
      .map(([p, restart]) => {
        const frame = encodeFrame(p);
        const cut = frame.subarray(0, Math.max(4, frame.length - 1 - (p.length >> 1)));
        return restart ? Uint8Array.from([...cut, 0x94, 0xc3, 0x00]) : cut;
      }),
  );
}

const fromRadioActs = (p: Uint8Array) =>
  decodesAs<Mesh.FromRadio>(Mesh.FromRadioSchema, p, (m) => m.payloadVariant.case !== undefined);
const toRadioActs = (p: Uint8Array) =>
  decodesAs<Mesh.ToRadio>(Mesh.ToRadioSchema, p, (m) => m.payloadVariant.case !== undefined);

beforeAll(async () => {
  proxy = await RadioProxy.before(sim);
  hub = new HubProcess({
    dataDir,
    env: {
      RADIO: `tcp:127.0.0.1:${proxy.port}`,
      MQTT_ALLOW_ANONYMOUS: 'true',
      MESH_TRUSTED_GATEWAYS: TRUSTED_GATEWAY,
    },
  });
  await hub.start();
  await waitFor(
    async () => {
      const h = (await (await fetch(`${hub.baseUrl}/health`)).json()) as { status: string };
      return h.status === 'ok' || undefined;
    },
    20_000,
    'the hub ok with its radio',
  );
  // The handshake's nodes are stored; then the mesh goes quiet (the simulator's own packets
  // dropped on the way), so the hub is at rest and only the fuzz reaches it.
  await pause(2_000);
  proxy.quiet = true;
  await pause(1_000);
});

afterAll(async () => {
  await hub?.kill();
  await proxy?.stop();
  await sim.stop();
  removeDir(dataDir);
});

describe('bad input on MQTT, the radio stream and the TCP API (fast-check, the built hub)', () => {
  it(`no crash, the link and the services stay up, nothing stored (seed ${SEED}, ${RUNS} runs each)`, async () => {
    const before = digestTables(db());
    const pid = hub.pid;
    const counts = { mqtt: 0, stream: 0, api: 0, disconnects: 0 };

    // MQTT: a device (anonymous) publishing on the hub's topics and beside them.
    const topic = fc.oneof(
      fc.constant('meshhub/ingest/readings'),
      fc
        .tuple(
          fc.stringMatching(/^[A-Za-z0-9]{1,8}$/),
          fc.constantFrom('LongFast', 'MediumSlow', 'x', ''),
          fc.oneof(fc.stringMatching(/^![0-9a-f]{8}$/), fc.constant(TRUSTED_GATEWAY)),
        )
        .map(([region, channel, gw]) => `msh/${region}/2/e/${channel}/${gw}`),
      fc.stringMatching(/^[A-Za-z0-9]{1,8}$/).map((r) => `msh/${r}/2/json/LongFast/!0000beef`),
      fc.constant('homeassistant/status'),
      fc.string({ minLength: 1, maxLength: 30 }).map((s) => `msh/${s.replace(/[#+]/g, '')}`),
      fc.string({ minLength: 1, maxLength: 30 }).map((s) => `meshhub/ingest/${s.replace(/[#+]/g, '')}`),
    );
    const envelopeCut = fc
      .tuple(
        fc.integer({ min: 1, max: 0xffffffe }),
        fc.integer({ min: 1, max: 0xffffffe }),
        fc.integer({ min: 1, max: 60 }),
      )
      .map(([from, id, cut]) => {
        const whole = envTelemetryEnvelope(from, id, { temperature: 21.5, relativeHumidity: 40 });
        return whole.subarray(0, Math.max(1, whole.length - cut));
      })
      .filter(
        (p) => !decodesAs<Mqtt.ServiceEnvelope>(Mqtt.ServiceEnvelopeSchema, p, (m) => m.packet !== undefined),
      );
    const payload = fc.oneof(
      randomBytes(300).filter(
        (p) => !decodesAs<Mqtt.ServiceEnvelope>(Mqtt.ServiceEnvelopeSchema, p, (m) => m.packet !== undefined),
      ),
      envelopeCut,
      // Every reading carries a field nobody declared: refused by rule.
      fc
        .array(fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 5 }), {
          minLength: 1,
          maxLength: 4,
        })
        .map((readings) => Buffer.from(JSON.stringify(readings.map((r) => ({ ...r, __fuzz: 1 }))))),
      fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
      fc.constantFrom(Buffer.from('online'), Buffer.from('offline'), Buffer.alloc(0)),
    );
    // Forgeries: well-formed, and refused by rule whatever they say.
    const atStart = (await (await fetch(`${hub.baseUrl}/health`)).json()) as { radio: { myNodeNum: number } };
    const hubNode = atStart.radio.myNodeNum;
    expect(hubNode).toBeGreaterThan(0);
    const untrustedGateway = fc.stringMatching(/^![0-9a-f]{8}$/).filter((g) => g !== TRUSTED_GATEWAY);
    const sender = fc.oneof(fc.integer({ min: 1, max: 0xfffffffe }), fc.constant(hubNode));
    const name = fc.string({ minLength: 1, maxLength: 30 });
    const dataOf = fc.oneof(
      name.map((longName) => ({
        portnum: Portnums.PortNum.NODEINFO_APP,
        payload: toBinary(
          Mesh.UserSchema,
          create(Mesh.UserSchema, { longName, shortName: longName.slice(0, 4) }),
        ),
      })),
      fc
        .tuple(
          fc.integer({ min: -900_000_000, max: 900_000_000 }),
          fc.integer({ min: -1_800_000_000, max: 1_800_000_000 }),
        )
        .map(([latitudeI, longitudeI]) => ({
          portnum: Portnums.PortNum.POSITION_APP,
          payload: toBinary(Mesh.PositionSchema, create(Mesh.PositionSchema, { latitudeI, longitudeI })),
        })),
      fc.float({ min: -40, max: 50, noNaN: true }).map((temperature) => ({
        portnum: Portnums.PortNum.TELEMETRY_APP,
        payload: telemetryPayload({ variant: { case: 'environmentMetrics', value: { temperature } } }),
      })),
      name.map((text) => ({
        portnum: Portnums.PortNum.TEXT_MESSAGE_APP,
        payload: new TextEncoder().encode(text),
      })),
      fc.integer({ min: 1, max: 0xffffffff }).map((requestId) => ({
        portnum: Portnums.PortNum.ROUTING_APP,
        payload: toBinary(
          Mesh.RoutingSchema,
          create(Mesh.RoutingSchema, { variant: { case: 'errorReason', value: 0 } }),
        ),
        requestId,
      })),
    );
    const packetId = fc.integer({ min: 1, max: 0xfffffffe });
    const forgery: fc.Arbitrary<[string, Uint8Array]> = fc.oneof(
      // Unencrypted, from a gateway not trusted, or naming another one in the envelope.
      fc
        .tuple(untrustedGateway, fc.boolean(), sender, packetId, dataOf)
        .map(([gw, lies, from, id, data]): [string, Uint8Array] => {
          const topicGateway = lies ? TRUSTED_GATEWAY : gw;
          return [
            `msh/EU_868/2/e/LongFast/${topicGateway}`,
            envelope({ from, id, ...data, psk: 'AA==', gatewayId: lies ? gw : topicGateway }),
          ];
        }),
      // Legacy JSON from a gateway not trusted.
      fc
        .tuple(untrustedGateway, sender, packetId, name)
        .map(([gw, from, id, longname]): [string, Uint8Array] => [
          `msh/EU_868/2/json/LongFast/${gw}`,
          Buffer.from(JSON.stringify({ id, from, type: 'nodeinfo', payload: { longname, shortname: 'X' } })),
        ]),
      // Encrypted with the public default key: in the hub node's name, a text to the hub's node
      // from a gateway not trusted, or an ACK, from any gateway.
      fc
        .tuple(
          fc.oneof(untrustedGateway, fc.constant(TRUSTED_GATEWAY)),
          packetId,
          dataOf,
          fc.integer({ min: 1, max: 0xfffffffe }),
        )
        .map(([gw, id, data, other]): [string, Uint8Array] => {
          const kind =
            data.portnum === Portnums.PortNum.ROUTING_APP
              ? 'ack'
              : data.portnum === Portnums.PortNum.TEXT_MESSAGE_APP && gw !== TRUSTED_GATEWAY
                ? 'text'
                : 'hub';
          const packet = create(Mesh.MeshPacketSchema, {
            from: kind === 'hub' ? hubNode : other,
            to: kind === 'text' ? hubNode : 0xffffffff,
            id,
            payloadVariant: { case: 'decoded', value: data },
          });
          return [`msh/EU_868/2/e/LongFast/${gw}`, envelopeOf(packet, { gatewayId: gw })];
        }),
    );

    let client: MqttClient | undefined;
    const mqttUrl = `mqtt://127.0.0.1:${hub.mqttPort}`;
    const input = fc.oneof(
      fc.tuple(topic, payload).map(([t, p]): [string, Uint8Array] => [t, p]),
      forgery,
    );
    await fc.assert(
      fc.asyncProperty(
        input,
        fc.constantFrom(0, 1) as fc.Arbitrary<0 | 1>,
        fc.boolean(),
        async ([t, p], qos, retain) => {
          counts.mqtt++;
          if (!client?.connected) {
            client?.end(true);
            client = await connectAsync(mqttUrl, { reconnectPeriod: 0, connectTimeout: 5_000 });
          }
          const c = client;
          // Acknowledged, or the connection closed (a refused publish closes it: [MQTT-3.3.5-2]).
          await new Promise<void>((resolve) => {
            const closed = () => {
              counts.disconnects++;
              resolve();
            };
            c.once('close', closed);
            c.publish(t, Buffer.from(p), { qos, retain }, () => {
              c.off('close', closed);
              resolve();
            });
          });
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    client?.end(true);
    expect(changedTables(before, digestTables(db())), 'after MQTT').toEqual([]);
    // Nothing a client published on msh/# or meshhub/ingest/# is kept retained.
    const metrics = await (await fetch(`${hub.baseUrl}/metrics`)).text();
    expect(metrics).toContain('meshhub_mqtt_retained_messages{origin="clients"} 0');

    // The radio stream: bytes injected between the radio's own frames.
    await fc.assert(
      fc.asyncProperty(badFrames(fromRadioActs), async (bytes) => {
        counts.stream++;
        proxy.inject(bytes);
        await pause(2);
      }),
      { seed: SEED + 1, numRuns: RUNS, endOnFailure: true },
    );
    await pause(500);
    expect(changedTables(before, digestTables(db())), 'after the radio stream').toEqual([]);

    // The hub's TCP API, as a client: a fresh connection per run, bad frames, then gone.
    await fc.assert(
      fc.asyncProperty(badFrames(toRadioActs), fc.boolean(), async (bytes, handshakeFirst) => {
        counts.api++;
        const c = await RawClient.connect(hub.meshApiPort);
        try {
          if (handshakeFirst) await c.handshake(Math.floor(Math.random() * 1e9) + 1);
          (c as unknown as { socket: { write(b: Uint8Array): void } }).socket.write(bytes);
          await pause(5);
        } finally {
          await c.close();
        }
      }),
      { seed: SEED + 2, numRuns: Math.ceil(RUNS / 3), endOnFailure: true },
    );

    // Still the same process, healthy, its radio link up.
    await pause(1_000);
    expect(hub.pid).toBe(pid);
    expect(hub.running).toBe(true);
    const health = (await (await fetch(`${hub.baseUrl}/health`)).json()) as {
      status: string;
      radio: { state: string };
    };
    expect(health.radio.state).toBe('connected');
    expect(health.status).toBe('ok');
    // Nothing stored.
    expect(changedTables(before, digestTables(db()))).toEqual([]);
    // The TCP API still serves a proper client; the broker still takes a good reading.
    const app = await RawClient.connect(hub.meshApiPort);
    const handshake = await app.handshake(4242);
    expect(handshake.some((m) => m.payloadVariant.case === 'configCompleteId')).toBe(true);
    await app.close();
    const sensor = await connectAsync(mqttUrl, { reconnectPeriod: 0 });
    await sensor.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'after-fuzz', temperature_c: 20 }),
      {
        qos: 1,
      },
    );
    await sensor.endAsync();
    console.log(
      `[reliability] fuzz MQTT/stream/TCP API: ${counts.mqtt} publishes (${counts.disconnects} connections closed by the broker), ` +
        `${counts.stream} injections into the radio stream, ${counts.api} TCP API clients; same process, radio connected, nothing stored`,
    );
  }, 600_000);
});
