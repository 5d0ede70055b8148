/**
 * Issue 17, bad input everywhere: HTTP. The built hub runs as a child process with both plugins
 * (billing against the BTCPay fake, which speaks Greenfield's wire format; audit without
 * credentials). Every route of the three OpenAPI documents the hub serves (the core's
 * /api/v1/openapi.json, billing's /api/v1/billing/openapi.json, audit's /api/openapi.json) gets
 * fast-check requests built from its description: hostile path parameters, query values from the
 * parameter schemas and outside them, bodies shaped like the schema with wrong types mixed in,
 * raw garbage, odd content types, and no, broken, forged or real credentials (a subscriber's and
 * an admin's, so the requests get past authentication into validation).
 *
 * Every answer: below 500, and no stack trace or internal detail. Afterwards: the hub still runs
 * (same process, /health 200) and the stored data is unchanged: every table's digest is the
 * same, except the few tables that record requests themselves (named below, with why) and the
 * tables an accepted write (a 2xx to a POST/PATCH) may legitimately change.
 *
 * The `Host` check (README "Security", "Host names the hub answers to") gets its own fuzzing over
 * raw sockets: names, IP literals, ports, cases, trailing dots and garbage, on HTTP routes and on
 * WebSocket upgrades. Never a 5xx or a crash; the hub's own names are served, other names get 421.
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeBtcpay } from '../fakes/btcpay/fake-btcpay.js';
import { waitFor } from '../helpers/hub.js';
import { HubProcess, removeDir, scenarioSeed, scratchDir } from './helpers/hub-process.js';
import { changedTables, digestTables, leakIn } from './helpers/leaks.js';
import { type Operation, operationsOf, requestFor } from './helpers/openapi-arbitraries.js';

const SEED = scenarioSeed('fuzz HTTP routes');
const RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 60);
const DOCS = {
  core: '/api/v1/openapi.json',
  billing: '/api/v1/billing/openapi.json',
  audit: '/api/openapi.json',
};
/**
 * Tables that record requests as such, not data: the audit plugin's trail of who searched what
 * (every admin query is audited, also a refused one), and its cache store (`audit_cache`: cached
 * answers and the rate-limit counters, which count refused requests too: plugins/audit/cache).
 */
const RECORDS_OF_REQUESTS = ['audit_trail', 'audit_cache'];
/** What an accepted write may change, by route. */
const WRITES: Record<string, string[]> = {
  'POST /api/v1/ingest/readings': [
    'readings',
    'readings_latest',
    'readings_hourly',
    'readings_daily',
    'nodes',
  ],
  'POST /api/v1/messages': [
    'messages',
    'message_transitions',
    'message_packets',
    'conversations',
    'idempotency_keys',
  ],
  'PATCH /api/v1/messages/conversations/{node_id}': ['conversations', 'messages', 'message_transitions'],
  'POST /api/v1/billing/plans': ['billing_plans', 'billing_changes'],
  'POST /api/v1/billing/plans/{id}/retire': ['billing_plans', 'billing_changes'],
  'POST /api/events/bulk-tags': ['audit_event_tags'],
  'PATCH /api/events/{id}/tags': ['audit_event_tags'],
  'POST /api/events/{id}/comments': ['audit_event_comments'],
};

const btcpay = new FakeBtcpay({
  storeId: 'StoreA1b2C3',
  apiKey: 'greenfield-api-key-0123456789',
  webhookSecret: 'whsec-fuzz-secret',
});
const dataDir = scratchDir('fuzz-http');
let hub: HubProcess;
let tokens: string[];
const operations: Operation[] = [];

