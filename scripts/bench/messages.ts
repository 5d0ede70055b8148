/**
 * Messaging benchmarks (issue 4), both served by one child process (this file, forked with
 * `--messages-bench-server`) so the load generator has the other core:
 *
 * 1. POST /api/v1/messages with token verification and persistence (the real routes: bearer
 *    JWT, role, body validation, node lookup, subscription, rate limits, the SQLite insert of the
 *    message, its transition and its conversation) against a bare Hono route that only verifies
 *    the same kind of token (EdDSA, a local JWK set) with jose. Target: ours ≥ 50% of its req/s.
 * 2. GET /api/v1/messages/conversations for a subscriber with 1000 conversations over 100,000
 *    messages. Target: p99 under 20 ms (one connection: the latency a user sees).
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Hono } from 'hono';
import { createLocalJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { openHubIdentity } from '../../src/auth/hub-identity.js';
import { LOCAL_AUDIENCE, LocalIssuer } from '../../src/auth/local-issuer.js';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { MessageStreams } from '../../src/messaging/live-stream.js';
import { MessageRepository } from '../../src/messaging/message-repository.js';
import { messagingRoutes } from '../../src/messaging/routes.js';
import { SqliteMessagingStorage } from '../../src/messaging/sqlite-storage.js';
import { StreamTickets } from '../../src/messaging/stream-tickets.js';
import { SubscriptionRepository } from '../../src/messaging/subscription-repository.js';
import { closeDatabase, openDatabase } from '../../src/store/database.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { tempDir } from './lib/readings.js';
import { forkServers, serveForParent, stopServers } from './lib/server-child.js';
import { absolute, type BenchResult, compare, median } from './report.js';

const SERVER_FLAG = '--messages-bench-server';
const CONVERSATIONS = 1000;
const MESSAGES = 100_000;
const CONNECTIONS = 10;
const DURATION_S = 5;
const ROUNDS = 3;
const ROUND_S = 3;
const POSTER = 'bench-poster';
const READER = 'bench-reader';
const TARGET = '!10000000';

const nodeIdOf = (i: number) => `!${(0x1000_0000 + i).toString(16)}`;

/** Nodes, subscriptions, and 1000 conversations of 100 messages each (some replies unread). */
function seed(file: string): void {
  const db = openDatabase(file);
  try {
    const nodes = new NodeRepository(db);
    const messages = new MessageRepository(db);
    const subscriptions = new SubscriptionRepository(db);
    subscriptions.create({ subscriber: POSTER, nodes: 'all', source: 'bench' });
    subscriptions.create({ subscriber: READER, nodes: 'all', source: 'bench' });
    const start = Date.UTC(2025, 0, 1);
    db.transaction(() => {
      for (let i = 0; i < CONVERSATIONS; i++) {
        nodes.upsert({
          nodeNum: 0x1000_0000 + i,
          nodeId: nodeIdOf(i),
          longName: `Bench Node ${i}`,
          shortName: `B${i % 100}`,
        });
      }
      for (let m = 0; m < MESSAGES; m++) {
        const node = nodeIdOf(m % CONVERSATIONS);
        const at = start + m * 60_000;
        if (m % 5 === 4) {
          messages.createInbound({
            owner: READER,
            ownerName: READER,
            nodeId: node,
            targetNodeId: '!0f0f0f0f',
            text: `reply ${m} from the field`,
            packetId: m + 1,
            at,
          });
        } else {
          messages.createOutbound({
            owner: READER,
            ownerName: READER,
            nodeId: node,
            senderNodeId: '!0f0f0f0f',
            text: `message number ${m}`,
            at,
          });
        }
      }
    })();
  } finally {
    closeDatabase(db);
  }
}

/** The child: our routes and the bare verifying route on two loopback ports. */
async function serve(dataDir: string, file: string): Promise<void> {
  if (!process.send) throw new Error('the messages bench server must be forked');
  const db = openDatabase(file);
  const identity = await openHubIdentity({ dataDir });
  const storage = SqliteMessagingStorage.open(db, () => '!0f0f0f0f');
  const unlimited = { count: 1_000_000_000, windowMs: 1_000 };
  const ours = new Hono();
  ours.route(
    '/api/v1/messages',
    messagingRoutes({
      identity,
      storage,
      rates: { perSubscriber: unlimited, perNode: unlimited },
      maxHoldHours: 0,
      live: {
        streams: new MessageStreams(() => storage.conversationRepository),
        tickets: new StreamTickets(),
      },
      publish: () => {},
    }) as unknown as Hono,
  );
  ours.onError(createErrorHandler());
  ours.notFound(notFound);

  const jwks = createLocalJWKSet(identity.localIssuer.jwks());
  const issuer = identity.localIssuer.issuer;
  const bare = new Hono();
  bare.post('/api/v1/messages', async (c) => {
    const token = (c.req.header('authorization') ?? '').slice(7);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer,
        audience: LOCAL_AUDIENCE,
        algorithms: ['EdDSA'],
      }));
    } catch {
      return c.json({ error: 'invalid token' }, 401);
    }
    return c.json({ subject: payload.sub }, 202);
  });
  await serveForParent(ours, bare, () => closeDatabase(db));
}

