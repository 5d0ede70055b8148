/**
 * Upstream sync (issue 12 "Performance"), on one machine: the hub side, the upstream
 * (`createUpstream`, its own process) and PostgreSQL all share the same cores, on loopback.
 *
 * 1. Catch-up after 7 days offline: a site with 50 nodes reporting every 5 minutes (100,800
 *    readings) has them in its real SQLite outbox (written through the real ReadingWriter and
 *    its outbox observer, a 5-minute round per writer transaction). The hub's real push actor
 *    (the sync module as the hub builds it) drains it to a real upstream on a fresh PostgreSQL
 *    schema: wall time from starting the actor until the outbox is empty (every batch
 *    acknowledged, so committed upstream), after a warm-up drain of one day (another site).
 *    Baseline in the same run: a plain `COPY readings (…) FROM STDIN` (pg-copy-streams) of the
 *    same rows into the same `readings` table of another fresh schema, partitions made as the
 *    upstream makes them, best of three. Target: ours ≥ 50% of COPY's rows/s. Two more drains
 *    for information: the week written one reading per writer transaction (a radio site: an
 *    outbox entry per reading), and that with each reading's node update too (what the node
 *    directory writes for every packet heard). Exact counts are checked after each drain; the
 *    CPU the hub, the upstream and PostgreSQL used during each drain is in the notes.
 * 2. Sync must not cost the hub's own ingest more than 10%: the MQTT ingest bench's path (its
 *    publisher, mirrored here: `mqtt`, QoS 1, WINDOW in flight, a hub child with PUBACK after
 *    commit) against a hub with no upstream and a hub with SYNC_UPSTREAM_URL pointing at the
 *    running upstream, in pairs of rounds back to back (the order alternating: alone, push,
 *    push, alone, …), each round once the machine is quiet (and the upstream's tables
 *    vacuumed after a pushing round). Target: the median of the pairs'
 *    msg/s ratios ≥ 90%; every pair is in the notes. The hubs' CPU per message (from /proc,
 *    steadier than msg/s on a shared machine) is a second row, the median of the pairs' ratios,
 *    with the pushing hub's also until the upstream held every reading.
 *    SYNC_BENCH_INGEST_OUTBOX=1 adds a third hub to each pair, whose SYNC_UPSTREAM_URL answers
 *    nothing (the outbox fills, nothing is pushed), for the outbox's cost alone.
 * 3. A text from an upstream subscriber to the radio of an online site (RADIO=sim, pacing off:
 *    MESSAGE_AIRTIME_PERCENT=100): from POST /api/v1/messages on the upstream until the site's
 *    radio actor has written the packet to the radio link (its `radio.send` answered). Baseline,
 *    interleaved: the same text POSTed to the site hub's own /api/v1/messages (the LAN path).
 *    Target: p95 ≤ 1 s (absolute); the ratio to the LAN path is for information.
 * 4. Sites per PostgreSQL (a figure, not a target): N simulated sites, each POSTing signed gzip'd
 *    batches back to back, all N at once, to the upstream's real endpoint: batches of a 50-node
 *    site's 5-minute round (50 readings and their 50 node updates), and, for a site online that
 *    pushes as readings arrive, batches of one reading and its node update. Readings applied per
 *    second, and how many sites of 50 nodes reporting every 5 minutes that rate serves.
 *
 * The hubs get their SYNC_* settings as `meshhub start` does: createHub's `env` (its sliced modules).
 *
 * PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the one `.ci/run` creates; every
 * schema made here is dropped at the end. SYNC_BENCH_CPU_PROFILE=<dir> writes a V8 CPU profile of
 * each child process (the upstream, the MQTT hubs) there.
 *
 * This file is also the child: with SYNC_BENCH_ROLE set it runs the upstream or a hub and sends
 * its port.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
// The `mqtt` client is imported where it is used: this file is also the hub child.
import type { MqttClient } from 'mqtt';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { pino } from 'pino';
import type { Hub } from '../../hub/main.js';
import { standaloneModuleHost } from '../../hub/module-host.js';
import { HUB_NODE_FLAGS } from '../../hub/node-flags.js';
import { LocalIssuer } from '../../src/auth/local-issuer.js';
import { HubUserService } from '../../src/auth/user-service.js';
import type { Reading } from '../../src/domain/reading.js';
import { createHttpApp } from '../../src/http/app.js';
import type { HealthReport } from '../../src/http/health.js';
import { HubMetrics } from '../../src/metrics.js';
import type { MqttBrokerActor } from '../../src/mqtt/broker-actor.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { METRIC_COLUMNS } from '../../src/store/rollups.js';
import { weatherRoutes } from '../../src/weather/routes.js';
import { WeatherService } from '../../src/weather/weather-service.js';
import { batchSchema, SYNC_API, SYNC_PROTOCOL_VERSION } from '../../sync/protocol.js';
import { signSiteRequest } from '../../sync/signing.js';
import { syncModule } from '../../sync/site/module.js';
import { Outbox } from '../../sync/site/outbox.js';
import { enableOutbox } from '../../sync/site/outbox-schema.js';
import type { SyncPushActor } from '../../sync/site/push-actor.js';
import { syncSettings } from '../../sync/site/settings.js';
import { UpstreamUserService } from '../../sync/upstream/auth/user-service.js';
import { BatchApplier } from '../../sync/upstream/batch-apply.js';
import { migrateUpstream } from '../../sync/upstream/db/migrate.js';
import { ensurePartitions } from '../../sync/upstream/db/partitions.js';
import { openPool } from '../../sync/upstream/db/pool.js';
import { SiteRegistry } from '../../sync/upstream/sites.js';
import { type BrokerChild, forkBrokerChild, reportPort } from './lib/broker-child.js';
import { get, historyQuery, serveOnLoopback } from './lib/http.js';
import { loopbackHubEnv } from './lib/hub-env.js';
import { publishAll, readingMessages, READINGS_TOPIC as TOPIC } from './lib/mqtt-publish.js';
import { createScratchSchema, type ScratchSchema } from './lib/postgres.js';
import { interleavedReadings, nodeId, tempDir } from './lib/readings.js';
import { absolute, type BenchResult, compare, median, percentile } from './report.js';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ??
  process.env.TEST_DATABASE_URL ??
  'postgres://meshhub:meshhub@127.0.0.1:5432/meshhub_test';

// 1. catch-up
const SITE_NODES = 50;
const INTERVAL_MS = 5 * 60_000;
const OFFLINE_DAYS = 7;
const CATCH_UP_READINGS = SITE_NODES * ((OFFLINE_DAYS * 86_400_000) / INTERVAL_MS); // 100,800
// 2. ingest with sync
/**
 * About 3 s at this machine's rate (the MQTT bench's 50k is under a second: msg/s swings). An
 * online hub pushes its readings once none came for SYNC_READINGS_DEBOUNCE (2 s), at the latest
 * 30 s after the first: this burst is pushed after it ends, so the rounds also measure the hub's
 * CPU until the upstream holds every reading (the whole cost of the push to the hub).
 */
const MESSAGES = Number(process.env.SYNC_BENCH_MESSAGES ?? 200_000);
const WINDOW = 1_000;
/** Pairs of rounds (one without an upstream, one with), SYNC_BENCH_INGEST_ROUNDS of them. */
const INGEST_PAIRS = Math.max(1, Number(process.env.SYNC_BENCH_INGEST_ROUNDS ?? 5));
/** SYNC_BENCH_INGEST_OUTBOX=1: an outbox-only hub (upstream unreachable) after each pair. */
const INGEST_OUTBOX = process.env.SYNC_BENCH_INGEST_OUTBOX === '1';
/** A round starts once the whole machine was at most this busy over a window (see `settle`). */
const INGEST_QUIET_SHARE = 0.1;
const INGEST_QUIET_WINDOW_MS = 250;
const INGEST_QUIET_MAX_MS = 10_000;
// 3. texts
const TEXTS = 100;
// 4. sites per PostgreSQL
const SITE_COUNTS = (process.env.SYNC_BENCH_SITES ?? '20,50,100').split(',').map(Number);
const SITES_SECONDS = Number(process.env.SYNC_BENCH_SITES_SECONDS ?? 6);
/** Readings one site produces per second: 50 nodes, one reading each per 5 minutes. */
const SITE_READINGS_PER_S = SITE_NODES / (INTERVAL_MS / 1000);

