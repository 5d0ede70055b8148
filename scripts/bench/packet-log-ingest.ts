/**
 * `npm run bench -- packet-log`: what the packet log and device health cost Meshtastic MQTT
 * ingest. The same run starts a hub with both off (PACKET_LOG=false, DEVICE_HEALTH=false) and one
 * with both on (each in its own process,
 * alternating, best of PACKET_LOG_BENCH_ROUNDS) and publishes the same ServiceEnvelopes at QoS 1
 * (encrypted telemetry from 50 nodes, every fourth a repeat heard through a second gateway), 500
 * in flight. Target: with them ≥ 95% of the rate without them (issue 27).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Mqtt, Portnums, Telemetry } from '@meshtastic/protobufs';
import type { MqttClient } from 'mqtt';
import { channelCipher, channelHash, expandChannelKey } from '../../src/mesh/mqtt/channel-crypto.js';
import type { MqttBrokerActor } from '../../src/mqtt/broker-actor.js';
import { type BrokerChild, forkBrokerChild, reportPort } from './lib/broker-child.js';
import { loopbackHubEnv } from './lib/hub-env.js';
import { publishWindowed } from './lib/mqtt-publish.js';
import { tempDir } from './lib/readings.js';
import { type BenchResult, compare, median } from './report.js';

const MESSAGES = Number(process.env.PACKET_LOG_BENCH_MESSAGES ?? 20_000);
const ROUNDS = Number(process.env.PACKET_LOG_BENCH_ROUNDS ?? 3);
const WINDOW = 500;
const NODES = 50;
const CHANNEL = 'LongFast';
const GATEWAYS = ['!0000beef', '!0000cafe'];

type Role = 'off' | 'on';

async function serveChild(role: Role): Promise<void> {
  const { pino } = await import('pino');
  const { loadConfig } = await import('../../hub/settings.js');
  const { createHub } = await import('../../hub/main.js');
  const tmp = tempDir('packet-log');
  const config = loadConfig(
    loopbackHubEnv(tmp.dir, {
      MQTT_ALLOW_ANONYMOUS: 'true',
      // The mesh insight that runs on every packet: the packet log and device health, both on or both off.
      PACKET_LOG: role === 'on' ? 'true' : 'false',
      DEVICE_HEALTH: role === 'on' ? 'true' : 'false',
    }),
  );
  const hub = await createHub(config, { log: pino({ level: 'silent' }), defaultMetrics: false });
  await hub.start();
  reportPort(hub.actor<MqttBrokerActor>('mqtt')!.port, async () => {
    await hub.stop();
    tmp.cleanup();
  });
}

interface Envelope {
  topic: string;
  payload: Buffer;
}

/** `count` envelopes from `firstId` on: encrypted environment telemetry, every fourth a repeat via the second gateway. */
function envelopes(count: number, firstId: number): Envelope[] {
  const key = expandChannelKey(Buffer.from('AQ==', 'base64'))!;
  const out: Envelope[] = [];
  let id = firstId;
  let previous: { packet: Mesh.MeshPacket } | undefined;
  for (let i = 0; i < count; i++) {
    let packet: Mesh.MeshPacket;
    let gateway = GATEWAYS[0]!;
    if (i % 4 === 3 && previous) {
      packet = previous.packet;
      gateway = GATEWAYS[1]!;
    } else {
      const from = 0x10000000 + (i % NODES);
      id++;
      const telemetry = create(Telemetry.TelemetrySchema, {
        time: 1,
        variant: {
          case: 'environmentMetrics',
          value: { temperature: 10 + (i % 200) / 10, relativeHumidity: 50 },
        },
      });
      const data = toBinary(
        Mesh.DataSchema,
        create(Mesh.DataSchema, {
          portnum: Portnums.PortNum.TELEMETRY_APP,
          payload: toBinary(Telemetry.TelemetrySchema, telemetry),
        }),
      );
      packet = create(Mesh.MeshPacketSchema, {
        from,
        to: 0xffffffff,
        id,
        channel: channelHash(CHANNEL, key),
        hopLimit: 2,
        hopStart: 3,
        rxSnr: 5.5,
        rxRssi: -90,
        payloadVariant: { case: 'encrypted', value: channelCipher(key, id, from, data) },
      });
      previous = { packet };
    }
    const envelope = create(Mqtt.ServiceEnvelopeSchema, { packet, channelId: CHANNEL, gatewayId: gateway });
    out.push({
      topic: `msh/EU_868/2/e/${CHANNEL}/${gateway}`,
      payload: Buffer.from(toBinary(Mqtt.ServiceEnvelopeSchema, envelope)),
    });
  }
  return out;
}

