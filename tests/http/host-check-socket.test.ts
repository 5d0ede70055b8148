/**
 * The hub answers only to its own names (README "Security", "Host names the hub answers to"): a
 * page that rebinds its DNS name to the hub's address (DNS rebinding) sends its own name in
 * `Host` and gets 421, over a real socket, on every listener, with nothing served.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { QUIET_ENV } from '../plugins/audit/helpers.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A GET over a real socket with exactly this `Host` header. */
function get(
  port: number,
  path: string,
  host: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString(),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Raw bytes to the port; resolves with everything the server wrote until it closed. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write(bytes);
  });
}

describe('a hub on a real socket', () => {
  let t: TestHub;
  let componentPort: number;

  beforeAll(async () => {
    t = await startTestHub({
      SIM_BACKFILL: '0s',
      PLUGINS: 'audit',
      ...QUIET_ENV,
      HTTP_ALLOWED_HOSTS: 'meshhub.example.org,*.lan.example',
      HTTP_COMPONENT_PORTS: 'weather=0',
    });
    componentPort = t.hub.http.componentPort('weather')!;
  }, 30_000);
  afterAll(async () => {
    await t?.stop();
  });

  it.each([
    '/api/v1/nodes',
    '/api/v1/weather/latest',
    '/api/events/export',
    '/health',
    '/metrics',
    '/',
    '/api/v1/live',
  ])(
    'answers 421 with a problem naming HTTP_ALLOWED_HOSTS to Host: evil.example, serving nothing of %s',
    async (path) => {
      const res = await get(t.hub.http.port, path, 'evil.example');
      expect(res.status).toBe(421);
      expect(res.headers['content-type']).toBe('application/problem+json');
      const body = JSON.parse(res.text);
      expect(body).toMatchObject({ type: 'about:blank', title: 'Misdirected Request', status: 421 });
      expect(body.detail).toContain('HTTP_ALLOWED_HOSTS');
      expect(body.detail).toContain('evil.example');
      expect(typeof body.request_id).toBe('string');
      expect(Object.keys(body).sort()).toEqual(['detail', 'request_id', 'status', 'title', 'type']);
    },
  );

  it('serves the same requests to the hub’s own names and to HTTP_ALLOWED_HOSTS', async () => {
    const port = t.hub.http.port;
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      hostname(),
      `${hostname().split('.')[0]}.local`,
      'meshhub.example.org',
      'MESHHUB.example.org.',
      'pi.lan.example:8080',
    ]) {
      const nodes = await get(port, '/api/v1/nodes', host);
      expect(nodes.status, host).toBe(200);
      expect(JSON.parse(nodes.text)).toHaveProperty('data');
    }
    // Who may read the audit export is the audit plugin's to decide: the Host check only lets the
    // request reach it.
    expect((await get(port, '/api/events/export', `127.0.0.1:${port}`)).status).not.toBe(421);
  });

  it('checks the component ports the same way', async () => {
    expect((await get(componentPort, '/api/v1/weather/latest', 'evil.example')).status).toBe(421);
    expect((await get(componentPort, '/api/v1/weather/latest', `127.0.0.1:${componentPort}`)).status).toBe(
      200,
    );
  });

  it('refuses a WebSocket upgrade to another name with 421 before any module sees it', async () => {
    const port = t.hub.http.port;
    const answer = await raw(
      port,
      'GET /mqtt HTTP/1.1\r\nHost: evil.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 421 Misdirected Request\r\n/);
    expect(answer).toContain('HTTP_ALLOWED_HOSTS');
  });

  it('answers 400 to an HTTP/1.1 request without Host, and serves HTTP/1.0 without one', async () => {
    const port = t.hub.http.port;
    expect(await raw(port, 'GET /api/v1/nodes HTTP/1.1\r\nConnection: close\r\n\r\n')).toMatch(
      /^HTTP\/1\.1 400 /,
    );
    expect(await raw(port, 'GET /api/v1/nodes HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('checks the Host header, not an absolute request target', async () => {
    const port = t.hub.http.port;
    const answer = await raw(
      port,
      `GET http://127.0.0.1:${port}/api/v1/nodes HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 421 /);
  });
});