const silent = pino({ level: 'silent' });
const gzipAsync = promisify(gzip);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// ---------------------------------------------------------------- child processes

type Role = 'upstream' | 'hub';

/** The upstream (`createUpstream`) on SYNC_BENCH_DATABASE_URL, or a hub as the MQTT bench runs it. */
async function serveChild(role: Role): Promise<void> {
  let port: number;
  let close: () => Promise<void>;
  if (role === 'upstream') {
    const { createUpstream } = await import('../../sync/upstream/main.js');
    const { loadUpstreamSettings } = await import('../../sync/upstream/settings.js');
    const settings = loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: process.env.SYNC_BENCH_DATABASE_URL,
      UPSTREAM_DB_POOL_MAX: process.env.SYNC_BENCH_POOL_MAX ?? '10',
      DATA_DIR: process.env.SYNC_BENCH_DATA_DIR,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      MESSAGE_RATE_PER_SUBSCRIBER: '1000000/1m',
      MESSAGE_RATE_PER_NODE: '1000000/1m',
      // The history bench reads anonymously, as the hub is read; series carry no positions.
      UPSTREAM_PUBLIC_READ: 'true',
    });
    const upstream = await createUpstream(settings, { log: silent, defaultMetrics: false });
    await upstream.start();
    port = upstream.port;
    close = () => upstream.stop();
  } else {
    const { loadConfig } = await import('../../hub/settings.js');
    const { createHub } = await import('../../hub/main.js');
    // As scripts/bench/mqtt.ts runs its hub, plus the SYNC_* settings of the sync side.
    const env = loopbackHubEnv(process.env.SYNC_BENCH_DATA_DIR as string, {
      MQTT_ALLOW_ANONYMOUS: 'true',
      ...(JSON.parse(process.env.SYNC_BENCH_HUB_ENV ?? '{}') as Record<string, string>),
    });
    // The sync module reads its SYNC_* slice from `env` (hub/main.ts SLICED_CORE_MODULES).
    const hub = await createHub(loadConfig(env), { log: silent, defaultMetrics: false, env });
    await hub.start();
    port = hub.actor<MqttBrokerActor>('mqtt')!.port;
    close = () => hub.stop();
  }
  reportPort(port, close);
}

type Child = BrokerChild;

function startChild(role: Role, env: Record<string, string>): Promise<Child> {
  return forkBrokerChild(
    fileURLToPath(import.meta.url),
    { ...env, SYNC_BENCH_ROLE: role },
    process.env.SYNC_BENCH_CPU_PROFILE,
    `the ${role} child`,
  );
}

interface Upstream {
  url: string;
  pool: pg.Pool;
  sites: SiteRegistry;
  dataDir: string;
  child: Child;
  /** Registers a site under the public keys of the hub whose DATA_DIR is `dataDir`. */
  register(siteId: string, dataDir: string): Promise<LocalIssuer>;
  stop(): Promise<void>;
}

async function startUpstream(schema: ScratchSchema): Promise<Upstream> {
  const dir = tempDir('sync-upstream');
  const child = await startChild('upstream', {
    SYNC_BENCH_DATABASE_URL: schema.url,
    SYNC_BENCH_DATA_DIR: dir.dir,
  });
  const pool = openPool(schema.url, { max: 4, applicationName: 'meshhub-bench' });
  const sites = new SiteRegistry(pool);
  return {
    url: `http://127.0.0.1:${child.port}`,
    pool,
    sites,
    dataDir: dir.dir,
    child,
    async register(siteId, dataDir) {
      const issuer = await LocalIssuer.open(dataDir);
      await sites.add({ siteId, publicJwks: issuer.jwks() });
      return issuer;
    },
    async stop() {
      await child.stop();
      await pool.end();
      dir.cleanup();
    },
  };
}