async function load(options: autocannon.Options): Promise<autocannon.Result> {
  const result = await autocannon(options);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${options.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  }
  return result;
}

export async function run(): Promise<BenchResult[]> {
  const tmp = tempDir('messages');
  const file = tmp.file('meshhub.sqlite');
  let child: ChildProcess | undefined;
  try {
    seed(file);
    const issuer = await LocalIssuer.open(tmp.dir);
    const poster = (await issuer.issue({ username: POSTER, roles: ['subscriber'] }, 3600)).accessToken;
    const reader = (await issuer.issue({ username: READER, roles: ['subscriber'] }, 3600)).accessToken;
    const server = await forkServers(
      fileURLToPath(import.meta.url),
      [SERVER_FLAG, tmp.dir, file],
      'messages-bench',
    );
    child = server.child;

    const post = (base: string, duration: number) =>
      load({
        url: `${base}/api/v1/messages`,
        method: 'POST',
        headers: { authorization: `Bearer ${poster}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target_node_id: TARGET, text: 'Bench message: are you at the hut?' }),
        connections: CONNECTIONS,
        duration,
      });
    const check = await fetch(`${server.ours}/api/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${poster}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target_node_id: TARGET, text: 'check' }),
    });
    if (check.status !== 202) throw new Error(`our POST answered ${check.status}: ${await check.text()}`);
    await post(server.ours, 1); // warm-up, both
    await post(server.bare, 1);
    // Interleaved rounds, median of each: a load spike from elsewhere hits both sides alike.
    const bareRuns: number[] = [];
    const oursRuns: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bareRuns.push((await post(server.bare, ROUND_S)).requests.average);
      oursRuns.push((await post(server.ours, ROUND_S)).requests.average);
    }
    const bareRps = median(bareRuns);
    const oursRps = median(oursRuns);

    const listUrl = `${server.ours}/api/v1/messages/conversations`;
    const listed = await fetch(listUrl, { headers: { authorization: `Bearer ${reader}` } });
    const body = (await listed.json()) as { data: unknown[] };
    if (body.data.length !== CONVERSATIONS)
      throw new Error(`expected ${CONVERSATIONS} conversations, got ${body.data.length}`);
    const list = (connections: number, duration: number) =>
      load({ url: listUrl, headers: { authorization: `Bearer ${reader}` }, connections, duration });
    await list(1, 1);
    const single = await list(1, DURATION_S);
    const busy = await list(4, DURATION_S);

    return [
      compare(
        'messages: POST /api/v1/messages (verify + validate + persist)',
        { label: 'bare Hono route, jose EdDSA verify only', value: bareRps, unit: 'req/s' },
        { label: 'messaging routes', value: oursRps, unit: 'req/s' },
        { atLeast: 0.5, text: '≥ 50% of baseline req/s' },
        `autocannon, ${CONNECTIONS} connections, median of ${ROUNDS} interleaved ${ROUND_S} s rounds each, server in a child process`,
      ),
      absolute(
        `messages: GET /conversations p99, ${CONVERSATIONS} conversations / ${MESSAGES} messages, 1 connection`,
        {
          // Four clients at once on two cores mostly measures queueing; shown for context, no target.
          label: `p99 (p50 ${single.latency.p50} ms, ${single.requests.average.toFixed(0)} req/s; 4 connections: p50 ${busy.latency.p50} ms, p99 ${busy.latency.p99} ms)`,
          value: single.latency.p99,
          unit: 'ms',
        },
        { atMost: 20, text: 'p99 < 20 ms' },
      ),
    ];
  } finally {
    await stopServers(child);
    tmp.cleanup();
  }
}

if (process.argv[2] === SERVER_FLAG) {
  serve(process.argv[3]!, process.argv[4]!).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
