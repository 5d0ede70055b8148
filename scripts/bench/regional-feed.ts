/**
 * `npm run bench -- regional-feed` (issue 26): a hub subscribed to a region's Meshtastic MQTT feed
 * of 10,000 nodes (lib/regional-feed.ts: encrypted ServiceEnvelopes at the firmware's default
 * intervals, each packet through 1–3 of 50 gateways), the hub in its own process (`meshhub start`,
 * no radio, MQTT on a loopback port) beside the bare baseline process (better-sqlite3 + Hono +
 * Aedes started, lib/hub-process.ts):
 *
 * 1. a day of 5-minute readings for one probe node (JSON ingest), then the warm-up: every node's
 *    nodeinfo and one telemetry, QoS 1 as fast as the hub takes them — first 1,000 nodes, then
 *    the rest; `/api/v1/nodes` is paged through after each step and must know them all;
 * 2. after each step, timed: `/api/v1/nodes` first page, the probe's latest, its day of history raw
 *    and hourly (median of QUERY_REPEATS each) — at 10,000 nodes known they should take about what
 *    they took at 1,000 (target ≤ 1.5×);
 * 3. the real rate for REGIONAL_SECONDS (default 120; the figures are taken at that): every packet
 *    the region sends in that time, published when it is due, every gateway's copy; hub CPU per
 *    publish (utime + stime from /proc) beside the hub's CPU idle for 15 s before it (at ~40
 *    publishes/s the two are close: the warm-up's CPU per publish is the cost of a packet), hub RSS
 *    against the bare process's (target ≤ 2×), with the V8 heap and RSS split from the hub's /metrics;
 * 4. every reading and node stored once (readings = the unique environment packets + the probe's
 *    day; nodes = 10,000), read from the hub's database;
 * 5. `GET /api/v1/weather/latest` (every node with a reading) against a bare Hono route serving the
 *    same bytes, autocannon, one after the other (target ≥ 50%).
 *
 * REGIONAL_NODES changes the 10,000 and REGIONAL_CPU_PROFILE=<dir> writes a CPU profile of the hub
 * (both for trying things out).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import type { MqttClient } from 'mqtt';
import { HUB_DATABASE_FILE } from '../../src/store/database.js';
import { get, historyQuery } from './lib/http.js';
import {
  freePort,
  type HubProc,
  type Proc,
  rssMb,
  settledRss,
  sleep,
  spawnUntilReady,
  startBare,
  startHub,
  tempData,
} from './lib/hub-process.js';
import { publishAll, READINGS_TOPIC } from './lib/mqtt-publish.js';
import { type FeedPacket, RegionalFeed } from './lib/regional-feed.js';
import { type BenchResult, compare, median, percentile } from './report.js';

const NODES = Number(process.env.REGIONAL_NODES ?? 10_000);
const SECONDS = Number(process.env.REGIONAL_SECONDS ?? 120);
const FIRST_STEP = Math.min(1_000, NODES);
const WARM_WINDOW = 200;
const QUERY_REPEATS = 60;
const NODES_PAGE = 100;
const LATEST_CONNECTIONS = 10;
const LATEST_SECONDS = 5;
const DAY_MS = 86_400_000;
const IDLE_MS = 15_000;

/** CPU time (user + system) a process has used so far, in µs (/proc/PID/stat, clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Where a process's RSS is: anonymous memory (heaps) and file pages, from /proc/PID/status. */
function rssParts(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) =>
    (Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024).toFixed(1);
  return `anon ${mb('RssAnon')} MB, file ${mb('RssFile')} MB`;
}

/** The hub's V8 heap (used / total) and external memory, from its own /metrics. */
async function heapOf(hub: HubProc): Promise<string> {
  const text = await (await fetch(`${hub.url}/metrics`)).text();
  const value = (name: string, label = '') =>
    Number(new RegExp(`^${name}${label}\\s+([0-9.e+]+)$`, 'm').exec(text)?.[1]) / 1048576;
  return (
    `V8 heap ${value('meshhub_nodejs_heap_size_used_bytes').toFixed(1)} used / ` +
    `${value('meshhub_nodejs_heap_size_total_bytes').toFixed(1)} MB, external ` +
    `${value('meshhub_nodejs_external_memory_bytes').toFixed(1)} MB`
  );
}

