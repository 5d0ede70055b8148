/**
 * Issue 17, "found when tried from outside": a request that carries an `Upgrade` header nobody
 * takes gets an answer, over a real socket, with the bytes `curl --http2` and a WebSocket client
 * send: h2c is ignored and the request served over HTTP/1.1 like any other (RFC 9110 §7.8: a
 * server may ignore Upgrade); a WebSocket to a path that upgrades nothing gets a 404 problem. Both with MQTT over
 * WebSocket on (the HTTP server then listens for upgrades, which is when Node hands it every such
 * request) and off; and /mqtt still upgrades when it is on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_API } from '../../sync/protocol.js';
import { createUpstream, type UpstreamServer } from '../../sync/upstream/main.js';
import { loadUpstreamSettings } from '../../sync/upstream/settings.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../helpers/postgres.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` on a fresh socket and reads one response (or what came before the close). */
function exchange(port: number, request: string): Promise<RawResponse | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer in 10 s; got ${JSON.stringify(data.toString())}`));
    }, 10_000);
    const finish = (value: RawResponse | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const status = Number(statusLine!.split(' ')[1]);
      if (status === 101) return finish({ status, headers, body: '' });
      const length = Number(headers['content-length'] ?? Number.NaN);
      const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
      if (Number.isFinite(length) && body.length >= length)
        finish({ status, headers, body: body.subarray(0, length).toString() });
      else if (headers['transfer-encoding'] === 'chunked' && body.toString().endsWith('0\r\n\r\n'))
        finish({ status, headers, body: body.toString() });
    });
    socket.on('close', () => finish(undefined));
    socket.on('error', () => finish(undefined));
    socket.write(request);
  });
}

const H2C = (path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n`;
const WEBSOCKET = (path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n`;

/** Routes of the core: public JSON, one that wants a token, an unknown API path, the web app's fallback. */
const ROUTES: { path: string; status: number }[] = [
  { path: '/health', status: 200 },
  { path: '/api/v1/openapi.json', status: 200 },
  { path: '/api/v1/weather/latest', status: 200 },
  { path: '/api/v1/messages/conversations', status: 401 },
  { path: '/api/v1/no-such-route', status: 404 },
  { path: '/some/browser/route', status: 200 },
];

for (const websocket of [true, false]) {
  describe(`requests with an Upgrade header, MQTT over WebSocket ${websocket ? 'on' : 'off'}`, () => {
    let hub: TestHub;
    let port: number;
    beforeAll(async () => {
      hub = await startTestHub({ MQTT_WEBSOCKET: String(websocket), SIM_BACKFILL: '0s', MESH_API_PORT: '0' });
      port = hub.hub.http.port;
    });
    afterAll(() => hub?.stop());

    for (const { path, status } of ROUTES) {
      it(`h2c (curl --http2) on ${path}: answered over HTTP/1.1 as without it (${status})`, async () => {
        const plain = await exchange(port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
        const upgraded = await exchange(port, H2C(path));
        expect(plain?.status).toBe(status);
        expect(upgraded?.status).toBe(status);
        expect(upgraded?.headers['content-type']).toBe(plain?.headers['content-type']);
      });

      it(`Upgrade: websocket on ${path}: a 404 problem, not a closed socket`, async () => {
        const upgraded = await exchange(port, WEBSOCKET(path));
        expect(upgraded?.status).toBe(404);
        expect(upgraded?.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(upgraded!.body)).toEqual({
          type: 'about:blank',
          title: 'Not Found',
          status: 404,
          detail: `nothing here upgrades a connection at ${path}`,
        });
      });
    }

    it('a POST with a body and h2c: the body reaches the route', async () => {
      const body = JSON.stringify({ username: 'nobody', password: 'wrong-password' });
      const request = `POST /api/v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n${body}`;
      const answer = await exchange(port, request);
      // 401 (wrong password) proves the JSON body was read; a lost body would be a 400.
      expect(answer?.status).toBe(401);
      expect(answer?.headers['content-type']).toContain('application/problem+json');
    });

    it('the connection stays usable: two requests on one socket, the first with h2c', async () => {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let text = '';
        socket.on('data', (c) => {
          text += c.toString();
          if ((text.match(/HTTP\/1\.1 200/g) ?? []).length === 2) {
            socket.destroy();
            resolve(text);
          }
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.write(`${H2C('/health')}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      });
      expect((answer.match(/HTTP\/1\.1 200/g) ?? []).length).toBe(2);
    });

    it(`/mqtt: ${websocket ? 'upgrades to MQTT over WebSocket (101)' : 'a 404 problem (MQTT over WebSocket is off)'}; h2c there is served plain`, async () => {
      expect((await exchange(port, WEBSOCKET('/mqtt')))?.status).toBe(websocket ? 101 : 404);
      const plain = await exchange(port, 'GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      expect((await exchange(port, H2C('/mqtt')))?.status).toBe(plain?.status);
    });
  });
}

const noPostgres = await skipWithoutPostgres();

describe.skipIf(noPostgres)('the upstream (meshhub upstream): the same rules', () => {
  let schema: TestSchema;
  let dataDir: string;
  let upstream: UpstreamServer;
  beforeAll(async () => {
    schema = await createTestSchema('upgrade');
    dataDir = mkdtempSync(join(tmpdir(), 'meshhub-rel-upgrade-'));
    upstream = await createUpstream(
      loadUpstreamSettings({ UPSTREAM_DATABASE_URL: schema.url, HTTP_PORT: '0', DATA_DIR: dataDir }),
      { log: pino({ level: 'silent' }), defaultMetrics: false },
    );
    await upstream.start();
  });
  afterAll(async () => {
    await upstream?.stop();
    await schema?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  for (const path of ['/health', '/api/version', '/api/v1/sites', '/api/v1/no-such-route']) {
    it(`h2c on ${path}: answered as without it`, async () => {
      const plain = await exchange(upstream.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const upgraded = await exchange(upstream.port, H2C(path));
      expect(plain?.status).toBeGreaterThan(0);
      expect(upgraded?.status).toBe(plain?.status);
    });
  }

  it('a WebSocket to a path but the downlink: 404 problem; to the downlink: the downlink answers (401 unsigned)', async () => {
    expect((await exchange(upstream.port, WEBSOCKET('/health')))?.status).toBe(404);
    expect((await exchange(upstream.port, WEBSOCKET(`${SYNC_API}/downlink`)))?.status).toBe(401);
  });
});