/** CPU time (user + system) a process has used so far, in µs, from /proc (clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function waitFor<T>(
  what: string | (() => string),
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 30_000,
  everyMs = 20,
) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------- 1. catch-up

const READING_COPY_COLUMNS = ['site_id', 'node_id', 'ts', ...METRIC_COLUMNS, 'received_at'];

function readingValues(r: Reading): (number | undefined)[] {
  return [
    r.temperatureC,
    r.humidityPercent,
    r.pressurePa,
    r.windSpeedMs,
    r.windDirection,
    r.pm25Ugm3,
    r.pm10Ugm3,
    r.gasResistanceKohm,
  ];
}

/** COPY of the same rows into the same `readings` table of a fresh schema; rows/s. */
async function copyBaseline(readings: Reading[], siteId: string): Promise<number> {
  const schema = await createScratchSchema(DATABASE_URL, 'bench_sync_copy');
  const pool = openPool(schema.url, { max: 2, applicationName: 'meshhub-bench' });
  try {
    await migrateUpstream(pool);
    await ensurePartitions(pool, [readings[0]!.timestamp, readings[readings.length - 1]!.timestamp]);
    const now = Date.now();
    // Text-format lines, built before the clock starts: the baseline is PostgreSQL's loading only.
    const chunks: string[] = [];
    let chunk = '';
    for (let i = 0; i < readings.length; i++) {
      const r = readings[i]!;
      const values = readingValues(r).map((v) => (v === undefined ? '\\N' : String(v)));
      chunk += `${siteId}\t${r.nodeId}\t${r.timestamp}\t${values.join('\t')}\t${now}\n`;
      if (i % 2000 === 1999) {
        chunks.push(chunk);
        chunk = '';
      }
    }
    if (chunk) chunks.push(chunk);
    const client = await pool.connect();
    try {
      const t0 = performance.now();
      await pipeline(
        Readable.from(chunks),
        client.query(copyFrom(`COPY readings (${READING_COPY_COLUMNS.join(', ')}) FROM STDIN`)),
      );
      const ms = performance.now() - t0;
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM readings');
      if (rows[0]!.n !== readings.length) throw new Error(`COPY stored ${rows[0]!.n} of ${readings.length}`);
      return readings.length / (ms / 1000);
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
    await schema.drop();
  }
}

/** CPU time (ms) used so far by this process (the hub side), the upstream child and PostgreSQL. */
interface CpuTimes {
  hub: number;
  upstream: number;
  postgres: number;
}

/** Every PostgreSQL process's CPU time so far, in µs (all of them: other clients' work included). */
function postgresCpuMicros(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ')[1]!.split(' ');
      total += (Number(fields[11]) + Number(fields[12])) * 10_000;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

function cpuNow(upstream: Upstream): CpuTimes {
  const own = process.cpuUsage();
  return {
    hub: (own.user + own.system) / 1000,
    upstream: cpuMicros(upstream.child.process.pid!) / 1000,
    postgres: postgresCpuMicros() / 1000,
  };
}

function cpuSince(from: CpuTimes, to: CpuTimes): CpuTimes {
  return {
    hub: to.hub - from.hub,
    upstream: to.upstream - from.upstream,
    postgres: to.postgres - from.postgres,
  };
}

interface Drain {
  cpu: CpuTimes;
  ms: number;
  /** Outbox entries drained. */
  entries: number;
  readings: number;
  batches: number;
}

/**
 * A hub's outbox after OFFLINE_DAYS offline (readings, and optionally one node update per
 * reading), drained by the sync module's push actor to the upstream. Returns the timings.
 * `perReading`: each reading written alone (one writer call, so one `readings` entry, per
 * reading), as a radio site's readings trickle in; otherwise a 5-minute round of the mesh (50
 * readings) per writer call.
 */
async function drainOutbox(
  upstream: Upstream,
  siteId: string,
  readings: Reading[],
  options: {
    withNodeUpdates?: boolean;
    perReading?: boolean;
    /** Runs on the site's database once the drain is checked, before it is closed. */
    inspect?: (db: Database) => Promise<void>;
  } = {},
): Promise<Drain> {
  const withNodeUpdates = options.withNodeUpdates ?? false;
  const dir = tempDir('sync-catchup');
  const db = openDatabase(dir.file('meshhub.sqlite'));
  try {
    enableOutbox(db);
    const writer = new ReadingWriter(db);
    const nodes = new NodeRepository(db);
    // Through the hub's writer (and its outbox observer), an hour of rounds per transaction (the
    // setup is not timed; one commit per round would take minutes).
    const hour = db.transaction((rounds: Reading[][]) => {
      for (const rows of rounds) {
        if (options.perReading) for (const r of rows) writer.write([r]);
        else writer.write(rows);
      }
      if (withNodeUpdates) {
        for (const r of rounds.flat()) {
          const num = Number.parseInt(r.nodeId.slice(1), 16);
          nodes.upsert(
            { nodeNum: num, nodeId: r.nodeId, lastHeard: r.timestamp, snr: 5 + (r.timestamp % 7) },
            r.timestamp,
          );
        }
      }
    });
    const perHour = 3_600_000 / INTERVAL_MS;
    for (let i = 0; i < readings.length; i += SITE_NODES * perHour) {
      const rounds: Reading[][] = [];
      for (let k = 0; k < perHour; k++) {
        const at = i + k * SITE_NODES;
        if (at < readings.length) rounds.push(readings.slice(at, at + SITE_NODES));
      }
      hour(rounds);
    }
    const outbox = new Outbox(db);
    // One `readings` entry per writer call (per round, or per reading); one per node for its
    // updates (nothing was read while offline: each node's newest entry took in the next update).
    const calls = options.perReading ? readings.length : Math.ceil(readings.length / SITE_NODES);
    const expected = calls + (withNodeUpdates ? new Set(readings.map((r) => r.nodeId)).size : 0);
    const depth = outbox.stats().depth;
    if (depth !== expected) throw new Error(`the outbox holds ${depth} entries, expected ${expected}`);
    const lastSeq = outbox.lastSeq();

    await upstream.register(siteId, dir.dir);
    const { host } = await standaloneModuleHost({ db, dataDir: dir.dir, log: silent });
    const [actor] = (await host.create(
      syncModule,
      syncSettings.parse({
        SYNC_UPSTREAM_URL: upstream.url,
        SYNC_SITE_ID: siteId,
        // The defaults unless asked (to measure other batch sizes).
        ...(process.env.SYNC_BENCH_BATCH_MAX_BYTES
          ? { SYNC_BATCH_MAX_BYTES: process.env.SYNC_BENCH_BATCH_MAX_BYTES }
          : {}),
      }),
    )) as SyncPushActor[];
    if (!actor) throw new Error('the sync module made no actor');
    const cpu0 = cpuNow(upstream);
    const t0 = performance.now();
    await actor.start();
    await waitFor('the outbox to drain', () => outbox.ackedSeq() >= lastSeq || undefined, 600_000, 2);
    const ms = performance.now() - t0;
    const cpu = cpuSince(cpu0, cpuNow(upstream));
    await actor.stop();

    // Exact counts (not timed): every reading, every node, the cursor.
    const { rows } = await upstream.pool.query<{ readings: number; nodes: number; acked: number }>(
      `SELECT (SELECT count(*)::int FROM readings WHERE site_id = $1) AS readings,
              (SELECT count(*)::int FROM nodes WHERE site_id = $1) AS nodes,
              (SELECT acked_seq FROM sites WHERE site_id = $1) AS acked`,
      [siteId],
    );
    const got = rows[0]!;
    const wantNodes = withNodeUpdates ? SITE_NODES : 0;
    if (got.readings !== readings.length || got.nodes !== wantNodes || got.acked !== lastSeq) {
      throw new Error(
        `upstream holds ${got.readings} readings, ${got.nodes} nodes, acked ${got.acked}; expected ${readings.length}, ${wantNodes}, ${lastSeq}`,
      );
    }
    if (outbox.stats().depth !== 0) throw new Error('the outbox is not empty after the drain');
    await options.inspect?.(db);
    const { rows: batches } = await upstream.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM sync_batches WHERE site_id = $1',
      [siteId],
    );
    return { ms, entries: expected, readings: readings.length, batches: batches[0]!.n, cpu };
  } finally {
    closeDatabase(db);
    dir.cleanup();
  }
}

async function catchUp(upstream: Upstream): Promise<BenchResult[]> {
  // Whole 5-minute rounds ending an hour ago: the week the site was offline.
  const end = Math.floor((Date.now() - 3_600_000) / INTERVAL_MS) * INTERVAL_MS;
  const readings = interleavedReadings({
    nodes: SITE_NODES,
    count: CATCH_UP_READINGS,
    startMs: end - OFFLINE_DAYS * 86_400_000,
    intervalMs: INTERVAL_MS,
  });
  // Warm-up (not measured): a day of the same mesh through a fresh upstream process, so its code
  // is compiled and its pool's connections have run the statements once, as on an upstream
  // that has been running when a site comes back.
  await drainOutbox(upstream, 'catchup-warmup', readings.slice(0, (SITE_NODES * 86_400_000) / INTERVAL_MS));
  const copyRates: number[] = [];
  copyRates.push(await copyBaseline(readings, 'catchup'));
  const plain = await drainOutbox(upstream, 'catchup-readings', readings);
  copyRates.push(await copyBaseline(readings, 'catchup'));
  const single = await drainOutbox(upstream, 'catchup-single', readings, { perReading: true });
  copyRates.push(await copyBaseline(readings, 'catchup'));
  const withNodes = await drainOutbox(upstream, 'catchup-realistic', readings, {
    perReading: true,
    withNodeUpdates: true,
  });
  const copy = Math.max(...copyRates);
  const rate = (d: Drain) => d.readings / (d.ms / 1000);
  const describe = (d: Drain) =>
    `${fmt(d.entries)} outbox entries in ${d.batches} batches, ${(d.ms / 1000).toFixed(2)} s, ` +
    `${fmt(d.entries / (d.ms / 1000))} entries/s; CPU during the drain: hub ${fmt(d.cpu.hub)} ms, ` +
    `upstream ${fmt(d.cpu.upstream)} ms, PostgreSQL ${fmt(d.cpu.postgres)} ms (10 ms ticks)`;
  return [
    compare(
      `sync: catch-up, 7 days × 50 nodes (${fmt(CATCH_UP_READINGS)} readings) hub outbox → upstream`,
      { label: 'COPY readings FROM STDIN', value: copy, unit: 'rows/s' },
      { label: 'push actor → upstream, until the outbox is empty', value: rate(plain), unit: 'rows/s' },
      { atLeast: 0.5, text: '≥ 50% of COPY rows/s' },
      `COPY ${copyRates.map(fmt).join(' / ')} rows/s (best taken); ours: a 5-minute round (50 readings) per ` +
        `writer transaction, ${describe(plain)}; exact counts checked`,
    ),
    compare(
      'sync: catch-up, same week written one reading per writer transaction (a radio site)',
      { label: 'COPY readings FROM STDIN', value: copy, unit: 'rows/s' },
      { label: 'push actor → upstream, until the outbox is empty', value: rate(single), unit: 'rows/s' },
      { atLeast: 0.5, text: '≥ 50% of COPY rows/s (information)' },
      `${describe(single)} (merged into records of up to 1,000 rows); exact counts checked`,
    ),
    compare(
      'sync: catch-up, same week, one reading per writer transaction and one node update per reading (realistic outbox)',
      { label: 'COPY readings FROM STDIN', value: copy, unit: 'rows/s' },
      { label: 'readings/s, node updates riding along', value: rate(withNodes), unit: 'rows/s' },
      { atLeast: 0.5, text: '≥ 50% of COPY rows/s (information)' },
      `${describe(withNodes)}; exact counts checked`,
    ),
  ];
}

// ---------------------------------------------------------------- 2. ingest with sync

/**
 * The MQTT bench's publisher (scripts/bench/mqtt.ts `publishReadings`): QoS 1 readings with at
 * most WINDOW unacknowledged; returns messages per second. 50 stations a quarter second apart
 * (each one's readings 12.5 s apart: 200k readings end in the past).
 */
async function publishReadings(client: MqttClient, count: number, startMs: number): Promise<number> {
  const payloads = readingMessages(count, startMs, 250, (i) => nodeId(i % 50));
  const t0 = performance.now();
  await publishAll(client, TOPIC, payloads, WINDOW);
  return count / ((performance.now() - t0) / 1000);
}

interface IngestRound {
  mode: IngestMode;
  rate: number;
  cpuPerMessageUs: number;
  /** How long the machine took to be quiet before this round (settle), and whether it was. */
  settleMs: number;
  quiet: boolean;
  /** Readings the upstream held for this hub's site when the round ended. */
  pushed?: number;
  /** Hub CPU per message from the round's start until the upstream held all its readings. */
  cpuWithPushUs?: number;
  /** How long after the round's end the upstream held them all (ms). */
  pushLagMs?: number;
}

/**
 * `alone`: no upstream configured (no outbox). `outbox`: SYNC_UPSTREAM_URL set but nothing
 * answers there (the outbox fills, nothing is pushed: the outbox's cost alone). `push`: the
 * running upstream (the outbox fills during the burst and is pushed once it ends).
 */
type IngestMode = 'alone' | 'outbox' | 'push';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Busy and total clock ticks of the whole machine so far (/proc/stat, every core). */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  // user nice system idle iowait irq softirq steal: idle and iowait are no work.
  return { busy: total - fields[3]! - fields[4]!, total };
}

