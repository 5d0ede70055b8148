/**
 * The downlink (issue 12 "Pull", docs/sync.md): a site's one WebSocket over a real HTTP server,
 * the commands queued in PostgreSQL, and NOTIFY between processes. Pending commands arrive in id
 * order after the hello, an ack is recorded once, what was not acknowledged comes again on the
 * next connection, a command queued by another process (pool) wakes the socket, also after the
 * listening connection was killed; bad frames are ignored and counted; refused upgrades get an
 * HTTP problem on the raw socket.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import {
  type CommandAck,
  type CommandBody,
  downlinkCommandSchema,
  downlinkHelloSchema,
  SYNC_API,
} from '../../../sync/protocol.js';
import { signSiteRequest } from '../../../sync/signing.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool, withTransaction } from '../../../sync/upstream/db/pool.js';
import { DownlinkQueue, enqueueCommand } from '../../../sync/upstream/downlink-queue.js';
import {
  CLOSE_REPLACED,
  CLOSE_REVOKED,
  type DownlinkUpgradeHandler,
  downlinkUpgradeHandler,
} from '../../../sync/upstream/routes/downlink-socket.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();

const DOWNLINK = `${SYNC_API}/downlink`;
// NOTIFY reaches every session of the database, other test files' too: site ids of our own.
const RUN = randomBytes(4).toString('hex');
const NORTH = `north-${RUN}`;
const SOUTH = `south-${RUN}`;
const EAST = `east-${RUN}`;
const NODE = '!0000000a';

function text(n: number): CommandBody<'text'> {
  return {
    message_id: `01950000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    owner: 'alice',
    owner_name: 'Alice',
    node_id: NODE,
    text: `hello ${n}`,
    created_at: 1_000 + n,
  };
}

/** One site's end of the socket: frames in arrival order, and how it closed. */
class Peer {
  private readonly frames: unknown[] = [];
  private readonly waiters: ((frame: unknown) => void)[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const frame: unknown = JSON.parse(String(data));
      const waiter = this.waiters.shift();
      if (waiter) waiter(frame);
      else this.frames.push(frame);
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  next(): Promise<unknown> {
    if (this.frames.length > 0) return Promise.resolve(this.frames.shift());
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async nextCommand(): Promise<{ id: number; kind: string; body: unknown }> {
    return downlinkCommandSchema.parse(await this.next());
  }

  ack(id: number, result: CommandAck['result'] = 'applied', reason?: string): void {
    this.ws.send(JSON.stringify({ type: 'ack', id, result, ...(reason ? { reason } : {}) }));
  }

  close(): Promise<unknown> {
    this.ws.close();
    return this.closed;
  }
}

describe.skipIf(skip)('downlink', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let sites: SiteRegistry;
  let queue: DownlinkQueue;
  let handler: DownlinkUpgradeHandler;
  let server: Server;
  let port: number;
  let issuer: LocalIssuer;
  let dir: string;
  let acks: { siteId: string; ack: CommandAck; command: { id: number; kind: string; body: unknown } }[];
  const extraPools: pg.Pool[] = [];
  const peers: Peer[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'meshhub-downlink-'));
    issuer = await LocalIssuer.open(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function startServer(options: { heartbeatMs?: number; maxInFlight?: number } = {}): Promise<void> {
    handler = downlinkUpgradeHandler({ sites, queue, heartbeatMs: 60_000, ...options });
    server = createServer((_req, res) => {
      res.statusCode = 404;
      res.end();
    });
    server.on('upgrade', handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  }

  const makeQueue = (reconnectMs: { min: number; max: number }) =>
    new DownlinkQueue(pool, schema.url, {
      onAck: (siteId, ack, command) => {
        acks.push({ siteId, ack, command });
      },
      reconnectMs,
    });

  beforeEach(async () => {
    schema = await createTestSchema('downlink');
    pool = openPool(schema.url, { max: 4 });
    await migrateUpstream(pool);
    sites = new SiteRegistry(pool);
    await sites.add({ siteId: NORTH, publicJwks: issuer.jwks() });
    await sites.add({ siteId: SOUTH, publicJwks: issuer.jwks() });
    acks = [];
    queue = makeQueue({ min: 20, max: 200 });
    await queue.start();
  });
  afterEach(async () => {
    for (const peer of peers.splice(0)) peer.ws.terminate();
    handler?.closeAll();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await queue.stop();
    await Promise.all(extraPools.splice(0).map((p) => p.end()));
    await pool.end();
    await schema.drop();
  });

  const token = (siteId = NORTH, path = DOWNLINK) =>
    signSiteRequest(issuer, { siteId, method: 'GET', path, nowMs: Date.now() });

  async function connect(siteId = NORTH, options: { autoPong?: boolean } = {}): Promise<Peer> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${DOWNLINK}`, {
      headers: { authorization: `Bearer ${await token(siteId)}` },
      ...options,
    });
    const peer = new Peer(ws);
    peers.push(peer);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return peer;
  }

  /** An upgrade the server refuses: the HTTP status and problem it answers instead. */
  function refused(
    headers: Record<string, string>,
    path = DOWNLINK,
  ): Promise<{ status: number; problem: unknown }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
      ws.on('open', () => reject(new Error('the upgrade was accepted')));
      ws.on('error', () => {});
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, problem: JSON.parse(body) }));
      });
    });
  }

  const rows = async () =>
    (
      await pool.query(
        'SELECT id, acked_at IS NOT NULL AS acked, result, reason, sent_count FROM downlink ORDER BY id',
      )
    ).rows;

  it('sends the hello, then every pending command in id order', async () => {
    await startServer();
    const ids = [];
    for (let n = 1; n <= 3; n++) ids.push(await enqueueCommand(pool, NORTH, 'text', text(n)));
    await enqueueCommand(pool, SOUTH, 'text', text(9));
    ids.push(
      await enqueueCommand(pool, NORTH, 'user', { principal: 'alice', display_name: null, disabled: true }),
    );
    const peer = await connect();
    expect(downlinkHelloSchema.parse(await peer.next())).toMatchObject({ type: 'hello', site_id: NORTH });
    const got = [];
    for (let i = 0; i < 4; i++) got.push(await peer.nextCommand());
    expect(got.map((c) => c.id)).toEqual(ids);
    expect(got[0]).toEqual({ type: 'command', id: ids[0], kind: 'text', body: text(1) });
    expect(got[3]?.kind).toBe('user');
    expect((await sites.get(NORTH))?.lastContactAt).toBeGreaterThan(0);
  });

  it('records an ack once (the first wins) and hands it to onAck', async () => {
    await startServer();
    const id = await enqueueCommand(pool, NORTH, 'text', text(1));
    const other = await enqueueCommand(pool, SOUTH, 'text', text(2));
    const peer = await connect();
    await peer.next();
    await peer.nextCommand();
    peer.ack(id, 'rejected', 'the text does not fit one packet');
    peer.ack(id, 'applied');
    peer.ack(other, 'applied'); // not north's: changes nothing
    await vi.waitFor(() => expect(handler.stats().acks).toBe(3));
    expect(await rows()).toEqual([
      { id, acked: true, result: 'rejected', reason: 'the text does not fit one packet', sent_count: 1 },
      { id: other, acked: false, result: null, reason: null, sent_count: 0 },
    ]);
    expect(acks).toEqual([
      {
        siteId: NORTH,
        ack: { type: 'ack', id, result: 'rejected', reason: 'the text does not fit one packet' },
        command: { id, kind: 'text', body: text(1) },
      },
    ]);
  });

  it('sends again on the next connection what was not acknowledged', async () => {
    await startServer();
    const ids = [];
    for (let n = 1; n <= 3; n++) ids.push(await enqueueCommand(pool, NORTH, 'text', text(n)));
    const first = await connect();
    await first.next();
    for (let i = 0; i < 3; i++) await first.nextCommand();
    first.ack(ids[0]!);
    await vi.waitFor(() => expect(handler.stats().acks).toBe(1));
    await first.close();

    const second = await connect();
    await second.next();
    expect((await second.nextCommand()).id).toBe(ids[1]);
    expect((await second.nextCommand()).id).toBe(ids[2]);
    expect((await rows()).map((r) => r.sent_count)).toEqual([1, 2, 2]);
  });

  it('a command queued by another process wakes the connected socket at its commit', async () => {
    await startServer();
    const peer = await connect();
    await peer.next();
    const elsewhere = openPool(schema.url, { max: 2 });
    extraPools.push(elsewhere);
    const id = await withTransaction(elsewhere, (client) => enqueueCommand(client, NORTH, 'text', text(5)));
    expect(await peer.nextCommand()).toEqual({ type: 'command', id, kind: 'text', body: text(5) });
  });

  it('sends a command whose transaction commits after a later-numbered one was sent', async () => {
    await startServer();
    const peer = await connect();
    await peer.next();
    const slow = await pool.connect();
    try {
      await slow.query('BEGIN');
      const early = await enqueueCommand(slow, NORTH, 'text', text(1));
      const late = await enqueueCommand(pool, NORTH, 'text', text(2));
      expect(late).toBeGreaterThan(early);
      expect((await peer.nextCommand()).id).toBe(late);
      await slow.query('COMMIT');
      expect((await peer.nextCommand()).id).toBe(early);
    } finally {
      slow.release();
    }
  });

  it('keeps at most maxInFlight commands unacknowledged on a connection; an ack makes room', async () => {
    await startServer({ maxInFlight: 3 });
    const ids: number[] = [];
    for (let n = 1; n <= 4; n++) ids.push(await enqueueCommand(pool, NORTH, 'text', text(n)));
    const peer = await connect();
    await peer.next();
    for (let i = 0; i < 3; i++) expect((await peer.nextCommand()).id).toBe(ids[i]);
    // Commands are counted before they are sent: the fourth was never taken from the queue.
    expect((await rows()).map((r) => r.sent_count)).toEqual([1, 1, 1, 0]);
    peer.ack(ids[0]!);
    expect((await peer.nextCommand()).id).toBe(ids[3]);
  });

  it('a command rolled back with its transaction is never sent', async () => {
    await startServer();
    const peer = await connect();
    await peer.next();
    await withTransaction(pool, async (client) => {
      await enqueueCommand(client, NORTH, 'text', text(1));
      throw new Error('the text could not be stored');
    }).catch(() => {});
    const id = await enqueueCommand(pool, NORTH, 'text', text(2));
    // The next frame is the committed command: the rolled-back one never went out.
    expect(await peer.nextCommand()).toEqual({ type: 'command', id, kind: 'text', body: text(2) });
  });

  it('keeps waking sockets after its listening connection is killed (PostgreSQL restarted)', async () => {
    // A slow reconnect, so a command can be queued while nobody listens.
    await queue.stop();
    queue = makeQueue({ min: 1_000, max: 1_000 });
    await queue.start();
    await startServer();
    const peer = await connect();
    await peer.next();
    const elsewhere = openPool(schema.url, { max: 1 });
    extraPools.push(elsewhere);

    const killed = queue.listenerPid;
    await pool.query('SELECT pg_terminate_backend($1)', [killed]);
    await vi.waitFor(() => expect(queue.listening).toBe(false));
    // Its NOTIFY goes nowhere: the queue finds the command by re-reading once it listens again.
    const missed = await enqueueCommand(elsewhere, NORTH, 'text', text(6));
    expect((await peer.nextCommand()).id).toBe(missed);
    expect(queue.listening && queue.listenerPid !== killed).toBe(true);
    expect(queue.connects).toBe(2);

    const id = await enqueueCommand(elsewhere, NORTH, 'text', text(7));
    expect((await peer.nextCommand()).id).toBe(id);
  });

  it('ignores and counts frames that are not acks, and keeps the socket', async () => {
    await startServer();
    const id = await enqueueCommand(pool, NORTH, 'text', text(1));
    const peer = await connect();
    await peer.next();
    await peer.nextCommand();
    peer.ws.send('not json');
    peer.ws.send(JSON.stringify({ type: 'ack', id: -1, result: 'applied' }));
    peer.ws.send(JSON.stringify({ type: 'ack', id, result: 'maybe' }));
    peer.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    peer.ack(id);
    await vi.waitFor(() => expect(handler.stats().acks).toBe(1));
    expect((await rows())[0]).toMatchObject({ acked: true, result: 'applied' });
    expect(handler.stats()).toMatchObject({ badFrames: 4, connectedSites: [NORTH] });
  });

  it('a second connection of the same site replaces the first', async () => {
    await startServer();
    const first = await connect();
    await first.next();
    const second = await connect();
    await second.next();
    expect(await first.closed).toEqual({ code: CLOSE_REPLACED, reason: 'replaced by a newer connection' });
    const id = await enqueueCommand(pool, NORTH, 'text', text(3));
    expect((await second.nextCommand()).id).toBe(id);
    expect(handler.stats().connectedSites).toEqual([NORTH]);
  });

  it('terminates a peer that stops answering pings, and closes a site revoked meanwhile', async () => {
    await startServer({ heartbeatMs: 40 });
    const silent = await connect(NORTH, { autoPong: false });
    await silent.next();
    expect((await silent.closed).code).toBe(1006);
    const live = await connect(SOUTH);
    await live.next();
    await sites.revoke(SOUTH);
    expect(await live.closed).toEqual({ code: CLOSE_REVOKED, reason: 'site revoked' });
  });

  it('refuses bad upgrades with an HTTP problem before any WebSocket exists', async () => {
    await startServer();
    expect(await refused({})).toEqual({
      status: 401,
      problem: expect.objectContaining({
        type: 'urn:meshhub:sync:unknown_site',
        detail: 'a site request token (Authorization: Bearer) is required',
      }),
    });
    expect(await refused({ authorization: `Bearer ${await token(EAST)}` })).toMatchObject({
      status: 401,
      problem: { reason: 'unknown_site', detail: 'the token names no registered site' },
    });
    expect(
      await refused({ authorization: `Bearer ${await token(NORTH, `${SYNC_API}/ping`)}` }),
    ).toMatchObject({
      status: 401,
      problem: {
        reason: 'bad_token',
        detail: `the request token is for "GET ${SYNC_API}/ping", not "GET ${DOWNLINK}"`,
      },
    });
    const once = await token(NORTH);
    const accepted = new Peer(
      new WebSocket(`ws://127.0.0.1:${port}${DOWNLINK}`, { headers: { authorization: `Bearer ${once}` } }),
    );
    peers.push(accepted);
    await accepted.next();
    expect(await refused({ authorization: `Bearer ${once}` })).toMatchObject({
      status: 409,
      problem: { reason: 'replayed_request' },
    });
    await sites.revoke(SOUTH);
    expect(await refused({ authorization: `Bearer ${await token(SOUTH)}` })).toMatchObject({
      status: 403,
      problem: { type: 'urn:meshhub:sync:revoked_site', detail: `site ${SOUTH} is revoked` },
    });
    expect(await refused({ authorization: `Bearer ${await token(NORTH)}` }, '/elsewhere')).toMatchObject({
      status: 404,
    });
    expect(handler.stats().connectedSites).toEqual([NORTH]);
  });
});
