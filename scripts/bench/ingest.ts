/**
 * `POST /api/v1/ingest/readings` with batches of 1000 (issue 3): 100 000 readings of 200 nodes.
 * Baseline: raw better-sqlite3, one prepared INSERT per row in one transaction per batch of
 * 1000, into the same `readings` table of a database opened the same way. Ours: the whole hub
 * in a child process — HTTP, bearer JWT check, JSON parse, validation, the writer (readings,
 * latest rows, hourly and daily rollups in one transaction) and the 202 after the commit —
 * driven by HTTP_CONCURRENCY requests in flight. Target: ours ≥ 40% of the baseline's rows/s.
 *
 * This file is also the child: with INGEST_BENCH_ROLE set it runs the hub and sends its URL and
 * a token.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Reading } from '../../src/domain/reading.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { loopbackHubEnv } from './lib/hub-env.js';
import { interleavedReadings, rawBatchedInsert, readingApiJson, tempDir } from './lib/readings.js';
import { type BenchResult, compare } from './report.js';

const NODES = 200;
const ROWS = 100_000;
const BATCH = 1_000;
const HTTP_CONCURRENCY = 4;
const ROUNDS = 5;

async function serveChild(): Promise<void> {
  const { pino } = await import('pino');
  const { exportJWK, generateKeyPair, SignJWT } = await import('jose');
  const { createTokenVerifier } = await import('../../src/auth/jwt-verifier.js');
  const { loadConfig } = await import('../../hub/settings.js');
  const { createHub } = await import('../../hub/main.js');
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256' };
  const issuer = 'https://bench.local';
  const token = await new SignJWT({ roles: ['ingest'] })
    .setProtectedHeader({ alg: 'ES256', kid: 'bench' })
    .setIssuer(issuer)
    .setSubject('bench-sensor')
    .setExpirationTime('1h')
    .sign(privateKey);
  const tmp = tempDir('ingest');
  const config = loadConfig(loopbackHubEnv(tmp.dir));
  const hub = await createHub(config, {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    tokenVerifier: createTokenVerifier([{ issuer, keys: { keys: [jwk] } }]),
  });
  await hub.start();
  process.send?.({ url: `http://127.0.0.1:${hub.http.port}`, token });
  process.on('disconnect', () => {
    void hub.stop().finally(() => {
      tmp.cleanup();
      process.exit(0);
    });
  });
}

function baseline(input: Reading[][]): number {
  const tmp = tempDir('ingest-baseline');
  const db: Database = openDatabase(tmp.file('baseline.db'));
  try {
    const ms = rawBatchedInsert(db, input);
    const n = db.prepare('SELECT count(*) FROM readings').pluck().get() as number;
    if (n !== ROWS) throw new Error(`baseline stored ${n} rows, expected ${ROWS}`);
    return ROWS / (ms / 1000);
  } finally {
    closeDatabase(db);
    tmp.cleanup();
  }
}

function startHub(): Promise<{ child: ChildProcess; url: string; token: string }> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, INGEST_BENCH_ROLE: 'hub' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the hub exited with ${code}`)));
    child.once('message', (m) => {
      child.removeAllListeners('exit');
      resolve({ child, ...(m as { url: string; token: string }) });
    });
  });
}

async function ours(bodies: string[]): Promise<number> {
  const { child, url, token } = await startHub();
  try {
    const post = async (body: string, expected = BATCH) => {
      const res = await fetch(`${url}/api/v1/ingest/readings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body,
      });
      const answer = (await res.json()) as { accepted?: number };
      if (res.status !== 202 || answer.accepted !== expected)
        throw new Error(`ingest answered ${res.status} with ${answer.accepted} accepted`);
    };
    // Warm-up on another node set: JIT, connections, SQLite page cache.
    await post(JSON.stringify([{ node_id: 'warm-up', temperature_c: 1 }]), 1);
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: HTTP_CONCURRENCY }, async () => {
        while (next < bodies.length) await post(bodies[next++]!);
      }),
    );
    return ROWS / ((performance.now() - t0) / 1000);
  } finally {
    await new Promise<void>((done) => {
      child.once('exit', () => done());
      child.disconnect();
    });
  }
}

export async function run(): Promise<BenchResult[]> {
  const readings = interleavedReadings({
    nodes: NODES,
    count: ROWS,
    startMs: Date.UTC(2025, 0, 1),
    intervalMs: 60_000,
  });
  const batches: Reading[][] = [];
  for (let i = 0; i < ROWS; i += BATCH) batches.push(readings.slice(i, i + BATCH));
  const bodies = batches.map((b) => JSON.stringify(b.map(readingApiJson)));
  const base: number[] = [];
  const mine: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const sides = [async () => base.push(baseline(batches)), async () => mine.push(await ours(bodies))];
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) await side();
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join('/');
  return [
    compare(
      `ingest: POST /api/v1/ingest/readings, ${ROWS / 1000}k readings in batches of ${BATCH}`,
      { label: 'better-sqlite3 batched INSERT', value: Math.max(...base), unit: 'rows/s' },
      {
        label: `hub over HTTP (${HTTP_CONCURRENCY} in flight, 202 after commit)`,
        value: Math.max(...mine),
        unit: 'rows/s',
      },
      { atLeast: 0.4, text: '≥ 40% of baseline rows/s' },
      `best of ${ROUNDS} rounds each; baseline ${fmt(base)}, ours ${fmt(mine)}`,
    ),
  ];
}

if (process.env.INGEST_BENCH_ROLE) {
  serveChild().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