/** CPU time (user + system) a process has used so far, in µs, from /proc (clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Publishes every envelope at QoS 1 with at most WINDOW unacknowledged. */
function publishEnvelopes(client: MqttClient, list: Envelope[]): Promise<void> {
  // One topic per gateway: publishWindowed takes one, so each gateway's share goes on its own.
  const byTopic = new Map<string, Buffer[]>();
  for (const e of list) byTopic.set(e.topic, [...(byTopic.get(e.topic) ?? []), e.payload]);
  return Promise.all(
    [...byTopic].map(([topic, payloads]) =>
      publishWindowed(client, topic, payloads.length, WINDOW / byTopic.size, (i) => payloads[i]!),
    ),
  ).then(() => undefined);
}

interface Round {
  rate: number;
  cpuPerMessageUs: number;
}

async function measure(role: Role, round: number): Promise<Round> {
  const child: BrokerChild = await forkBrokerChild(
    fileURLToPath(import.meta.url),
    { PACKET_LOG_BENCH_ROLE: role },
    process.env.MQTT_BENCH_CPU_PROFILE,
    `packet log ${role} hub`,
  );
  try {
    const { connectAsync } = await import('mqtt');
    const client = await connectAsync(`mqtt://127.0.0.1:${child.port}`, { reconnectPeriod: 0 });
    await publishEnvelopes(client, envelopes(2_000, 1)); // warm-up: JIT, page cache
    const list = envelopes(MESSAGES, 1_000_000 * (round + 1));
    const cpu0 = cpuMicros(child.process.pid!);
    const t0 = performance.now();
    await publishEnvelopes(client, list);
    const rate = MESSAGES / ((performance.now() - t0) / 1000);
    const cpuPerMessageUs = (cpuMicros(child.process.pid!) - cpu0) / MESSAGES;
    await client.endAsync();
    return { rate, cpuPerMessageUs };
  } finally {
    await child.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const off: Round[] = [];
  const on: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so neither always runs on a warmer machine.
    const order: Role[] = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    for (const role of order) (role === 'on' ? on : off).push(await measure(role, round));
  }
  const rates = (xs: Round[]) => xs.map((x) => x.rate.toFixed(0)).join('/');
  const cpu = (xs: Round[]) => median(xs.map((x) => x.cpuPerMessageUs));
  const result = compare(
    `packet log: ${MESSAGES} Meshtastic envelopes over MQTT, QoS 1, ${WINDOW} in flight`,
    {
      label: 'PACKET_LOG=false DEVICE_HEALTH=false',
      value: Math.max(...off.map((r) => r.rate)),
      unit: 'msg/s',
    },
    { label: 'PACKET_LOG=true DEVICE_HEALTH=true', value: Math.max(...on.map((r) => r.rate)), unit: 'msg/s' },
    { atLeast: 0.95, text: '≥ 95% of the rate without the log' },
    `best of ${ROUNDS} rounds each; msg/s off ${rates(off)}, on ${rates(on)}; hub CPU per message (median) ` +
      `off ${cpu(off).toFixed(1)} µs, on ${cpu(on).toFixed(1)} µs (CPU ratio ${(cpu(off) / cpu(on)).toFixed(3)})`,
  );
  return [result];
}

const role = process.env.PACKET_LOG_BENCH_ROLE as Role | undefined;
if (role) {
  serveChild(role).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
