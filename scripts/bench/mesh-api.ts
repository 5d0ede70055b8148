/**
 * The mesh API (issue 16, part 1):
 *
 * 1. Fan-out latency: a radio packet to 10 connected clients on loopback, from the moment the
 *    radio hands it over until the last client has the whole frame. Baseline: the raw path, the
 *    same frame written straight to 10 sockets of a bare `net` server. Ours: the packet given to
 *    the RadioMirror, encoded once and written by the MeshApiActor to 10 configured clients.
 *    Target: ours adds ≤ 5 ms at p99.
 * 2. MQTT ingest with 10 mesh API clients connected (and live radio traffic from the simulator
 *    fanned out to them) against none, on the same hub, rounds alternated. Target: ≥ 90%.
 */
import { connect, createServer, type Socket } from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { createHub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import type { HubBus, HubEvents, HubRequests } from '../../src/domain/events.js';
import { Bus } from '../../src/kernel/bus.js';
import { encodeFrame, StreamFramer } from '../../src/mesh/framing.js';
import { MeshApiActor, meshApiMetrics } from '../../src/mesh-api/mesh-api-actor.js';
import { RadioMirror } from '../../src/mesh-api/radio-mirror.js';
import type { MqttBrokerActor } from '../../src/mqtt/broker-actor.js';
import { loopbackHubEnv } from './lib/hub-env.js';
import { publishWindowed, READINGS_TOPIC } from './lib/mqtt-publish.js';
import { tempDir } from './lib/readings.js';
import { absolute, type BenchResult, compare, median, percentile } from './report.js';

const CLIENTS = 10;
const PACKETS = 2_000;
const WARMUP = 200;
const MQTT_MESSAGES = 10_000;
const MQTT_WINDOW = 500;
const ROUNDS = 3;
const silent = pino({ level: 'silent' });

/** A loopback client that reports each FromRadio packet id as it completes. */
function listen(socket: Socket, onPacket: (id: number) => void): void {
  const framer = new StreamFramer();
  socket.on('data', (chunk: Buffer) => {
    for (const e of framer.push(chunk)) {
      if (e.kind !== 'frame') continue;
      // Decoding each FromRadio is what a client does anyway, on both paths alike.
      const m = fromBinary(Mesh.FromRadioSchema, e.payload);
      if (m.payloadVariant.case === 'packet') onPacket(m.payloadVariant.value.id);
    }
  });
}

function connectClient(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

function packet(id: number): Mesh.FromRadio {
  return create(Mesh.FromRadioSchema, {
    payloadVariant: {
      case: 'packet',
      value: {
        from: 0x0badf00d,
        to: 0xffffffff,
        id,
        rxTime: 1_700_000_000,
        payloadVariant: {
          case: 'decoded',
          value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new Uint8Array(120).fill(0x41) },
        },
      },
    },
  });
}

/** Latency (ms) of each packet to the last of `clients`; `emit` hands packet `id` to the path. */
async function measure(clients: Socket[], emit: (id: number) => void, firstId: number): Promise<number[]> {
  const seen = new Map<number, number>();
  let waiting: { id: number; resolve: () => void } | undefined;
  for (const c of clients) {
    listen(c, (id) => {
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      if (n === clients.length && waiting?.id === id) waiting.resolve();
    });
  }
  const latencies: number[] = [];
  for (let i = 0; i < WARMUP + PACKETS; i++) {
    const id = firstId + i;
    const done = new Promise<void>((resolve) => {
      waiting = { id, resolve };
    });
    const t0 = performance.now();
    emit(id);
    await done;
    if (i >= WARMUP) latencies.push(performance.now() - t0);
    seen.delete(id);
  }
  for (const c of clients) c.destroy();
  return latencies;
}

async function rawPath(): Promise<number[]> {
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    s.setNoDelay(true);
    sockets.push(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connectClient(port)));
  while (sockets.length < CLIENTS) await new Promise((r) => setImmediate(r));
  const latencies = await measure(
    clients,
    (id) => {
      const frame = encodeFrame(toBinary(Mesh.FromRadioSchema, packet(id)));
      for (const s of sockets) s.write(frame);
    },
    1,
  );
  await new Promise((r) => server.close(r));
  return latencies;
}

async function meshApiPath(): Promise<number[]> {
  const bus: HubBus = new Bus<HubEvents, HubRequests>({ retained: ['radio.status', 'simulator.listening'] });
  const mirror = new RadioMirror();
  let actor: MeshApiActor | undefined;
  actor = new MeshApiActor({
    settings: loadConfig({ MESH_API_PORT: '0' }),
    bus,
    log: silent,
    mirror,
    nodes: () => [],
    metrics: meshApiMetrics(new Registry(), () => actor?.clients ?? []),
    send: async () => {},
  });
  await actor.start();
  const port = actor.address!.port;
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connectClient(port)));
  await configure(actor, clients, 1);
  const latencies = await measure(clients, (id) => mirror.fromRadio(packet(id), Date.now()), 1_000_000);
  await actor.stop();
  return latencies;
}