/**
 * Waits until the machine is quiet: under INGEST_QUIET_SHARE of all cores busy over a
 * INGEST_QUIET_WINDOW_MS window, so that no round starts while PostgreSQL (autovacuum after a
 * push, a checkpoint), the upstream or the kernel's writeback still work for the round before;
 * at most INGEST_QUIET_MAX_MS (then `quiet` is false: something else uses the machine).
 */
async function settle(): Promise<{ settleMs: number; quiet: boolean }> {
  const t0 = performance.now();
  for (;;) {
    const a = machineTicks();
    await sleep(INGEST_QUIET_WINDOW_MS);
    const b = machineTicks();
    const share = (b.busy - a.busy) / Math.max(1, b.total - a.total);
    const settleMs = performance.now() - t0;
    if (share <= INGEST_QUIET_SHARE) return { settleMs, quiet: true };
    if (settleMs >= INGEST_QUIET_MAX_MS) return { settleMs, quiet: false };
  }
}

async function ingestRound(
  upstream: Upstream,
  mode: IngestMode,
  round: number | string,
  messages = MESSAGES,
  day = typeof round === 'number' ? round : 0,
): Promise<IngestRound> {
  const dir = tempDir('sync-mqtt');
  const siteId = `ingest-${mode}-${round}`;
  const hubEnv: Record<string, string> = {};
  if (mode === 'push') {
    await upstream.register(siteId, dir.dir);
    hubEnv.SYNC_UPSTREAM_URL = upstream.url;
    hubEnv.SYNC_SITE_ID = siteId;
  } else if (mode === 'outbox') {
    hubEnv.SYNC_UPSTREAM_URL = `http://127.0.0.1:${await closedPort()}`;
    hubEnv.SYNC_SITE_ID = siteId;
  }
  const { settleMs, quiet } = await settle();
  const child = await startChild('hub', {
    SYNC_BENCH_DATA_DIR: dir.dir,
    SYNC_BENCH_HUB_ENV: JSON.stringify(hubEnv),
  });
  try {
    const { connectAsync } = await import('mqtt');
    const client = await connectAsync(`mqtt://127.0.0.1:${child.port}`, { reconnectPeriod: 0 });
    // Recent times (the upstream's partitions), a day apart per round.
    const start = Date.now() - (day + 2) * 86_400_000;
    await publishReadings(client, 2_000, start - 86_400_000); // warm-up
    const cpu0 = cpuMicros(child.process.pid!);
    const rate = await publishReadings(client, messages, start);
    const cpuPerMessageUs = (cpuMicros(child.process.pid!) - cpu0) / messages;
    const ended = performance.now();
    await client.endAsync();
    const measured = { mode, rate, cpuPerMessageUs, settleMs, quiet };
    if (mode !== 'push') return measured;
    const held = async () => {
      const { rows } = await upstream.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM readings WHERE site_id = $1',
        [siteId],
      );
      return rows[0]!.n;
    };
    const pushed = await held();
    // Then everything, once the hub has pushed the rest: its whole cost per message.
    await waitFor(
      'the hub to push every reading',
      async () => (await held()) >= 2_000 + messages || undefined,
      60_000,
      50,
    );
    const pushLagMs = performance.now() - ended;
    const cpuWithPushUs = (cpuMicros(child.process.pid!) - cpu0) / messages;
    return { ...measured, pushed, cpuWithPushUs, pushLagMs };
  } finally {
    await child.stop();
    dir.cleanup();
  }
}

/**
 * After a pushing round: VACUUM (ANALYZE) every table of the bench's schema, so that autovacuum,
 * which the round's 200k rows would start within its naptime (a minute), does not start in the
 * middle of a later round and take a core from whichever hub runs then.
 */
async function vacuumUpstream(upstream: Upstream): Promise<void> {
  const { rows } = await upstream.pool.query<{ t: string }>(
    `SELECT format('%I.%I', n.nspname, c.relname) AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema() AND c.relkind = 'r'`,
  );
  if (rows.length > 0) await upstream.pool.query(`VACUUM (ANALYZE) ${rows.map((r) => r.t).join(', ')}`);
}

