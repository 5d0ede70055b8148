import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
// The `mqtt` client is imported where it is used: this file is also the broker child, whose RSS is measured.
import type { MqttClient } from 'mqtt';
import type { MqttBrokerActor } from '../../src/mqtt/broker-actor.js';
import { type BrokerChild, forkBrokerChild, reportPort } from './lib/broker-child.js';
import { loopbackHubEnv } from './lib/hub-env.js';
import { publishAll, readingMessages, READINGS_TOPIC as TOPIC } from './lib/mqtt-publish.js';
import { tempDir } from './lib/readings.js';
import { absolute, type BenchResult, compare, median } from './report.js';

const MESSAGES = 50_000;
const WINDOW = 1_000;
const ROUNDS = Number(process.env.MQTT_BENCH_ROUNDS ?? 5);
const RSS_CLIENTS = 200;

type Role = 'bare' | 'hub';

async function serveChild(role: Role): Promise<void> {
  let port: number;
  let close: () => Promise<void>;
  if (role === 'bare') {
    const { Aedes } = await import('aedes');
    const broker = await Aedes.createBroker();
    const server = createServer(broker.handle);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    close = () => new Promise((r) => broker.close(() => server.close(() => r())));
  } else {
    const { pino } = await import('pino');
    const { loadConfig } = await import('../../hub/settings.js');
    const { createHub } = await import('../../hub/main.js');
    const tmp = tempDir('mqtt');
    const config = loadConfig(loopbackHubEnv(tmp.dir, { MQTT_ALLOW_ANONYMOUS: 'true' }));
    const hub = await createHub(config, { log: pino({ level: 'silent' }), defaultMetrics: false });
    await hub.start();
    port = hub.actor<MqttBrokerActor>('mqtt')!.port;
    close = async () => {
      await hub.stop();
      tmp.cleanup();
    };
  }
  reportPort(port, close);
}

type Child = BrokerChild;

function startChild(role: Role): Promise<Child> {
  // MQTT_BENCH_CPU_PROFILE=<dir>: a V8 CPU profile of each broker child, for finding where the time goes.
  return forkBrokerChild(
    fileURLToPath(import.meta.url),
    { MQTT_BENCH_ROLE: role },
    process.env.MQTT_BENCH_CPU_PROFILE,
    `${role} broker`,
  );
}

/**
 * The publisher's shape: 50 nodes and WINDOW in flight (issue 3's), or issue 17's: single-reading
 * JSON from 1,000 nodes round-robin, 100 in flight on one connection.
 */
interface Shape {
  nodes: number;
  window: number;
}
const ISSUE3: Shape = { nodes: 50, window: WINDOW };
const NODES_SHAPE: Shape = { nodes: 1_000, window: 100 };

/** Sends `count` QoS 1 readings with at most `shape.window` unacknowledged; returns messages per second. */
async function publishReadings(
  client: MqttClient,
  count: number,
  startMs: number,
  shape: Shape = ISSUE3,
): Promise<number> {
  const payloads = readingMessages(count, startMs, 1000, (i) => `bench-${i % shape.nodes}`);
  const t0 = performance.now();
  await publishAll(client, TOPIC, payloads, shape.window);
  return count / ((performance.now() - t0) / 1000);
}

/** CPU time (user + system) a process has used so far, in µs, from /proc (clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

interface Round {
  rate: number;
  /** The broker process's CPU time per message: steadier than msg/s on a shared machine. */
  cpuPerMessageUs: number;
}

