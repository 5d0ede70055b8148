/**
 * Downlink faults the real upstream never produces (sync/site/downlink-client.ts): frames that are
 * not JSON or not a known frame, an upstream that stops answering pings, a hello for another site.
 * The peer is a bare `ws` server speaking the protocol's frames (sync/protocol.ts) on loopback;
 * the site side is real (a SQLite file, the applier, the site's own signing key).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Counter, Gauge, Histogram } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { type HubBus, RETAINED_EVENTS } from '../../../src/domain/events.js';
import { Bus } from '../../../src/kernel/bus.js';
import { HubMetrics } from '../../../src/metrics.js';
import type { ModuleMetrics } from '../../../src/module.js';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { verifySiteRequest } from '../../../sync/signing.js';
import { DownlinkApplier } from '../../../sync/site/downlink-apply.js';
import { DownlinkClient } from '../../../sync/site/downlink-client.js';
import { SyncMetrics } from '../../../sync/site/metrics.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';
import { waitFor } from '../../helpers/hub.js';

const log = pino({ level: 'silent' });
const SITE = 'north';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Peer {
  server: WebSocketServer;
  url: URL;
  /** Sockets in the order the site opened them, with the request that opened each. */
  connections: Array<{ socket: WebSocket; request: IncomingMessage; received: string[] }>;
}

async function peer(options: { autoPong: boolean; greet?: string }): Promise<Peer> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: options.autoPong });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const connections: Peer['connections'] = [];
  server.on('connection', (socket, request) => {
    const entry = { socket, request, received: [] as string[] };
    connections.push(entry);
    socket.on('message', (data) => entry.received.push(data.toString()));
    socket.send(JSON.stringify({ type: 'hello', site_id: options.greet ?? SITE, server_time: Date.now() }));
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { server, url: new URL(`http://127.0.0.1:${port}`), connections };
}

/** ModuleMetrics over a fresh registry, as the hub's module host makes them. */
function moduleMetrics(metrics: HubMetrics): ModuleMetrics {
  const registers = [metrics.registry];
  return {
    prefix: 'meshhub_',
    counter: (config) => new Counter({ ...config, name: `meshhub_${config.name}`, registers }),
    gauge: (config) => new Gauge({ ...config, name: `meshhub_${config.name}`, registers }),
    histogram: (config) => new Histogram({ ...config, name: `meshhub_${config.name}`, registers }),
    onRender: (fn) => metrics.onRender(fn),
    core: metrics,
  };
}

type Correction = [serverTime: number, sentAt: number, receivedAt: number];

async function client(p: Peer, heartbeatMs?: number, skewMs = 0, corrections: Correction[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-downlink-faults-'));
  const db = openDatabase(join(dir, 'meshhub.sqlite'));
  enableOutbox(db);
  const issuer = await LocalIssuer.open(dir);
  const hubMetrics = new HubMetrics({ defaultMetrics: false });
  const bus: HubBus = new Bus({ retained: RETAINED_EVENTS });
  const downlink = new DownlinkClient({
    upstream: p.url,
    siteId: SITE,
    signer: issuer,
    clock: {
      now: () => Date.now(),
      local: () => Date.now() + skewMs,
      correct: (...seen: Correction) => corrections.push(seen) < 0,
    },
    applier: new DownlinkApplier({ db, hubNodeId: () => '!0000abcd' }),
    bus,
    metrics: new SyncMetrics(moduleMetrics(hubMetrics)),
    log,
    retryMaxMs: 1_000,
    ...(heartbeatMs ? { heartbeatMs } : {}),
  });
  downlink.start();
  cleanups.push(async () => {
    await downlink.stop();
    closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  });
  return { downlink, issuer, metricsText: async () => (await hubMetrics.render()).body };
}

const command = {
  type: 'command',
  id: 41,
  kind: 'user',
  body: { principal: 'carol', display_name: null, disabled: true },
};

describe('the downlink client', () => {
  it('signs its upgrade for the downlink path; ignores and counts frames it cannot use, answers the rest', async () => {
    const p = await peer({ autoPong: true });
    const site = await client(p);
    await waitFor(() => site.downlink.currentState === 'connected', 10_000, 'the hello');
    const [first] = p.connections;
    const token = first!.request.headers.authorization?.replace(/^Bearer /, '') ?? '';
    await expect(
      verifySiteRequest(
        token,
        { siteId: SITE, revoked: false, keys: site.issuer.jwks() },
        { method: 'GET', path: '/api/sync/v1/downlink' },
      ),
    ).resolves.toMatchObject({ siteId: SITE });

    first!.socket.send('not json');
    first!.socket.send(JSON.stringify({ type: 'news', id: 3 }));
    first!.socket.send(Buffer.from(JSON.stringify(command)), { binary: true });
    first!.socket.send(JSON.stringify(command));
    await waitFor(() => first!.received.length > 0, 10_000, 'the ack');
    expect(first!.received.map((f) => JSON.parse(f))).toEqual([{ type: 'ack', id: 41, result: 'applied' }]);
    const metrics = await site.metricsText();
    expect(metrics).toContain('meshhub_sync_downlink_invalid_frames_total 3');
    expect(metrics).toContain('meshhub_sync_downlink_commands_total{kind="user",result="applied"} 1');
  });

  it('terminates a connection whose peer misses two pongs, and connects again', async () => {
    const p = await peer({ autoPong: false });
    await client(p, 50);
    // The peer never closes: only the site's heartbeat ends the first connection.
    await waitFor(() => p.connections.length >= 2, 10_000, 'a second connection');
    expect(p.connections[0]!.socket.readyState).not.toBe(p.connections[0]!.socket.OPEN);
  });

  it("measures the upstream's clock in its hello against the site's own clock", async () => {
    const p = await peer({ autoPong: true });
    const corrections: Correction[] = [];
    const site = await client(p, undefined, -5 * 3_600_000, corrections);
    await waitFor(() => site.downlink.currentState === 'connected', 10_000, 'the hello');
    const [serverTime, sentAt] = corrections[0]!;
    expect(Math.abs(serverTime - sentAt - 5 * 3_600_000)).toBeLessThan(60_000);
  });

  it('closes a connection that greets another site, and says so', async () => {
    const p = await peer({ autoPong: true, greet: 'south' });
    const site = await client(p);
    await waitFor(() => site.downlink.lastProblem?.includes('south'), 10_000, 'the refusal');
    expect(site.downlink.lastProblem).toBe('the upstream greets this site as "south", not "north"');
    expect(site.downlink.currentState).not.toBe('connected');
  });
});