/** One pair of rounds: the hub without an upstream and with one, back to back. */
interface IngestPair {
  alone: IngestRound;
  push: IngestRound;
  /** Which of the two ran first (pairs alternate: alone–push, push–alone, …). */
  first: 'alone' | 'push';
  /** With SYNC_BENCH_INGEST_OUTBOX=1, the outbox-only hub after the pair (information). */
  outbox?: IngestRound;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function describePair(p: IngestPair, k: number): string {
  const order = p.first === 'alone' ? 'alone→push' : 'push→alone';
  const loud = [p.alone, p.push, p.outbox].some((r) => r && !r.quiet) ? ' (machine not quiet)' : '';
  return (
    `${k + 1} ${order}: ${fmt(p.alone.rate)}/${fmt(p.push.rate)} msg/s ${pct(p.push.rate / p.alone.rate)}, ` +
    `CPU ${p.alone.cpuPerMessageUs.toFixed(1)}/${p.push.cpuPerMessageUs.toFixed(1)} µs ` +
    `${pct(p.push.cpuPerMessageUs / p.alone.cpuPerMessageUs)}` +
    (p.outbox
      ? `, outbox only ${fmt(p.outbox.rate)} msg/s ${pct(p.outbox.rate / p.alone.rate)} ` +
        `${p.outbox.cpuPerMessageUs.toFixed(1)} µs`
      : '') +
    loud
  );
}

/**
 * MQTT ingest with and without sync, as PAIRS of rounds back to back, the order alternating
 * (alone–push, push–alone, …: alone, push, push, alone, alone, push, …), each round after the
 * machine is quiet (`settle`) and, after a pushing round, the upstream's tables vacuumed
 * (`vacuumUpstream`). The figure is the median of the pairs' ratios: a pair's two
 * rounds see the same machine (another process's load, the disk's state), which the best of
 * each, taken from different minutes, did not. One short round of each mode first, not counted
 * (the upstream's code and PostgreSQL's caches warm).
 */
async function ingestWithSync(upstream: Upstream): Promise<BenchResult[]> {
  for (const mode of ['alone', 'push'] as const)
    await ingestRound(upstream, mode, 'warm-up', MESSAGES / 4, 0);
  await vacuumUpstream(upstream);
  const pairs: IngestPair[] = [];
  for (let k = 0; k < INGEST_PAIRS; k++) {
    const order: ('alone' | 'push')[] = k % 2 === 0 ? ['alone', 'push'] : ['push', 'alone'];
    const rounds: Partial<Record<IngestMode, IngestRound>> = {};
    // A day apart per pair (both rounds of a pair the same day: different sites upstream).
    for (const mode of order) {
      rounds[mode] = await ingestRound(upstream, mode, k, MESSAGES, k + 1);
      if (mode === 'push') await vacuumUpstream(upstream);
    }
    if (INGEST_OUTBOX) rounds.outbox = await ingestRound(upstream, 'outbox', k, MESSAGES, k + 1);
    const pair: IngestPair = {
      alone: rounds.alone!,
      push: rounds.push!,
      first: order[0]!,
      ...(rounds.outbox ? { outbox: rounds.outbox } : {}),
    };
    pairs.push(pair);
    process.stderr.write(`  ingest pair ${describePair(pair, k)}\n`);
  }
  const rateRatio = median(pairs.map((p) => p.push.rate / p.alone.rate));
  const cpuRatio = median(pairs.map((p) => p.push.cpuPerMessageUs / p.alone.cpuPerMessageUs));
  /** The median of `pick` over every round of `mode`. */
  const of = (mode: IngestMode, pick: (r: IngestRound) => number | undefined) =>
    median(
      pairs.flatMap((p) => {
        const value = p[mode] && pick(p[mode]);
        return value === undefined ? [] : [value];
      }),
    );
  const cpuAlone = of('alone', (r) => r.cpuPerMessageUs);
  const cpuPush = of('push', (r) => r.cpuPerMessageUs);
  const cpuWithPush = of('push', (r) => r.cpuWithPushUs);
  const outboxNote = INGEST_OUTBOX
    ? `; outbox only (upstream unreachable) median ${of('outbox', (r) => r.cpuPerMessageUs).toFixed(1)} µs ` +
      `(${pct(median(pairs.map((p) => p.outbox!.cpuPerMessageUs / p.alone.cpuPerMessageUs)))} of its pair's alone)`
    : '';
  const msgs = `${MESSAGES / 1000}k QoS 1 readings, ${WINDOW} in flight`;
  const rate = compare(
    `sync: MQTT ingest (${msgs}) while pushing upstream`,
    { label: 'hub, no upstream (median)', value: of('alone', (r) => r.rate), unit: 'msg/s' },
    {
      label: 'hub with SYNC_UPSTREAM_URL, pushing (median)',
      value: of('push', (r) => r.rate),
      unit: 'msg/s',
    },
    { atLeast: 0.9, text: '≥ 90% of the hub without upstream (median of the pairs’ ratios)' },
    `ratio: median of ${INGEST_PAIRS} pairs' ratios (min ${pct(Math.min(...pairs.map((p) => p.push.rate / p.alone.rate)))}, ` +
      `max ${pct(Math.max(...pairs.map((p) => p.push.rate / p.alone.rate)))}); pairs (alone/push): ` +
      `${pairs.map(describePair).join('; ')}; ` +
      `readings the upstream held when each pushing round ended: ${pairs.map((p) => fmt(p.push.pushed ?? 0)).join('/')} ` +
      `of ${fmt(MESSAGES + 2_000)}, all of them ${pairs.map((p) => fmt(p.push.pushLagMs ?? 0)).join('/')} ms later`,
  );
  const cpu = compare(
    `sync: hub CPU per message of that ingest (${msgs})`,
    { label: 'hub, no upstream (median)', value: cpuAlone, unit: 'µs' },
    { label: 'hub with SYNC_UPSTREAM_URL, pushing (median)', value: cpuPush, unit: 'µs' },
    { text: 'information (≤ 110% would be the 10%; median of the pairs’ ratios)' },
    `ratio: median of the pairs' ratios; the pushing hub until the upstream held every reading: ` +
      `${cpuWithPush.toFixed(1)} µs (${pct(cpuWithPush / cpuAlone)} of alone's median)${outboxNote}`,
  );
  return [
    { ...rate, ratio: rateRatio, pass: rateRatio >= 0.9 },
    { ...cpu, ratio: cpuRatio },
  ];
}

// ---------------------------------------------------------------- 3. texts

interface PostedText {
  id: string;
  t0: number;
}

async function textLatency(upstream: Upstream): Promise<BenchResult[]> {
  const { loadConfig } = await import('../../hub/settings.js');
  const { createHub } = await import('../../hub/main.js');
  const { SubscriptionRepository } = await import('../../src/messaging/subscription-repository.js');
  const dir = tempDir('sync-texts');
  const siteId = 'texts-site';
  await upstream.register(siteId, dir.dir);
  const env = loopbackHubEnv(dir.dir, {
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_NODES: '6',
    SIM_BACKFILL: '1h',
    SIM_FAILURE_PERCENT: '0',
    SIM_ACK_DELAY_SCALE: '0.01',
    // No airtime pacing, no rate limit in the way of 100 texts.
    MESSAGE_AIRTIME_PERCENT: '100',
    MESSAGE_RATE_PER_SUBSCRIBER: '1000000/1m',
    MESSAGE_RATE_PER_NODE: '1000000/1m',
    SYNC_UPSTREAM_URL: upstream.url,
    SYNC_SITE_ID: siteId,
  });
  const hub: Hub = await createHub(loadConfig(env), { log: silent, defaultMetrics: false, env });
  const db = hub.store.db;
  // The moment the radio actor has written a packet to the radio link: its `radio.send` answered.
  const packetOf = db
    .prepare(
      'SELECT m.public_id FROM message_packets p JOIN messages m ON m.id = p.message_id WHERE p.packet_id = ?',
    )
    .pluck();
  const sentAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const ask = hub.bus.ask.bind(hub.bus);
  hub.bus.ask = (async (name: string, request: unknown, options: { timeoutMs: number }) => {
    const answer = await (ask as (n: string, r: unknown, o: unknown) => Promise<unknown>)(
      name,
      request,
      options,
    );
    if (name === 'radio.send') {
      const at = performance.now();
      const id = packetOf.get((request as { id: number }).id) as string | undefined;
      if (id && !sentAt.has(id)) {
        sentAt.set(id, at);
        waiters.get(id)?.();
      }
    }
    return answer;
  }) as unknown as typeof hub.bus.ask;
  await hub.start();
  try {
    const hubUrl = `http://127.0.0.1:${hub.http.port}`;
    const myNum = await waitFor('the simulated radio', () => {
      const status = hub.bus.last('radio.status');
      return status?.state === 'connected' ? status.myNodeNum : undefined;
    });
    const myId = `!${(myNum >>> 0).toString(16).padStart(8, '0')}`;
    const candidates = await waitFor('the mesh nodes', () => {
      const others = new NodeRepository(db).list().filter((n) => n.nodeId !== myId);
      return others.length >= 3 ? others.map((n) => n.nodeId) : undefined;
    });
    const syncDetail = () =>
      JSON.stringify(
        hub.supervisor.status().find((a) => a.name === 'sync') ?? hub.supervisor.status().map((a) => a.name),
      );
    // The upstream must know the nodes (pushed by the site) and the site must be online.
    await waitFor(
      () => `the site's ${candidates.length} nodes upstream (sync: ${syncDetail()})`,
      async () => {
        const { rows } = await upstream.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM nodes WHERE site_id = $1',
          [siteId],
        );
        return rows[0]!.n >= candidates.length || undefined;
      },
      60_000,
    );
    await waitFor(
      () => `the downlink (sync: ${syncDetail()})`,
      () => syncDetail().includes('"downlink":"connected"') || undefined,
    );

    new SubscriptionRepository(db).create({ subscriber: 'bench-lan', nodes: 'all', source: 'bench' });
    const now = Date.now();
    await upstream.pool.query(
      `INSERT INTO subscriptions (subscriber, all_nodes, status, source, created_at, updated_at)
       VALUES ('bench-internet', true, 'active', 'bench', $1, $1)`,
      [now],
    );
    // Tokens name users that exist, at their token versions: both sides refuse any other.
    const password = randomBytes(12).toString('base64url');
    const lanUsers = new HubUserService(db);
    await lanUsers.add({ username: 'bench-lan', password, roles: ['subscriber'] });
    const lanToken = (
      await hub.identity.localIssuer.issue(
        {
          username: 'bench-lan',
          roles: ['subscriber'],
          tokenVersion: (await lanUsers.tokenVersion('bench-lan'))!,
        },
        3600,
      )
    ).accessToken;
    const netUsers = new UpstreamUserService(upstream.pool);
    await netUsers.add({ username: 'bench-internet', password, roles: ['subscriber'] });
    const upstreamIssuer = await LocalIssuer.open(upstream.dataDir);
    const netToken = (
      await upstreamIssuer.issue(
        {
          username: 'bench-internet',
          roles: ['subscriber'],
          tokenVersion: (await netUsers.tokenVersion('bench-internet'))!,
        },
        3600,
      )
    ).accessToken;

    const post = async (base: string, token: string, target: string, text: string): Promise<PostedText> => {
      const t0 = performance.now();
      const res = await fetch(`${base}/api/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target_node_id: target, text }),
      });
      const body = (await res.json()) as { id?: string };
      if (res.status !== 202 || !body.id)
        throw new Error(`POST ${base} answered ${res.status}: ${JSON.stringify(body)}`);
      return { id: body.id, t0 };
    };
    const sent = (posted: PostedText): Promise<number> =>
      new Promise((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(posted.id);
          resolve(sentAt.get(posted.id)! - posted.t0);
        };
        const timer = setTimeout(
          () => reject(new Error(`text ${posted.id} never reached the radio`)),
          15_000,
        );
        if (sentAt.has(posted.id)) done();
        else waiters.set(posted.id, done);
      });

    // A node the simulated mesh delivers to (one node is always out of range).
    const delivered = new Set<string>();
    hub.bus.on('bench', 'message.updated', (change) => {
      if (change.message.status === 'delivered') delivered.add(change.message.id);
    });
    let target: string | undefined;
    for (const candidate of candidates) {
      const probe = await post(hubUrl, lanToken, candidate, 'probe');
      await sent(probe);
      try {
        await waitFor('delivery', () => delivered.has(probe.id) || undefined, 1_000);
        target = candidate;
        break;
      } catch {}
    }
    if (!target) throw new Error('no simulated node acknowledged a text');
    // Warm-up of both paths.
    for (let i = 0; i < 5; i++) {
      await sent(await post(hubUrl, lanToken, target, `warm-up ${i}`));
      await sent(await post(upstream.url, netToken, target, `warm-up ${i}`));
    }
    const lan: number[] = [];
    const net: number[] = [];
    for (let i = 0; i < TEXTS; i++) {
      lan.push(await sent(await post(hubUrl, lanToken, target, `lan ${i}: all good up there?`)));
      net.push(await sent(await post(upstream.url, netToken, target, `net ${i}: all good up there?`)));
    }
    const p = (xs: number[], q: number) => percentile(xs, q);
    const result = absolute(
      `sync: text from an upstream subscriber to the site's radio (${TEXTS} texts), p95`,
      { label: 'upstream POST → radio link, p95', value: p(net, 95), unit: 'ms' },
      { atMost: 1000, text: '≤ 1 s p95 (loopback, no airtime pacing)' },
    );
    result.notes =
      `upstream p50 ${p(net, 50).toFixed(1)} / p95 ${p(net, 95).toFixed(1)} / max ${Math.max(...net).toFixed(1)} ms; ` +
      `LAN (the site's own POST /api/v1/messages) p50 ${p(lan, 50).toFixed(1)} / p95 ${p(lan, 95).toFixed(1)} ms, ` +
      `same run, interleaved; ratio of p95s ${(p(net, 95) / p(lan, 95)).toFixed(1)}×`;
    return [result];
  } finally {
    hub.bus.removeOwner('bench');
    await hub.stop();
    dir.cleanup();
  }
}

// ---------------------------------------------------------------- 4. sites per PostgreSQL

interface SimSite {
  siteId: string;
  issuer: LocalIssuer;
  nodes: string[];
  seq: number;
  /** The next node to report, and the 5-minute round it reports in. */
  cursor: number;
  round: number;
}

/** A site's next `count` node reports, each a reading and the node update that came with it. */
function siteBatch(site: SimSite, startMs: number, count: number): { json: string; readings: number } {
  const first = site.seq + 1;
  const records: string[] = [];
  let seq = site.seq;
  const at = Date.now();
  for (let k = 0; k < count; k++) {
    const n = site.cursor;
    const node = site.nodes[n]!;
    const t = startMs + site.round * INTERVAL_MS + n * 1000;
    records.push(
      // As a radio site's outbox holds them: a `readings` entry per reading (one writer
      // transaction each), then its node update, so nothing merges.
      JSON.stringify({
        seq: ++seq,
        kind: 'readings',
        at,
        body: {
          rows: [
            [
              node,
              t,
              10 + ((site.round + n) % 150) / 10,
              40 + (n % 50),
              95_000 + ((site.round * 7 + n) % 5000),
              n % 3 === 2 ? null : (n % 40) / 4,
              n % 3 === 2 ? null : (site.round * 11 + n) % 360,
              n % 3 === 2 ? n % 40 : null,
              n % 3 === 2 ? n % 60 : null,
              n % 3 === 2 ? null : 100 + n,
            ],
          ],
        },
      }),
      JSON.stringify({
        seq: ++seq,
        kind: 'node',
        at,
        body: {
          node_num: Number.parseInt(node.slice(1), 16),
          node_id: node,
          short_name: `S${n}`,
          long_name: `Station ${n}`,
          hw_model: 'RAK4631',
          latitude: 47 + n / 1000,
          longitude: 8 + n / 1000,
          altitude: 500,
          last_heard: t,
          battery_level: 80,
          snr: 6.5,
          updated_at: t,
        },
      }),
    );
    site.cursor++;
    if (site.cursor === site.nodes.length) {
      site.cursor = 0;
      site.round++;
    }
  }
  site.seq = seq;
  const head = JSON.stringify({
    protocol: SYNC_PROTOCOL_VERSION,
    site_id: site.siteId,
    first_seq: first,
    last_seq: seq,
    dropped: [],
    sent_at: at,
  });
  return { json: `${head.slice(0, -1)},"records":[${records.join(',')}]}`, readings: count };
}

/** One batch as the push actor sends it: gzip'd, its hash signed, POSTed; throws unless 200. */
async function pushBatch(upstream: Upstream, site: SimSite, json: string): Promise<void> {
  const body = await gzipAsync(Buffer.from(json), { level: 1 });
  const path = `${SYNC_API}/batches`;
  const token = await signSiteRequest(site.issuer, {
    siteId: site.siteId,
    method: 'POST',
    path,
    body,
    nowMs: Date.now(),
  });
  const res = await fetch(`${upstream.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-encoding': 'gzip',
    },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`batch of ${site.siteId} answered ${res.status}: ${text}`);
}

/** `sites` pushing batches of `perBatch` node reports back to back for SITES_SECONDS. */
async function sitesRun(
  upstream: Upstream,
  sites: SimSite[],
  startMs: number,
  perBatch: number,
  title: string,
): Promise<BenchResult> {
  let batches = 0;
  let readings = 0;
  const latencies: number[] = [];
  const deadline = performance.now() + SITES_SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    sites.map(async (site) => {
      while (performance.now() < deadline) {
        const batch = siteBatch(site, startMs, perBatch);
        const b0 = performance.now();
        await pushBatch(upstream, site, batch.json);
        latencies.push(performance.now() - b0);
        batches++;
        readings += batch.readings;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const readingsPerS = readings / seconds;
  const served = readingsPerS / SITE_READINGS_PER_S;
  // A figure, not a target: the baseline column carries the sites it implies.
  return {
    name: title,
    baseline: { label: 'sites served (50 nodes, 1 reading / 5 min each)', value: served, unit: 'sites' },
    ours: { label: 'readings applied', value: readingsPerS, unit: 'readings/s' },
    ratio: 1,
    target: 'figure for README/DESIGN (no target)',
    pass: true,
    notes:
      `${fmt(batches)} batches in ${seconds.toFixed(1)} s, ${fmt((readings * 2) / seconds)} records/s ` +
      `(readings + node updates); batch latency p50 ${percentile(latencies, 50).toFixed(0)} ms, ` +
      `p95 ${percentile(latencies, 95).toFixed(0)} ms; implies about ${fmt(served)} such sites on ` +
      'this PostgreSQL with one upstream process',
  };
}

async function sitesPerPostgres(upstream: Upstream): Promise<BenchResult[]> {
  const keys = tempDir('sync-sites');
  const results: BenchResult[] = [];
  try {
    const maxSites = Math.max(...SITE_COUNTS);
    const all: SimSite[] = [];
    for (let s = 0; s < maxSites; s++) {
      const siteId = `sim-${String(s).padStart(3, '0')}`;
      const issuer = await upstream.register(siteId, keys.file(siteId));
      const nodes = Array.from({ length: SITE_NODES }, (_, n) => nodeId(0x1000 + s * 64 + n));
      all.push({ siteId, issuer, nodes, seq: 0, cursor: 0, round: 0 });
    }
    const startMs = Math.floor((Date.now() - 20 * 86_400_000) / INTERVAL_MS) * INTERVAL_MS;
    // Warm-up: every site's first round (which inserts its nodes).
    await Promise.all(
      all.map((site) => pushBatch(upstream, site, siteBatch(site, startMs, SITE_NODES).json)),
    );
    for (const count of SITE_COUNTS) {
      results.push(
        await sitesRun(
          upstream,
          all.slice(0, count),
          startMs,
          SITE_NODES,
          `sync: sites per PostgreSQL, ${count} sites at once, each batch a 5-minute round (50 readings + 50 node updates)`,
        ),
      );
    }
    // A site online pushes its readings SYNC_READINGS_DEBOUNCE (2 s) after they stop coming: with
    // 50 nodes reporting at their own times (one every 6 s), mostly one reading (and its node
    // update) per batch.
    const live = Math.min(50, maxSites);
    results.push(
      await sitesRun(
        upstream,
        all.slice(0, live),
        startMs,
        1,
        `sync: sites per PostgreSQL, ${live} sites at once, live pushing (1 reading + 1 node update per batch)`,
      ),
    );
    // Exact: every batch applied once (each site's cursor is the last sequence number it sent).
    const { rows } = await upstream.pool.query<{ site_id: string; acked_seq: number }>(
      "SELECT site_id, acked_seq FROM sites WHERE site_id LIKE 'sim-%'",
    );
    const acked = new Map(rows.map((r) => [r.site_id, r.acked_seq]));
    for (const site of all) {
      if (acked.get(site.siteId) !== site.seq)
        throw new Error(`${site.siteId}: upstream acked ${acked.get(site.siteId)}, sent ${site.seq}`);
    }
  } finally {
    keys.cleanup();
  }
  return results;
}

// ---------------------------------------------------------------- 5. a year of history

const HISTORY_RUNS = 41;
const HISTORY_WARMUP = 5;

/**
 * The hub side of the history bench, in a process of its own as the upstream is (with the hub's
 * V8 flags): the hub's HTTP app (createHttpApp: request ids and access metrics, as on a hub)
 * with its weather routes over the site's SQLite file. Told `{ write }`, it stores the reading as the hub's ingest does (the
 * reading writer, then `invalidate` as the weather module does on `reading.stored`).
 */
async function serveHistoryHub(file: string): Promise<void> {
  const db = openDatabase(file);
  const service = new WeatherService({ db });
  const writer = new ReadingWriter(db);
  const app = createHttpApp({
    log: silent,
    metrics: new HubMetrics(),
    version: 'bench',
    health: () => ({}) as HealthReport,
    routes: [{ path: '/api/v1/weather', app: weatherRoutes(service) }],
  });
  const served = await serveOnLoopback(app);
  process.on('message', (message: { write: Reading }) => {
    writer.write([message.write]);
    service.invalidate([message.write]);
    process.send?.({ written: true });
  });
  process.on('disconnect', () => {
    void served.close().finally(() => {
      closeDatabase(db);
      process.exit(0);
    });
  });
  process.send?.({ port: Number(new URL(served.url).port) });
}

if (process.env.SYNC_BENCH_HISTORY_HUB) {
  serveHistoryHub(process.env.SYNC_BENCH_HISTORY_HUB).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}

interface HistoryHub {
  url: string;
  write(reading: Reading): Promise<void>;
  stop(): Promise<void>;
}

function startHistoryHub(file: string): Promise<HistoryHub> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, SYNC_BENCH_HISTORY_HUB: file },
    // As a hub runs wherever it is started (hub/node-flags.ts).
    execArgv: [...HUB_NODE_FLAGS],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the history hub exited (${code})`)));
    child.once('message', (message: { port: number }) => {
      resolve({
        url: `http://127.0.0.1:${message.port}`,
        write: (reading) =>
          new Promise((done) => {
            child.once('message', () => done());
            child.send({ write: reading });
          }),
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.removeAllListeners('exit');
            child.once('exit', () => done());
            child.disconnect();
          }),
      });
    });
  });
}