async function throughput(role: Role, rounds: number[], shape: Shape = ISSUE3): Promise<Round[]> {
  const child = await startChild(role);
  const results: Round[] = [];
  try {
    const { connectAsync } = await import('mqtt');
    const client = await connectAsync(`mqtt://127.0.0.1:${child.port}`, { reconnectPeriod: 0 });
    // Warm-up: JIT, SQLite page cache, broker allocations.
    await publishReadings(client, 2_000, Date.UTC(2020, 0, 1), shape);
    for (const round of rounds) {
      const cpu0 = cpuMicros(child.process.pid!);
      const rate = await publishReadings(client, MESSAGES, Date.UTC(2021 + round, 0, 1), shape);
      results.push({ rate, cpuPerMessageUs: (cpuMicros(child.process.pid!) - cpu0) / MESSAGES });
    }
    await client.endAsync();
  } finally {
    await child.stop();
  }
  return results;
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

async function rssWithClients(): Promise<number> {
  const child = await startChild('hub');
  const clients: MqttClient[] = [];
  try {
    const { connectAsync } = await import('mqtt');
    for (let i = 0; i < RSS_CLIENTS; i++) {
      clients.push(
        await connectAsync(`mqtt://127.0.0.1:${child.port}`, { reconnectPeriod: 0, clientId: `rss-${i}` }),
      );
    }
    const samples: number[] = [];
    const start = Date.now();
    for (let second = 0; second < 12; second++) {
      await Promise.all(
        clients.map((c, i) =>
          c.publishAsync(
            TOPIC,
            JSON.stringify({
              node_id: `rss-${i}`,
              timestamp: new Date(start + second * 1000).toISOString(),
              temperature_c: 20,
            }),
            { qos: 1 },
          ),
        ),
      );
      await new Promise((r) => setTimeout(r, 1_000));
      if (second >= 6) samples.push(rssMb(child.process.pid!));
    }
    return Math.max(...samples);
  } finally {
    await Promise.all(clients.map((c) => c.endAsync(true)));
    await child.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const bare: Round[] = [];
  const ours: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sides = [
      async () => bare.push(...(await throughput('bare', [round]))),
      async () => ours.push(...(await throughput('hub', [round]))),
    ];
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) await side();
  }
  const rss = await rssWithClients();
  const rates = (xs: Round[]) => xs.map((x) => x.rate.toFixed(0)).join('/');
  const cpu = (xs: Round[]) => median(xs.map((x) => x.cpuPerMessageUs)).toFixed(1);
  return [
    compare(
      `mqtt: ${MESSAGES} QoS 1 readings, ${WINDOW} in flight`,
      { label: 'bare Aedes', value: Math.max(...bare.map((r) => r.rate)), unit: 'msg/s' },
      { label: 'hub, PUBACK after commit', value: Math.max(...ours.map((r) => r.rate)), unit: 'msg/s' },
      { atLeast: 0.6, text: '≥ 60% of bare Aedes msg/s' },
      `best of ${ROUNDS} rounds each; msg/s bare ${rates(bare)}, ours ${rates(ours)}; ` +
        `broker CPU per message (median) bare ${cpu(bare)} µs, ours ${cpu(ours)} µs`,
    ),
    absolute(
      `mqtt: hub RSS with ${RSS_CLIENTS} connected clients publishing`,
      { label: 'hub process', value: rss, unit: 'MB' },
      { atMost: 150, text: '< 150 MB' },
    ),
  ];
}

/**
 * Issue 17's shape (`npm run bench -- mqtt-nodes`): single-reading JSON publishes from 1,000
 * nodes round-robin, 100 in flight on one connection; best of ROUNDS each, alternating.
 */
export async function runNodes(): Promise<BenchResult[]> {
  const bare: Round[] = [];
  const ours: Round[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sides = [
      async () => bare.push(...(await throughput('bare', [round], NODES_SHAPE))),
      async () => ours.push(...(await throughput('hub', [round], NODES_SHAPE))),
    ];
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) await side();
  }
  const rates = (xs: Round[]) => xs.map((x) => x.rate.toFixed(0)).join('/');
  const cpu = (xs: Round[]) => median(xs.map((x) => x.cpuPerMessageUs)).toFixed(1);
  const pairs = bare.map((b, i) => ours[i]!.rate / b.rate);
  return [
    compare(
      `mqtt: ${MESSAGES} QoS 1 single readings, 1,000 nodes round-robin, 100 in flight`,
      { label: 'bare Aedes', value: Math.max(...bare.map((r) => r.rate)), unit: 'msg/s' },
      { label: 'hub, PUBACK after commit', value: Math.max(...ours.map((r) => r.rate)), unit: 'msg/s' },
      { atLeast: 0.6, text: '≥ 60% of bare Aedes msg/s' },
      `best of ${ROUNDS} rounds each; msg/s bare ${rates(bare)}, ours ${rates(ours)}; per-round ratios ` +
        `${pairs.map((p) => p.toFixed(2)).join('/')} (median ${median(pairs).toFixed(2)}); ` +
        `broker CPU per message (median) bare ${cpu(bare)} µs, ours ${cpu(ours)} µs ` +
        `(CPU ratio ${(median(bare.map((x) => x.cpuPerMessageUs)) / median(ours.map((x) => x.cpuPerMessageUs))).toFixed(2)})`,
    ),
  ];
}

const role = process.env.MQTT_BENCH_ROLE as Role | undefined;
if (role) {
  serveChild(role).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
