/**
 * The one outbound HTTP client (src/http/guarded-fetch.ts): where a name resolves is checked at
 * connect time, by the lookup the connection itself uses, so a name that resolves into the LAN
 * (DNS rebinding) is refused before anything is sent. Names resolve through an injected resolver;
 * only loopback servers are ever contacted: every refusal happens before a connection is made.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import {
  type AddressPolicy,
  guardedAgent,
  guardedFetch,
  guardedLookup,
  guardedSocketConnect,
  RefusedAddressError,
  refusedAddressOf,
} from '../../src/http/guarded-fetch.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** A loopback HTTP server counting requests; `close` answers end their connection. */
async function loopbackServer(): Promise<{ port: number; requests: () => number }> {
  let requests = 0;
  const server: Server = createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-type': 'text/plain', connection: 'close' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { port: (server.address() as AddressInfo).port, requests: () => requests };
}

/** A resolver answering `answers` in turn (the last one for ever after), counting its calls. */
function resolver(...answers: string[][]): AddressPolicy['resolve'] & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (host: string) => {
    calls.push(host);
    return answers[Math.min(calls.length - 1, answers.length - 1)]!;
  };
  return Object.assign(resolve, { calls });
}

function client(policy: AddressPolicy) {
  const f = guardedFetch(policy);
  cleanup.push(() => f.close());
  return f;
}

async function refusal(promise: Promise<unknown>): Promise<RefusedAddressError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  const refused = refusedAddressOf(error);
  if (!refused) throw new Error(`expected a refused address, got ${String(error)}`);
  return refused;
}

describe('guardedFetch', () => {
  it('connects to what a name resolves to when the policy allows it (loopback for tests)', async () => {
    const s = await loopbackServer();
    const resolve = resolver(['127.0.0.1']);
    const res = await client({ allowLoopback: true, resolve })(`http://api.public.example:${s.port}/x`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
    expect(resolve.calls).toEqual(['api.public.example']);
  });

  it.each([
    ['10.0.0.1'],
    ['127.0.0.1'],
    ['169.254.169.254'],
    ['192.168.1.1'],
    ['100.64.0.1'],
    ['::1'],
    ['fe80::1'],
    ['::ffff:10.0.0.1'],
  ])(
    'refuses a public-looking name that resolves to %s at connect time, naming the setting',
    async (address) => {
      const s = await loopbackServer();
      const refused = await refusal(
        client({ setting: 'EXAMPLE_ALLOW_PRIVATE_NETWORK', resolve: resolver([address]) })(
          `https://api.public.example:${s.port}/x`,
          { method: 'POST', body: 'secret' },
        ),
      );
      expect(refused).toBeInstanceOf(RefusedAddressError);
      expect(refused).toMatchObject({
        code: 'EREFUSEDADDRESS',
        reason: 'private_address',
        host: 'api.public.example',
      });
      expect(refused.message).toBe(
        `host api.public.example resolves to a non-public address (${address}); refused (EXAMPLE_ALLOW_PRIVATE_NETWORK=true allows it)`,
      );
      expect(s.requests()).toBe(0);
    },
  );

  it('refuses a name when any one of its addresses is non-public', async () => {
    await refusal(
      client({ resolve: resolver(['93.184.215.14', '10.0.0.1']) })('https://mixed.public.example/'),
    );
  });

  it('checks every new connection: a name that re-resolves into the LAN (DNS rebinding) is refused', async () => {
    const s = await loopbackServer();
    // First answer loopback (allowed here, standing in for a public address), then a private one.
    const resolve = resolver(['127.0.0.1'], ['10.0.0.1']);
    const f = client({ allowLoopback: true, resolve });
    expect((await f(`http://rebind.public.example:${s.port}/`)).status).toBe(200);
    // The server closed that connection: the next request connects anew, and looks up anew.
    const refused = await refusal(f(`http://rebind.public.example:${s.port}/`));
    expect(refused.address).toBe('10.0.0.1');
    expect(resolve.calls).toHaveLength(2);
    expect(s.requests()).toBe(1);
  });

  it('refuses literal non-public IPs without any lookup, and connects to an allowed literal', async () => {
    const s = await loopbackServer();
    const resolve = resolver(['203.0.113.9']);
    for (const url of [
      'https://10.0.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      `http://127.0.0.1:${s.port}/`,
      `http://[::1]:${s.port}/`,
    ]) {
      const refused = await refusal(client({ resolve })(url));
      expect(refused.message).toMatch(/ is a non-public address; refused$/);
    }
    expect(resolve.calls).toEqual([]);
    expect((await client({ allowLoopback: true })(`http://127.0.0.1:${s.port}/`)).status).toBe(200);
    expect(s.requests()).toBe(1);
  });

  it('lets the operator’s opt-in through (allowPrivateNetwork): the lookup answers the private address', async () => {
    const lookup = guardedLookup({ allowPrivateNetwork: true, resolve: resolver(['10.0.0.1']) });
    const answer = await new Promise<unknown>((resolve, reject) =>
      lookup('btcpay.lan.example', { all: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses),
      ),
    );
    expect(answer).toEqual([{ address: '10.0.0.1', family: 4 }]);
  });
});

describe('guardedAgent (undici request)', () => {
  it('refuses at connect time like guardedFetch', async () => {
    const { request } = await import('undici');
    const agent = await guardedAgent({ resolve: resolver(['10.0.0.1']) });
    cleanup.push(() => agent.close());
    const error = await request('https://llm.public.example/v1/chat/completions', { dispatcher: agent }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refusedAddressOf(error)?.address).toBe('10.0.0.1');
  });
});

describe('guardedSocketConnect (ws)', () => {
  async function wsServer(): Promise<number> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    wss.on('connection', (socket) => socket.send('hello'));
    cleanup.push(() => new Promise<void>((resolve) => wss.close(() => resolve())));
    cleanup.push(() => {
      for (const c of wss.clients) c.terminate();
    });
    return (wss.address() as AddressInfo).port;
  }

  function outcome(url: string, policy: AddressPolicy): Promise<{ message?: string; error?: unknown }> {
    return new Promise((resolve) => {
      const socket = new WebSocket(url, { createConnection: guardedSocketConnect(policy, false) });
      socket.on('message', (data) => {
        resolve({ message: String(data) });
        socket.terminate();
      });
      socket.on('error', (error) => resolve({ error }));
    });
  }

  it('connects where the policy allows, refuses a name resolving into the LAN and a literal private IP', async () => {
    const port = await wsServer();
    expect(
      await outcome(`ws://upstream.public.example:${port}/`, {
        allowLoopback: true,
        resolve: resolver(['127.0.0.1']),
      }),
    ).toEqual({ message: 'hello' });
    const byName = await outcome(`ws://upstream.public.example:${port}/`, {
      resolve: resolver(['192.168.0.10']),
    });
    expect(refusedAddressOf(byName.error)?.address).toBe('192.168.0.10');
    const literal = await outcome(`ws://127.0.0.1:${port}/`, { setting: 'SYNC_ALLOW_PRIVATE_NETWORK' });
    expect(refusedAddressOf(literal.error)?.message).toMatch(/SYNC_ALLOW_PRIVATE_NETWORK=true allows it/);
  });
});