type HistoryItem = Record<string, unknown>;

/** The buckets of a body, without `site_id` (the upstream's one addition). */
function historyItems(body: Buffer): HistoryItem[] {
  return (JSON.parse(body.toString('utf8')) as { data: HistoryItem[] }).data.map(
    ({ site_id: _site, ...rest }) => rest,
  );
}

/**
 * The same bucket on both sides: the same fields, the same values but for the last of the 6
 * decimals (PostgreSQL adds a bucket's floats in another order than SQLite).
 */
function sameBucket(a: HistoryItem | undefined, b: HistoryItem | undefined): boolean {
  if (!a || !b) return false;
  const keys = Object.keys(a);
  if (keys.join() !== Object.keys(b).join()) return false;
  return keys.every((k) =>
    typeof a[k] === 'number' ? Math.abs((a[k] as number) - (b[k] as number)) <= 1.5e-6 : a[k] === b[k],
  );
}

/**
 * Median time to the last byte of the hub's and the upstream's same request, interleaved (the
 * first of the two alternates), each over its own keep-alive connection. `before` runs ahead of
 * each pair, untimed. Every pair's last buckets are compared: the upstream must answer what the
 * hub answers; an answer from before the newest batch (its notification still on its way to the
 * upstream, sync/upstream/history-changes.ts) is counted in `stale` and asked again, untimed,
 * until it holds it (at most 3 s, the listener's bound).
 */