beforeAll(async () => {
  await btcpay.start();
  hub = new HubProcess({
    dataDir,
    env: {
      RADIO: 'sim',
      SIM_PORT: '0',
      SIM_BACKFILL: '2h',
      SIM_TELEMETRY_SECONDS: '86400',
      PLUGINS: 'audit,billing',
      BTCPAY_URL: btcpay.url,
      BTCPAY_STORE_ID: 'StoreA1b2C3',
      BTCPAY_API_KEY: 'greenfield-api-key-0123456789',
      BTCPAY_WEBHOOK_SECRET: 'whsec-fuzz-secret',
      BTCPAY_ALLOW_PRIVATE_NETWORK: 'true',
      BTCPAY_TIMEOUT_MS: '1000',
      BILLING_POLL_CRON: '0 0 1 1 *',
      BILLING_EXPIRY_CRON: '0 0 1 1 *',
      AUDIT_FETCH_ON_START: 'false',
      // The settings of issue 23's HTTP part, not at their defaults.
      HTTP_ALLOWED_HOSTS: 'meshhub.example.org,*.lan.example',
      LIVE_MAX_STREAMS_PER_ADDRESS: '4',
    },
  });
  tokens = [hub.userToken('carol', ['subscriber']), hub.userToken('root', ['admin'])];
  hub.cli(['subscription', 'grant', 'carol', '--nodes', 'all']);
  await hub.start();
  for (const [doc, path] of Object.entries(DOCS)) {
    const res = await fetch(`${hub.baseUrl}${path}`);
    expect(res.status, path).toBe(200);
    operations.push(...operationsOf(doc, await res.json()));
  }
});

afterAll(async () => {
  await hub?.kill();
  await btcpay.stop();
  removeDir(dataDir);
});