/** The hub's counters that say whether anything was lost or refused: mailbox drops and MQTT ingest outcomes. */
async function ingestCounters(hub: HubProc): Promise<string> {
  const text = await (await fetch(`${hub.url}/metrics`)).text();
  const lines = text
    .split('\n')
    .filter((l) => /^meshhub_(mailbox_dropped|mqtt_ingest_messages_total)\{/.test(l) && !/ 0$/.test(l))
    .map((l) => l.replace(/^meshhub_/, ''));
  return lines.length ? lines.join(', ') : 'no mailbox drops, no ingest outcomes counted';
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Every gateway's copy of the packets, QoS 1, at most `window` unacknowledged. */
async function publishPackets(
  client: MqttClient,
  packets: Iterable<FeedPacket>,
  window: number,
): Promise<number> {
  let published = 0;
  let inFlight = 0;
  let failed: Error | undefined;
  let wake: (() => void) | undefined;
  for (const packet of packets) {
    for (const copy of packet.copies) {
      while (inFlight >= window) await new Promise<void>((r) => (wake = r));
      if (failed) throw failed;
      inFlight++;
      published++;
      client.publish(copy.topic, copy.payload, { qos: 1 }, (error) => {
        if (error) failed = error;
        inFlight--;
        wake?.();
      });
    }
  }
  while (inFlight > 0) await new Promise<void>((r) => (wake = r));
  if (failed) throw failed;
  return published;
}

/** Pages through /api/v1/nodes (following `Link: rel="next"` when the hub pages); the node ids. */
async function allNodes(hub: HubProc): Promise<{ ids: Set<string>; pages: number }> {
  const ids = new Set<string>();
  let path: string | undefined = `/api/v1/nodes?limit=${NODES_PAGE * 10}`;
  let pages = 0;
  while (path) {
    const res = await fetch(hub.url + path);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    pages++;
    for (const n of ((await res.json()) as { data: Array<{ node_id: string }> }).data) ids.add(n.node_id);
    path = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return { ids, pages };
}

async function waitForNodes(hub: HubProc, feed: RegionalFeed, count: number) {
  const want = feed.nodes.slice(0, count).map((n) => n.id);
  const until = Date.now() + 30_000;
  for (;;) {
    const { ids, pages } = await allNodes(hub);
    const missing = want.filter((id) => !ids.has(id));
    if (missing.length === 0) return { known: ids.size, pages };
    if (Date.now() > until)
      throw new Error(`/api/v1/nodes lacks ${missing.length} of ${count} nodes, e.g. ${missing[0]}`);
    await sleep(200);
  }
}

interface QueryTimes {
  nodesPage: number;
  latestOne: number;
  historyRaw: number;
  history1h: number;
  /** Items in each answer, to show the results are the same size at both steps. */
  sizes: string;
}

/** Median ms of QUERY_REPEATS sequential GETs over one keep-alive connection. */
async function timed(agent: Agent, url: string): Promise<{ ms: number; items: number }> {
  const times: number[] = [];
  let items = 0;
  for (let i = 0; i < QUERY_REPEATS + 5; i++) {
    const t0 = performance.now();
    const res = await get(agent, url);
    const ms = performance.now() - t0;
    if (res.status !== 200)
      throw new Error(`${url} answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
    if (i >= 5) times.push(ms); // the first few warm the route up
    items = (JSON.parse(res.body.toString()) as { data?: unknown[] }).data?.length ?? 1;
  }
  return { ms: median(times), items };
}

async function queryTimes(agent: Agent, hub: HubProc, probe: string, dayStart: number): Promise<QueryTimes> {
  const nodes = await timed(agent, `${hub.url}/api/v1/nodes?limit=${NODES_PAGE}`);
  const latest = await timed(agent, `${hub.url}/api/v1/weather/latest?node_id=${encodeURIComponent(probe)}`);
  const raw = await timed(
    agent,
    `${hub.url}/api/v1/weather/history?${historyQuery(probe, dayStart, dayStart + DAY_MS, 'raw')}`,
  );
  const hourly = await timed(
    agent,
    `${hub.url}/api/v1/weather/history?${historyQuery(probe, dayStart, dayStart + DAY_MS, '1h')}`,
  );
  return {
    nodesPage: nodes.ms,
    latestOne: latest.ms,
    historyRaw: raw.ms,
    history1h: hourly.ms,
    sizes: `nodes page ${nodes.items}, raw ${raw.items}, 1h ${hourly.items}`,
  };
}

interface RatePhase {
  packets: number;
  publishes: number;
  environment: number;
  cpuUs: number;
  wallS: number;
  peakRss: number;
  ackP50: number;
  ackP99: number;
  /** How far behind schedule the publisher fell at worst (ms): the hub kept up when this is small. */
  maxLagMs: number;
}

/** Publishes the region's packets when they are due, for SECONDS; PUBACK times recorded. */
async function realRate(
  client: MqttClient,
  hub: HubProc,
  feed: RegionalFeed,
  startS: number,
): Promise<RatePhase> {
  const t0 = Date.now();
  const cpu0 = cpuMicros(hub.pid);
  const acks: number[] = [];
  let packets = 0;
  let publishes = 0;
  let environment = 0;
  let inFlight = 0;
  let peakRss = rssMb(hub.pid);
  let maxLagMs = 0;
  let failed: Error | undefined;
  let lastSample = 0;
  // rx_time: the gateways' clock when the packet is due.
  const schedule = feed.schedule(startS, SECONDS, (at) => Math.floor((t0 + (at - startS) * 1000) / 1000));
  for (const packet of schedule) {
    const due = t0 + (packet.at - startS) * 1000;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
    else maxLagMs = Math.max(maxLagMs, -wait);
    if (failed) throw failed;
    packets++;
    if (packet.kind === 'environment') environment++;
    for (const copy of packet.copies) {
      publishes++;
      inFlight++;
      const sent = performance.now();
      client.publish(copy.topic, copy.payload, { qos: 1 }, (error) => {
        if (error) failed = error;
        acks.push(performance.now() - sent);
        inFlight--;
      });
    }
    if (Date.now() - lastSample > 1_000) {
      lastSample = Date.now();
      peakRss = Math.max(peakRss, rssMb(hub.pid));
    }
  }
  const end = t0 + SECONDS * 1000;
  if (end > Date.now()) await sleep(end - Date.now());
  while (inFlight > 0) await sleep(10);
  if (failed) throw failed;
  return {
    packets,
    publishes,
    environment,
    cpuUs: cpuMicros(hub.pid) - cpu0,
    wallS: (Date.now() - t0) / 1000,
    peakRss,
    ackP50: median(acks),
    ackP99: percentile(acks, 99),
    maxLagMs,
  };
}

/** A bare Hono route answering `body` (a file) at `path`, in its own process; its base URL. */
async function bareRoute(bodyFile: string, path: string): Promise<Proc & { url: string }> {
  const port = await freePort();
  const code = `
    const { readFileSync } = require('node:fs');
    const { Hono } = require('hono');
    const { serve } = require('@hono/node-server');
    const json = readFileSync(${JSON.stringify(bodyFile)}, 'utf8');
    const app = new Hono();
    app.get(${JSON.stringify(path)}, (c) => c.body(json, 200, { 'content-type': 'application/json' }));
    serve({ fetch: app.fetch, hostname: '127.0.0.1', port: ${port} }, () => process.stdout.write('ready\\n'));
  `;
  return { ...(await spawnUntilReady(code, 'bare route')), url: `http://127.0.0.1:${port}` };
}

async function rps(url: string, duration = LATEST_SECONDS): Promise<number> {
  const result = await autocannon({ url, connections: LATEST_CONNECTIONS, duration });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

/** A day of 5-minute readings for the probe node, through the JSON ingest topic. */
async function probeDay(client: MqttClient, probe: string, dayStart: number): Promise<number> {
  const readings = Array.from({ length: DAY_MS / 300_000 }, (_, i) => ({
    node_id: probe,
    timestamp: new Date(dayStart + i * 300_000).toISOString(),
    temperature_c: 5 + (i % 100) / 10,
    humidity_percent: 60,
    pressure_pa: 101_000 + i,
  }));
  const batches: string[] = [];
  for (let i = 0; i < readings.length; i += 96) batches.push(JSON.stringify(readings.slice(i, i + 96)));
  await publishAll(client, READINGS_TOPIC, batches, 4);
  return readings.length;
}

const ms = (n: number) => (n >= 10 ? n.toFixed(1) : n.toFixed(2));

export async function run(): Promise<BenchResult[]> {
  const data = tempData('regional');
  const bare = await startBare(data.dir);
  let hub: (HubProc & { healthyAfterMs: number }) | undefined;
  let latestBare: (Proc & { url: string }) | undefined;
  let client: MqttClient | undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const profile = process.env.REGIONAL_CPU_PROFILE;
  try {
    const mqttPort = await freePort();
    hub = await startHub({
      how: 'cli',
      dataDir: data.dir,
      env: {
        MQTT_PORT: String(mqttPort),
        MQTT_ALLOW_ANONYMOUS: 'true',
      },
      ...(profile ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profile}`] } : {}),
    });
    const { connectAsync } = await import('mqtt');
    client = await connectAsync(`mqtt://127.0.0.1:${mqttPort}`, { reconnectPeriod: 0 });
    const feed = new RegionalFeed({ nodes: NODES });
    const probe = feed.nodes[0]!.id;
    const dayStart = Date.UTC(2026, 10, 1);
    const probeReadings = await probeDay(client, probe, dayStart);

    const rssBefore = rssMb(hub.pid);
    const warmStart = performance.now();
    let warmCpuUs = 0;
    let warmPackets = 0;
    let warmPublishes = 0;
    let warmEnvironment = 0;
    const warm = async (from: number, to: number) => {
      const packets = [...feed.warmup(from, to)];
      warmPackets += packets.length;
      warmEnvironment += packets.filter((p) => p.kind === 'environment').length;
      const cpu0 = cpuMicros(hub!.pid);
      warmPublishes += await publishPackets(client!, packets, WARM_WINDOW);
      warmCpuUs += cpuMicros(hub!.pid) - cpu0;
    };
    await warm(0, FIRST_STEP);
    const first = await waitForNodes(hub, feed, FIRST_STEP);
    const at1k = await queryTimes(agent, hub, probe, dayStart);
    await warm(FIRST_STEP, NODES);
    const warmS = (performance.now() - warmStart) / 1000;
    const all = await waitForNodes(hub, feed, NODES);
    const atAll = await queryTimes(agent, hub, probe, dayStart);
    const rssWarm = rssMb(hub.pid);
    const memoryWarm = `${rssParts(hub.pid)}, ${await heapOf(hub)}`;

    // The hub's CPU with nothing arriving (timers, coalesced MQTT publishing, the scheduler), to
    // tell the cost of the packets from the cost of running.
    const idle0 = cpuMicros(hub.pid);
    const idleT0 = performance.now();
    await sleep(IDLE_MS);
    const idleCpuPerS = (cpuMicros(hub.pid) - idle0) / ((performance.now() - idleT0) / 1000);
    const phase = await realRate(client, hub, feed, 0);
    const [bareRss, hubRss] = await Promise.all([settledRss(bare.pid, 5_000), settledRss(hub.pid, 5_000)]);
    const load = loadAverage();
    const memorySettled = `${rssParts(hub.pid)}, ${await heapOf(hub)}`;
    const counters = await ingestCounters(hub);

    // Every reading and node stored once, whichever gateways heard it.
    const db = new Database(join(data.dir, HUB_DATABASE_FILE), { readonly: true, fileMustExist: true });
    const storedReadings = db.prepare('SELECT count(*) FROM readings').pluck().get() as number;
    const storedNodes = db.prepare('SELECT count(*) FROM nodes').pluck().get() as number;
    db.close();
    const expectedReadings = probeReadings + warmEnvironment + phase.environment;

    // latest for every node with a reading, against a bare route serving the same bytes.
    const latestPath = '/api/v1/weather/latest';
    const body = await (await fetch(hub.url + latestPath)).text();
    const latestNodes = (JSON.parse(body) as { data: unknown[] }).data.length;
    const bodyFile = join(data.dir, 'latest.json');
    writeFileSync(bodyFile, body);
    latestBare = await bareRoute(bodyFile, latestPath);
    if ((await (await fetch(latestBare.url + latestPath)).text()) !== body)
      throw new Error('bare body differs');
    await rps(hub.url + latestPath, 1);
    await rps(latestBare.url + latestPath, 1);
    const bareRps = await rps(latestBare.url + latestPath);
    const oursRps = await rps(hub.url + latestPath);
    const latestLoad = loadAverage();

    const cpuPerPublish = phase.cpuUs / phase.publishes;
    const cpuPerPacket = phase.cpuUs / phase.packets;
    const scale = (name: string, a: number, b: number, extra = '') =>
      compare(
        `regional: ${name}, ${NODES.toLocaleString('en')} vs ${FIRST_STEP.toLocaleString('en')} nodes known`,
        { label: `${FIRST_STEP.toLocaleString('en')} nodes`, value: a, unit: 'ms' },
        { label: `${NODES.toLocaleString('en')} nodes`, value: b, unit: 'ms' },
        { atMost: 1.5, text: 'about equal (≤ 1.5×)' },
        `median of ${QUERY_REPEATS} sequential GETs, keep-alive${extra}`,
      );
    return [
      compare(
        `regional: hub RSS, ${NODES.toLocaleString('en')} nodes known, after ${SECONDS} s at the real rate`,
        { label: 'bare node: better-sqlite3 + Hono + Aedes started', value: bareRss, unit: 'MB' },
        { label: 'meshhub start, MQTT uplink', value: hubRss, unit: 'MB' },
        { atMost: 2, text: '≤ 2 × bare' },
        `RSS before the warm-up (no feed nodes) ${rssBefore.toFixed(1)} MB, after it ${rssWarm.toFixed(1)} MB (${memoryWarm}), peak during the real rate ` +
          `${phase.peakRss.toFixed(1)} MB; settled: ${memorySettled}; ` +
          `load average ${load}`,
      ),
      compare(
        `regional: latest for all nodes with a reading (${latestNodes.toLocaleString('en')}, ${(body.length / 1024).toFixed(0)} KiB)`,
        { label: 'bare Hono route, same bytes', value: bareRps, unit: 'req/s' },
        { label: 'hub GET /api/v1/weather/latest', value: oursRps, unit: 'req/s' },
        { atLeast: 0.5, text: '≥ 50% of baseline req/s' },
        `autocannon ${LATEST_CONNECTIONS} connections × ${LATEST_SECONDS} s each, after the feed stopped; load average ${latestLoad}`,
      ),
      scale(
        `GET /api/v1/nodes?limit=${NODES_PAGE}`,
        at1k.nodesPage,
        atAll.nodesPage,
        `; ${at1k.sizes} / ${atAll.sizes}`,
      ),
      scale('latest of one node', at1k.latestOne, atAll.latestOne),
      scale("a node's day of history, raw", at1k.historyRaw, atAll.historyRaw),
      scale("a node's day of history, 1h", at1k.history1h, atAll.history1h),
      compare(
        'regional: readings stored once (every gateway copy deduplicated)',
        { label: 'unique environment packets + the probe day', value: expectedReadings, unit: 'rows' },
        { label: 'readings table', value: storedReadings, unit: 'rows' },
        { atLeast: 1, atMost: 1, text: '= exactly' },
        `${counters}; nodes table ${storedNodes} of ${NODES}; ${all.pages} page(s) of /api/v1/nodes at ${all.known} nodes ` +
          `(${first.pages} at ${first.known})`,
      ),
      compare(
        'regional: nodes stored once',
        { label: 'nodes in the feed', value: NODES, unit: 'rows' },
        { label: 'nodes table', value: storedNodes, unit: 'rows' },
        { atLeast: 1, atMost: 1, text: '= exactly' },
        `real rate: ${phase.packets} packets (${(phase.packets / SECONDS).toFixed(1)}/s), ${phase.publishes} publishes ` +
          `(${(phase.publishes / phase.packets).toFixed(2)} copies each) in ${phase.wallS.toFixed(1)} s; ` +
          `hub CPU ${(phase.cpuUs / 1e6).toFixed(2)} s = ${ms(cpuPerPublish)} µs per publish, ${ms(cpuPerPacket)} µs per packet, ` +
          `${((phase.cpuUs / 1e6 / phase.wallS) * 100).toFixed(1)}% of a core; idle, the hub used ` +
          `${(idleCpuPerS / 1e4).toFixed(2)}% of a core, so the difference is ` +
          `${ms((phase.cpuUs - idleCpuPerS * phase.wallS) / phase.publishes)} µs per publish (within the idle's ` +
          `noise: at this rate the packets cost less than running does); PUBACK p50 ${ms(phase.ackP50)} ms, ` +
          `p99 ${ms(phase.ackP99)} ms; publisher at most ${phase.maxLagMs} ms behind schedule. ` +
          `Warm-up: ${warmPackets} packets, ${warmPublishes} publishes in ${warmS.toFixed(1)} s ` +
          `(${(warmPublishes / warmS).toFixed(0)} publishes/s), hub CPU ${ms(warmCpuUs / warmPublishes)} µs per publish, ` +
          `${ms(warmCpuUs / warmPackets)} µs per packet (the cost of a packet when the hub is busy); hub healthy after ${hub.healthyAfterMs.toFixed(0)} ms`,
      ),
    ];
  } finally {
    agent.destroy();
    await client?.endAsync().catch(() => undefined);
    await latestBare?.stop();
    await hub?.stop();
    await bare.stop();
    data.cleanup();
  }
}