/** Each client asks for the config (want_config_id `id`); resolves once `actor` has them all configured. */
async function configure(
  actor: { clients: readonly { configured: boolean }[] },
  clients: Socket[],
  id: number,
): Promise<void> {
  const want = encodeFrame(
    toBinary(
      Mesh.ToRadioSchema,
      create(Mesh.ToRadioSchema, { payloadVariant: { case: 'wantConfigId', value: id } }),
    ),
  );
  for (const c of clients) c.write(want);
  while (actor.clients.filter((c) => c.configured).length < CLIENTS)
    await new Promise((r) => setTimeout(r, 5));
}

async function publishReadings(client: MqttClient, count: number, startMs: number): Promise<number> {
  const t0 = performance.now();
  await publishWindowed(client, READINGS_TOPIC, count, MQTT_WINDOW, (i) =>
    JSON.stringify({
      node_id: `bench-${i % 50}`,
      timestamp: new Date(startMs + i * 1000).toISOString(),
      temperature_c: 10 + (i % 200) / 10,
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

async function ingestWithClients(): Promise<{ none: number; ten: number }> {
  const tmp = tempDir('mesh-api');
  const env = loopbackHubEnv(tmp.dir, {
    MQTT_ALLOW_ANONYMOUS: 'true',
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_BACKFILL: '0s',
    SIM_TELEMETRY_SECONDS: '1',
    MESH_API_PORT: '0',
  });
  const hub = await createHub(loadConfig(env), { log: silent, defaultMetrics: false, env });
  await hub.start();
  try {
    const api = hub.actor<MeshApiActor>('mesh-api')!;
    const { connectAsync } = await import('mqtt');
    const client = await connectAsync(`mqtt://127.0.0.1:${hub.actor<MqttBrokerActor>('mqtt')!.port}`, {
      reconnectPeriod: 0,
    });
    await publishReadings(client, 2_000, Date.UTC(2019, 0, 1));
    const none: number[] = [];
    const ten: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      none.push(await publishReadings(client, MQTT_MESSAGES, Date.UTC(2020 + 2 * round, 0, 1)));
      const clients = await Promise.all(
        Array.from({ length: CLIENTS }, () => connectClient(api.address!.port)),
      );
      for (const c of clients) c.resume();
      await configure(api, clients, 7);
      ten.push(await publishReadings(client, MQTT_MESSAGES, Date.UTC(2021 + 2 * round, 0, 1)));
      for (const c of clients) c.destroy();
      while (api.clients.length > 0) await new Promise((r) => setTimeout(r, 5));
    }
    await client.endAsync();
    return { none: median(none), ten: median(ten) };
  } finally {
    await hub.stop();
    tmp.cleanup();
  }
}

export async function run(): Promise<BenchResult[]> {
  // Alternated, so warm-up and a busy neighbour weigh on both paths alike.
  const raw: number[] = [];
  const ours: number[] = [];
  for (let round = 0; round < 2; round++) {
    raw.push(...(await rawPath()));
    ours.push(...(await meshApiPath()));
  }
  const rawP99 = percentile(raw, 99);
  const oursP99 = percentile(ours, 99);
  const added = Math.max(0, oursP99 - rawP99);
  const ingest = await ingestWithClients();
  return [
    absolute(
      `mesh-api: fan-out to ${CLIENTS} clients, added latency p99`,
      { label: 'ours − raw', value: added, unit: 'ms' },
      { atMost: 5, text: '≤ 5 ms added at p99' },
    ),
    compare(
      `mesh-api: fan-out to ${CLIENTS} clients, p99 vs raw sockets`,
      { label: 'raw net', value: rawP99, unit: 'ms' },
      { label: 'mesh API', value: oursP99, unit: 'ms' },
      { text: 'informational (ratio of p99)' },
      `p50 raw ${percentile(raw, 50).toFixed(3)} ms, ours ${percentile(ours, 50).toFixed(3)} ms`,
    ),
    compare(
      `mesh-api: MQTT ingest with ${CLIENTS} API clients vs none`,
      { label: 'no clients', value: ingest.none, unit: 'msg/s' },
      { label: `${CLIENTS} clients`, value: ingest.ten, unit: 'msg/s' },
      { atLeast: 0.9, text: '≥ 90% of the rate with none' },
    ),
  ];
}
