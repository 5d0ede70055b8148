/**
 * One client address cannot take every slot of `GET /api/v1/live` (README "Security", "Live
 * streams"): past LIVE_MAX_STREAMS_PER_ADDRESS its next stream is 429 with Retry-After, while
 * another address still connects. Two loopback addresses (127.0.0.1 and 127.0.0.2) stand for two
 * machines on the LAN: each request binds its socket's local address.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { LiveBroadcaster } from '../../src/live/live-broadcaster.js';
import { startTestHub, type TestHub, waitFor } from '../helpers/hub.js';

interface Opened {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body so far (for a refusal: all of it). */
  text: string;
  close(): void;
}

const open: Opened[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

/**
 * Opens the live stream from `localAddress`; resolves once the hub said hello (the stream holds
 * its slot then), or with the whole refusal.
 */
function openStream(port: number, localAddress: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = httpRequest(
      { host: '127.0.0.1', port, path: '/api/v1/live', localAddress, headers: { host: `127.0.0.1:${port}` } },
      (res) => {
        let text = '';
        const opened: Opened = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          get text() {
            return text;
          },
          close: () => req.destroy(),
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (res.statusCode === 200 && text.includes('event: hello')) {
            open.push(opened);
            resolve(opened);
          }
        });
        res.on('end', () => resolve(opened));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('live streams per client address', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startTestHub({ SIM_BACKFILL: '0s' });
  }, 30_000);
  afterAll(async () => {
    await t?.stop();
  });

  it('refuses the 9th stream of one address with 429 and Retry-After, while another address connects', async () => {
    const port = t.hub.http.port;
    const first: Opened[] = [];
    for (let i = 0; i < 8; i++) {
      const s = await openStream(port, '127.0.0.1');
      expect(s.status).toBe(200);
      first.push(s);
    }
    const refused = await openStream(port, '127.0.0.1');
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const body = JSON.parse(refused.text);
    expect(body).toMatchObject({ status: 429, title: 'Too Many Requests' });
    expect(body.detail).toMatch(/at most 8 live streams per client address/);

    const other = await openStream(port, '127.0.0.2');
    expect(other.status).toBe(200);

    // A closed stream gives its address the slot back.
    first[0]!.close();
    const again = await waitFor(async () => {
      const s = await openStream(port, '127.0.0.1');
      return s.status === 200 ? s : undefined;
    });
    expect(again.status).toBe(200);
  });
});

describe('LIVE_MAX_STREAMS_PER_ADDRESS', () => {
  it('defaults to 8 and takes 1 to 100; anything else stops the start naming it', () => {
    expect(loadConfig({}).LIVE_MAX_STREAMS_PER_ADDRESS).toBe(8);
    expect(loadConfig({ LIVE_MAX_STREAMS_PER_ADDRESS: '2' }).LIVE_MAX_STREAMS_PER_ADDRESS).toBe(2);
    for (const bad of ['0', '101', 'many']) {
      expect(() => loadConfig({ LIVE_MAX_STREAMS_PER_ADDRESS: bad })).toThrow(/LIVE_MAX_STREAMS_PER_ADDRESS/);
    }
  });

  it('is what the hub’s stream enforces', async () => {
    const t = await startTestHub({ SIM_BACKFILL: '0s', LIVE_MAX_STREAMS_PER_ADDRESS: '2' });
    try {
      const port = t.hub.http.port;
      expect((await openStream(port, '127.0.0.1')).status).toBe(200);
      expect((await openStream(port, '127.0.0.1')).status).toBe(200);
      expect((await openStream(port, '127.0.0.1')).status).toBe(429);
      expect((await openStream(port, '127.0.0.2')).status).toBe(200);
    } finally {
      for (const s of open.splice(0)) s.close();
      await t.stop();
    }
  });
});

describe('LiveBroadcaster per-address count', () => {
  it('counts each address’s open streams, gives the slot back when a stream ends, and keeps the total cap', () => {
    const live = new LiveBroadcaster({ maxClients: 3, maxClientsPerAddress: 2 });
    const a1 = live.open(() => [], undefined, '10.0.0.5');
    live.open(() => [], undefined, '10.0.0.5');
    expect(live.clientsOf('10.0.0.5')).toBe(2);
    expect(() => live.open(() => [], undefined, '10.0.0.5')).toThrow(
      expect.objectContaining({ status: 429 }),
    );
    live.open(() => [], undefined, '10.0.0.6');
    expect(() => live.open(() => [], undefined, '10.0.0.7')).toThrow(
      expect.objectContaining({ status: 503 }),
    );
    void a1.cancel();
    expect(live.clientsOf('10.0.0.5')).toBe(1);
    expect(live.clientCount).toBe(2);
    live.closeAll();
    expect(live.clientsOf('10.0.0.5')).toBe(0);
    expect(live.clientsOf('10.0.0.6')).toBe(0);
  });
});
