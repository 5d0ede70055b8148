/**
 * GET /api/v1/live: the dashboard's Server-Sent Events. A whole hub on the simulator for what
 * the stream says; a LiveBroadcaster on a real socket for its limits (clients, slow readers).
 */
import { connect } from 'node:net';
import { serve } from '@hono/node-server';
import { afterEach, describe, expect, it } from 'vitest';
import { liveApp } from '../../scripts/bench/lib/live-app.js';
import { LiveBroadcaster } from '../../src/live/live-broadcaster.js';
import { readingJson } from '../../src/live/live-json.js';
import { getJson, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { readSse, type SseEvent } from '../helpers/sse.js';

/** Reads SSE events from `url` until `until` says stop (or the stream ends). */
async function readEvents(
  url: string,
  until: (events: SseEvent[]) => boolean,
  signal?: AbortSignal,
): Promise<{ events: SseEvent[]; response: Response; ended: boolean }> {
  const response = await fetch(url, signal ? { signal } : {});
  return { ...(await readSse(response.body!, until)), response };
}

const hubs: TestHub[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.stop()));
});

describe('the live stream of a hub', () => {
  it('starts with hello (version, start time, radio), then carries stored readings and node updates in the API’s shapes', async () => {
    const t = await startTestHub({ SIM_BACKFILL: '0s', SIM_TELEMETRY_SECONDS: '1' });
    hubs.push(t);
    const { events, response } = await readEvents(
      `${t.baseUrl}/api/v1/live`,
      (e) => e.some((x) => x.event === 'readings') && e.some((x) => x.event === 'node'),
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toContain('no-cache');
    expect(events[0]!.event).toBe('hello');
    const hello = JSON.parse(events[0]!.data);
    const version = (await getJson(`${t.baseUrl}/api/version`)).body.version;
    expect(hello).toMatchObject({ version, radio: { simulated: true }, plugins: [] });
    expect(Date.parse(hello.started_at)).toBeLessThanOrEqual(Date.now());

    const readings = JSON.parse(events.find((e) => e.event === 'readings')!.data).data as Array<
      Record<string, unknown>
    >;
    expect(readings.length).toBeGreaterThan(0);
    for (const r of readings) {
      expect(r.node_id).toMatch(/^![0-9a-f]{8}$/);
      expect(r.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Object.keys(r).every((k) => /^[a-z0-9_]+$/.test(k))).toBe(true);
    }
    // What the stream said was stored is what the history endpoint returns.
    const first = readings[0]!;
    const from = new Date(Date.parse(first.timestamp as string)).toISOString();
    const to = new Date(Date.parse(first.timestamp as string) + 1).toISOString();
    const history = await getJson(
      `${t.baseUrl}/api/v1/weather/history?node_id=${encodeURIComponent(first.node_id as string)}&start=${from}&end=${to}`,
    );
    expect(history.body.data).toEqual([first]);

    const node = JSON.parse(events.find((e) => e.event === 'node')!.data);
    expect(node.node_id).toMatch(/^![0-9a-f]{8}$/);
  });

  it('tells the radio link’s changes', async () => {
    const t = await startTestHub({ SIM_BACKFILL: '0s' });
    hubs.push(t);
    const isTest = (e: SseEvent) => e.event === 'radio' && JSON.parse(e.data).lastError === 'test';
    let emitted = false;
    const { events } = await readEvents(`${t.baseUrl}/api/v1/live`, (e) => {
      if (!emitted && e.some((x) => x.event === 'hello')) {
        emitted = true;
        t.hub.bus.emit('radio.status', {
          state: 'disconnected',
          transport: 'tcp',
          simulated: true,
          lastError: 'test',
        });
      }
      return e.some(isTest);
    });
    expect(JSON.parse(events.find(isTest)!.data)).toEqual({
      state: 'disconnected',
      transport: 'tcp',
      simulated: true,
      lastError: 'test',
    });
  });

  it('ends every stream when the hub stops', async () => {
    const t = await startTestHub({ SIM_BACKFILL: '0s' });
    hubs.push(t);
    let opened!: () => void;
    const hello = new Promise<void>((resolve) => {
      opened = resolve;
    });
    // The stream ends with the hub: closed cleanly, or cut with its socket; either way, over.
    const reading = readEvents(`${t.baseUrl}/api/v1/live`, (events) => {
      if (events.some((e) => e.event === 'hello')) opened();
      return false;
    }).catch(() => ({ ended: true }));
    // Stop only once the stream is open: a stop before it would end nothing and prove nothing.
    await hello;
    await t.stop();
    expect((await reading).ended).toBe(true);
  });
});

describe('readingJson', () => {
  it('writes a reading as the weather API does: snake_case, UTC, absent metrics left out, wind direction in [0, 360)', () => {
    expect(
      readingJson({
        nodeId: '!a1b2c3d4',
        timestamp: Date.UTC(2026, 10, 21, 10, 0, 0),
        temperatureC: 21.5,
        windDirection: 359.7,
        pm10Ugm3: 0,
      }),
    ).toEqual({
      node_id: '!a1b2c3d4',
      timestamp: '2026-11-21T10:00:00.000Z',
      temperature_c: 21.5,
      wind_direction: 0,
      pm10_ugm3: 0,
    });
  });
});

/** A broadcaster behind a real HTTP server on loopback. */
async function broadcasterServer(limits: ConstructorParameters<typeof LiveBroadcaster>[0]) {
  const live = new LiveBroadcaster(limits);
  const app = liveApp(live);
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const port = (server.address() as { port: number }).port;
  return {
    live,
    url: `http://127.0.0.1:${port}/live`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections(): void }).closeAllConnections();
      }),
  };
}