async function interleavedGets(
  hubUrl: string,
  upstreamUrl: string,
  buckets: number,
  before: () => Promise<void>,
): Promise<{ hubMs: number; upstreamMs: number; stale: number }> {
  const hubAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const upstreamAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const timed = async (agent: Agent, url: string) => {
    const t0 = performance.now();
    const res = await get(agent, url);
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    return { ms, body: res.body };
  };
  try {
    const hubTimes: number[] = [];
    const upstreamTimes: number[] = [];
    let stale = 0;
    for (let i = 0; i < HISTORY_WARMUP + HISTORY_RUNS; i++) {
      await before();
      const hubFirst = i % 2 === 0;
      const a = await timed(hubFirst ? hubAgent : upstreamAgent, hubFirst ? hubUrl : upstreamUrl);
      const b = await timed(hubFirst ? upstreamAgent : hubAgent, hubFirst ? upstreamUrl : hubUrl);
      const [hub, upstream] = hubFirst ? [a, b] : [b, a];
      const hubItems = historyItems(hub.body);
      let upstreamItems = historyItems(upstream.body);
      if (hubItems.length !== buckets || upstreamItems.length !== buckets)
        throw new Error(
          `answered ${hubItems.length} (hub), ${upstreamItems.length} (upstream) buckets, not ${buckets}`,
        );
      if (!sameBucket(hubItems.at(-1), upstreamItems.at(-1))) {
        // Answered before the batch's notification reached the upstream (history-changes.ts):
        // counted, and it must catch up within the listener's bound (3 s).
        stale++;
        const deadline = Date.now() + 3_000;
        while (!sameBucket(hubItems.at(-1), upstreamItems.at(-1))) {
          if (Date.now() > deadline)
            throw new Error(
              `the upstream's newest bucket ${JSON.stringify(upstreamItems.at(-1))} is not the hub's ${JSON.stringify(hubItems.at(-1))}`,
            );
          await new Promise((r) => setTimeout(r, 5));
          upstreamItems = historyItems((await timed(upstreamAgent, upstreamUrl)).body);
        }
      }
      if (i === 0) {
        const differ = hubItems.findIndex((item, k) => !sameBucket(item, upstreamItems[k]));
        if (differ >= 0)
          throw new Error(
            `the upstream's bucket ${JSON.stringify(upstreamItems[differ])} is not the hub's ${JSON.stringify(hubItems[differ])}`,
          );
      }
      if (i >= HISTORY_WARMUP) {
        hubTimes.push(hub.ms);
        upstreamTimes.push(upstream.ms);
      }
    }
    return { hubMs: median(hubTimes), upstreamMs: median(upstreamTimes), stale };
  } finally {
    hubAgent.destroy();
    upstreamAgent.destroy();
  }
}

