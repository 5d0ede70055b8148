/**
 * GET /api/v1/weather/latest for 1000 nodes: requests/s of our route (validation, the service's
 * cached body, the error handler mounted) against a bare Hono route answering the same JSON
 * string — both served by one child process (so the load generator has the other core), both
 * measured with autocannon with the same connections and duration, one after the other.
 * Target: ours ≥ 50% of the bare route's requests/s.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { interleavedReadings, tempDir } from './lib/readings.js';
import { forkServers, stopServers } from './lib/server-child.js';
import { type BenchResult, compare } from './report.js';

const NODES = 1000;
const CONNECTIONS = 10;
const DURATION_S = 5;
const PATH = '/api/v1/weather/latest';

function seed(file: string): number {
  const db = openDatabase(file);
  try {
    const writer = new ReadingWriter(db);
    const readings = interleavedReadings({
      nodes: NODES,
      count: NODES * 3,
      startMs: Date.UTC(2025, 0, 1),
      intervalMs: 300_000,
    });
    writer.write(readings);
    return db.prepare('SELECT count(*) FROM readings_latest').pluck().get() as number;
  } finally {
    closeDatabase(db);
  }
}

async function load(url: string, duration = DURATION_S): Promise<number> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  }
  return result.requests.average;
}

export async function run(): Promise<BenchResult[]> {
  const tmp = tempDir('latest');
  const file = tmp.file('latest.db');
  let child: ChildProcess | undefined;
  try {
    const nodes = seed(file);
    const server = await forkServers(
      fileURLToPath(new URL('./lib/latest-server.js', import.meta.url)),
      [file],
      'latest-bench',
    );
    child = server.child;
    const [ours, bare] = await Promise.all([fetch(server.ours + PATH), fetch(server.bare + PATH)]);
    const [oursBody, bareBody] = await Promise.all([ours.text(), bare.text()]);
    if (oursBody !== bareBody || (JSON.parse(oursBody) as { data: unknown[] }).data.length !== nodes) {
      throw new Error('the two servers do not answer the same body');
    }
    await load(server.ours + PATH, 1); // warm-up, both
    await load(server.bare + PATH, 1);
    const bareRps = await load(server.bare + PATH);
    const oursRps = await load(server.ours + PATH);
    return [
      compare(
        `latest: GET ${PATH}, ${nodes} nodes (${(oursBody.length / 1024).toFixed(0)} KiB body)`,
        { label: 'bare Hono route, same JSON string', value: bareRps, unit: 'req/s' },
        { label: 'weather routes (cached body)', value: oursRps, unit: 'req/s' },
        { atLeast: 0.5, text: '≥ 50% of baseline req/s' },
        `autocannon, ${CONNECTIONS} connections × ${DURATION_S} s each, server in a child process`,
      ),
    ];
  } finally {
    await stopServers(child);
    tmp.cleanup();
  }
}