describe('LiveBroadcaster limits', () => {
  it('refuses clients past the limit with 503 and Retry-After, and makes room when one leaves', async () => {
    const s = await broadcasterServer({ maxClients: 2 });
    try {
      const a = new AbortController();
      const b = new AbortController();
      await fetch(s.url, { signal: a.signal });
      await fetch(s.url, { signal: b.signal });
      await waitFor(() => s.live.clientCount === 2);
      const third = await fetch(s.url);
      expect(third.status).toBe(503);
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await third.json()) as { detail: string }).detail).toMatch(/too many live dashboards/);
      a.abort();
      await waitFor(() => s.live.clientCount === 1, 5_000, 'the closed client to be removed');
      const again = new AbortController();
      expect((await fetch(s.url, { signal: again.signal })).status).toBe(200);
      again.abort();
      b.abort();
    } finally {
      s.live.closeAll();
      await s.close();
    }
  });

  it('sends ping events while idle, so clients can tell a live stream from a dead one', async () => {
    const s = await broadcasterServer({ heartbeatMs: 20 });
    try {
      const { events } = await readEvents(s.url, (e) => e.filter((x) => x.event === 'ping').length >= 2);
      expect(events.filter((e) => e.event === 'ping').length).toBeGreaterThanOrEqual(2);
      expect(Number.isFinite(Date.parse(JSON.parse(events[0]!.data)))).toBe(true);
    } finally {
      s.live.closeAll();
      await s.close();
    }
  });

  it('cuts off a client that stops reading instead of buffering for it, while others keep receiving', async () => {
    const s = await broadcasterServer({ maxBufferedBytes: 256 * 1024, heartbeatMs: 60_000 });
    const stuck = connect(s.port, '127.0.0.1');
    try {
      await new Promise<void>((resolve) => stuck.once('connect', () => resolve()));
      stuck.write(`GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      stuck.pause();
      let closed = false;
      stuck.on('close', () => {
        closed = true;
      });
      await waitFor(() => s.live.clientCount === 1);

      const healthy = new AbortController();
      const received: number[] = [];
      const reading = readEvents(
        s.url,
        (events) => {
          received.push(events.length);
          return events.some((e) => e.event === 'last');
        },
        healthy.signal,
      );
      await waitFor(() => s.live.clientCount === 2);
      const chunk = JSON.stringify('x'.repeat(64 * 1024));
      // Loopback socket buffers take several MB before the server sees backpressure; the reading
      // client gets a moment after each chunk to keep up.
      for (let i = 0; i < 4_000 && s.live.droppedSlowClients === 0; i++) {
        s.live.broadcast('bulk', chunk);
        await new Promise((r) => setTimeout(r, 1));
      }
      expect(s.live.droppedSlowClients).toBe(1);
      expect(s.live.clientCount).toBe(1);
      s.live.broadcast('last', '{}');
      const { events } = await reading;
      expect(events.at(-1)!.event).toBe('last');
      stuck.resume();
      await waitFor(() => closed, 5_000, 'the server to end the stuck client’s response');
    } finally {
      stuck.destroy();
      s.live.closeAll();
      await s.close();
    }
  });
});