/**
 * Issue 12: "a year of history for one node answers as fast as on the hub". One node, a year of
 * 5-minute readings (105,120) written at a site through its reading writer, pushed to the
 * upstream by the push actor (exact counts checked); then the same `GET /api/v1/weather/history`
 * (hourly and daily means, one page of every bucket, the same parameters) against the hub's HTTP
 * app over its SQLite file, in a process of its own, and against the upstream's over PostgreSQL,
 * interleaved, both over HTTP on loopback, median of HISTORY_RUNS after a warm-up. Two states:
 *
 * - nothing new since the last request (a chart reloaded, a second viewer);
 * - a new reading of the node before each request: the hub stores it (its writer, its cache's
 *   newest bucket dropped) and the upstream gets it in a batch applied by ANOTHER upstream
 *   process (this one's BatchApplier on the same database), so the upstream under test learns
 *   of it only through PostgreSQL: by the batch's notification (the default), and the request is
 *   sent once this process heard that notification too. Each answer must hold the new reading;
 *   one that does not yet (the notification still on its way) is counted and printed.
 *
 * Ratio: upstream time / hub time.
 */
async function historyParity(upstream: Upstream): Promise<BenchResult[]> {
  const yearEnd = Math.floor((Date.now() - 86_400_000) / 86_400_000) * 86_400_000;
  const yearStart = yearEnd - 365 * 86_400_000;
  const readings = interleavedReadings({
    nodes: 1,
    count: 365 * (86_400_000 / INTERVAL_MS),
    startMs: yearStart,
    intervalMs: INTERVAL_MS,
    seed: 9,
  });
  const node = readings[0]!.nodeId;
  const results: BenchResult[] = [];
  const applier = new BatchApplier(upstream.pool);
  let late = 0;
  // The batches' notifications, heard as every upstream process hears them.
  const listener = await upstream.pool.connect();
  let heard = 0;
  const waiting: Array<() => void> = [];
  listener.on('notification', (message) => {
    if (message.channel !== 'meshhub_history' || !message.payload?.startsWith('history ')) return;
    heard++;
    for (const wake of waiting.splice(0)) wake();
  });
  await listener.query('LISTEN meshhub_history');
  const notified = async (count: number) => {
    const deadline = Date.now() + 3_000;
    while (heard < count) {
      if (Date.now() > deadline) throw new Error("the late reading's batch was not notified within 3 s");
      await new Promise<void>((r) => {
        waiting.push(r);
        setTimeout(r, 50);
      });
    }
  };
  /** One new reading in the node's newest hour, stored by the hub and applied upstream. */
  const newReading = async (hub: HistoryHub) => {
    late++;
    const reading: Reading = { nodeId: node, timestamp: yearEnd - late, temperatureC: 20 + (late % 17) / 4 };
    const { rows } = await upstream.pool.query<{ acked_seq: string }>(
      "SELECT acked_seq FROM sites WHERE site_id = 'history'",
    );
    const seq = Number(rows[0]!.acked_seq) + 1;
    const outcome = await applier.apply(
      'history',
      batchSchema.parse({
        protocol: SYNC_PROTOCOL_VERSION,
        site_id: 'history',
        first_seq: seq,
        last_seq: seq,
        records: [
          {
            seq,
            kind: 'readings',
            at: reading.timestamp,
            body: {
              rows: [
                [node, reading.timestamp, reading.temperatureC, null, null, null, null, null, null, null],
              ],
            },
          },
        ],
        dropped: [],
        sent_at: Date.now(),
      }),
    );
    if (outcome.kind !== 'applied') throw new Error(`the late reading's batch was ${outcome.kind}`);
    // Its notification went out at the commit; the upstream under test hears it about when
    // this process does (a request sent before then is answered as of before the batch).
    await notified(late);
    await hub.write(reading);
  };
  await drainOutbox(upstream, 'history', readings, {
    inspect: async (db) => {
      const hub = await startHistoryHub(db.name);
      try {
        for (const [state, before] of [
          ['nothing new since the last request', async () => {}],
          ['a new reading of the node before each request', () => newReading(hub)],
        ] as const) {
          for (const [interval, buckets] of [
            ['1h', 365 * 24],
            ['1d', 365],
          ] as const) {
            const query = historyQuery(node, yearStart, yearEnd, interval);
            const hubUrl = `${hub.url}/api/v1/weather/history?${query}`;
            query.set('site', 'history');
            const { hubMs, upstreamMs, stale } = await interleavedGets(
              hubUrl,
              `${upstream.url}/api/v1/weather/history?${query}`,
              buckets,
              before,
            );
            results.push(
              compare(
                `sync: a year of history for one node (${fmt(readings.length)} readings → ${buckets} ${interval} buckets), ${state}, upstream against hub`,
                { label: "the hub's GET /history over its SQLite rollups", value: hubMs, unit: 'ms' },
                { label: 'the upstream: the same GET over PostgreSQL', value: upstreamMs, unit: 'ms' },
                { atMost: 1.25, text: 'as fast as the hub (≤ 125% of its time: run-to-run noise)' },
                `median of ${HISTORY_RUNS} interleaved pairs after ${HISTORY_WARMUP}; each a process of its own; ${stale} answer(s) from before the newest batch (its notification on its way)`,
              ),
            );
          }
        }
      } finally {
        await hub.stop();
      }
    },
  });
  listener.release(true);
  return results;
}

// ---------------------------------------------------------------- run

export async function run(): Promise<BenchResult[]> {
  const wanted = (process.env.SYNC_BENCH_ONLY ?? 'catchup,ingest,texts,sites,history').split(',');
  const schema = await createScratchSchema(DATABASE_URL, 'bench_sync');
  let upstream: Upstream | undefined;
  const results: BenchResult[] = [];
  try {
    upstream = await startUpstream(schema);
    if (wanted.includes('catchup')) results.push(...(await catchUp(upstream)));
    if (wanted.includes('ingest')) results.push(...(await ingestWithSync(upstream)));
    if (wanted.includes('texts')) results.push(...(await textLatency(upstream)));
    if (wanted.includes('sites')) results.push(...(await sitesPerPostgres(upstream)));
    if (wanted.includes('history')) results.push(...(await historyParity(upstream)));
    return results;
  } finally {
    await upstream?.stop();
    await schema.drop();
  }
}

const role = process.env.SYNC_BENCH_ROLE as Role | undefined;
if (role) {
  serveChild(role).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