describe('bad input on every HTTP route (fast-check, the built hub as a child process)', () => {
  it(`no 5xx, no internals, no crash, nothing stored (seed ${SEED}, ${RUNS} runs per route)`, async () => {
    expect(operations.length).toBeGreaterThan(30);
    const pid = hub.pid;
    // Let the simulator's backfill and its first neighbour reports (2–5 s after it connects, then
    // every 30 min) land first: the digest is taken of a hub at rest.
    await waitFor(
      async () => {
        const links = (await (await fetch(`${hub.baseUrl}/api/v1/links`)).json()) as { data?: unknown[] };
        return (links.data?.length ?? 0) > 0;
      },
      30_000,
      'the simulated neighbour reports',
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const db = join(dataDir, 'meshhub.sqlite');
    const before = digestTables(db, RECORDS_OF_REQUESTS);
    const accepted = new Map<string, number>();
    const statuses = new Map<number, number>();
    let requests = 0;
    for (const [index, op] of operations.entries()) {
      await fc.assert(
        fc.asyncProperty(requestFor(op, hub.baseUrl, tokens), async (request) => {
          requests++;
          const res = await fetch(request.url, {
            method: request.method,
            headers: request.headers,
            body: request.body,
            signal: AbortSignal.timeout(15_000),
          });
          // A live stream (SSE) that opened: its first bytes are enough.
          let text: string;
          if (res.headers.get('content-type')?.startsWith('text/event-stream') && res.body) {
            const reader = res.body.getReader();
            text = new TextDecoder().decode((await reader.read()).value ?? new Uint8Array());
            await reader.cancel();
          } else text = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const where = `${request.method} ${request.url.slice(0, 300)} ${JSON.stringify(request.headers).slice(0, 200)} body=${request.body?.slice(0, 300)}`;
          expect(res.status, `${where} → ${res.status} ${text.slice(0, 500)}`).toBeLessThan(500);
          let decoded = request.url;
          try {
            decoded = decodeURIComponent(request.url);
          } catch {
            // a broken escape, sent on purpose
          }
          const leak = leakIn(
            text,
            [dataDir, process.cwd()],
            `${request.url} ${decoded} ${request.body ?? ''}`,
          );
          expect(leak, `${where} → ${res.status} shows ${leak}: ${text.slice(0, 800)}`).toBeUndefined();
          if (request.method !== 'GET' && res.status < 300) {
            const key = `${op.method} ${op.path}`;
            accepted.set(key, (accepted.get(key) ?? 0) + 1);
          }
        }),
        { seed: SEED + index, numRuns: RUNS, endOnFailure: true },
      );
    }

    // Still the same process, still healthy.
    expect(hub.running).toBe(true);
    expect(hub.pid).toBe(pid);
    expect((await fetch(`${hub.baseUrl}/health`)).status).toBe(200);

    const after = digestTables(db, RECORDS_OF_REQUESTS);
    const allowed = new Set([...accepted.keys()].flatMap((k) => WRITES[k] ?? [`(unknown writes of ${k})`]));
    const changed = changedTables(before, after);
    console.log(
      `[reliability] fuzz HTTP: ${operations.length} operations, ${requests} requests; statuses ${[
        ...statuses,
      ]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(
          ' ',
        )}; accepted writes ${JSON.stringify(Object.fromEntries(accepted))}; tables changed ${JSON.stringify(changed)}`,
    );
    expect(changed.filter((t) => !allowed.has(t))).toEqual([]);
  }, 900_000);

  it(`fuzzed Host headers: no 5xx, no crash; own names served, others 421 (seed ${SEED})`, async () => {
    const pid = hub.pid;
    const port = hub.httpPort;
    const withPort = (host: fc.Arbitrary<string>) =>
      fc
        .tuple(host, fc.option(fc.integer({ min: 0, max: 65_535 }), { nil: undefined }))
        .map(([h, p]) => (p === undefined ? h : `${h}:${p}`));
    const cased = (name: fc.Arbitrary<string>) =>
      fc
        .tuple(name, fc.boolean(), fc.boolean())
        .map(([n, upper, dot]) => `${upper ? n.toUpperCase() : n}${dot ? '.' : ''}`);
    const own = withPort(
      fc.oneof(
        fc.ipV4(),
        fc.ipV6().map((v) => `[${v}]`),
        cased(fc.constantFrom('localhost', 'meshhub.example.org')),
        cased(fc.domain().map((d) => `${d}.lan.example`)),
      ),
    );
    const foreign = withPort(
      fc.oneof(
        cased(fc.domain().filter((d) => !d.endsWith('lan.example') && d !== 'meshhub.example.org')),
        cased(
          fc.constantFrom(
            'evil.example',
            'localhost.evil.example',
            'lan.example',
            'meshhub.example.org.evil',
          ),
        ),
      ),
    );
    const garbage = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.constantFrom(
        '',
        '[',
        ']',
        '[::1',
        '[::1]x',
        ':',
        ':8080',
        '127.0.0.1:',
        '1.2.3',
        '::1',
        '%00',
        '*',
        '..',
      ),
    );
    const request = fc.record({
      kind: fc.constantFrom('own', 'foreign', 'garbage'),
      own,
      foreign,
      garbage: garbage.map((g) => g.replace(/[\r\n]/g, '')),
      path: fc.constantFrom('/api/v1/nodes', '/health', '/', '/api/events', '/api/v1/billing/plans', '/mqtt'),
      upgrade: fc.boolean(),
    });
    const statuses = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const host = r.kind === 'own' ? r.own : r.kind === 'foreign' ? r.foreign : r.garbage;
        const upgrade = r.upgrade
          ? 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
          : 'Connection: close\r\n';
        const answer = await rawExchange(port, `GET ${r.path} HTTP/1.1\r\nHost: ${host}\r\n${upgrade}\r\n`);
        const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
        const where = `Host ${JSON.stringify(host)} ${r.path}${r.upgrade ? ' (upgrade)' : ''} → ${answer.slice(0, 300)}`;
        expect(status, where).toBeGreaterThanOrEqual(100);
        expect(status, where).toBeLessThan(500);
        if (r.kind === 'own') expect(status, where).not.toBe(421);
        if (r.kind === 'foreign') expect(status, where).toBe(421);
        if (status === 421) expect(answer, where).toContain('HTTP_ALLOWED_HOSTS');
        expect(leakIn(answer, [dataDir, process.cwd()], host), where).toBeUndefined();
        const key = `${r.kind} ${status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }),
      { seed: SEED, numRuns: RUNS * 5, endOnFailure: true },
    );
    expect(hub.running).toBe(true);
    expect(hub.pid).toBe(pid);
    expect((await fetch(`${hub.baseUrl}/health`)).status).toBe(200);
    console.log(`[reliability] fuzz Host: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  }, 300_000);
});

/**
 * Writes `head` (as latin1 bytes) and reads the answer's head: until the connection closes, or
 * the blank line after the status and headers of a 101 (an upgrade that was taken stays open).
 */
function rawExchange(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const done = () => {
      socket.destroy();
      resolve(text);
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.startsWith('HTTP/1.1 101 ') && text.includes('\r\n\r\n')) done();
    });
    socket.on('close', done);
    socket.on('error', reject);
    socket.write(Buffer.from(head, 'latin1'));
  });
}
