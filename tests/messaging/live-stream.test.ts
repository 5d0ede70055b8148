/**
 * The live stream (GET /api/v1/messages/stream, Server-Sent Events) over real HTTP: a
 * fetch-streaming client with the Authorization header, and single-use tickets for EventSource.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { call, FAST_MESSAGING, type Json, knownNodes, send, subscriber } from './helpers.js';

let t: TestHub;
let alice: string;
let bob: string;
let node: string;

beforeAll(async () => {
  t = await startTestHub(FAST_MESSAGING);
  node = (await knownNodes(t, 6))[0]!;
  alice = await subscriber(t, 'alice');
  bob = await subscriber(t, 'bob');
});
afterAll(() => t?.stop());

interface SseEvent {
  event: string;
  data: Json;
}

/** Opens the stream and collects its events until `close()`. */
async function openStream(url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: SseEvent[] = [];
  let buffer = '';
  const reading = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = block.split('\n');
          const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
          const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
          if (event && data) events.push({ event, data: JSON.parse(data) });
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    res,
    events,
    async close() {
      abort.abort();
      await reading;
    },
  };
}

describe('GET /api/v1/messages/stream', () => {
  it('streams the caller’s own new messages and status changes, and conversation summaries', async () => {
    const mine = await openStream(`${t.baseUrl}/api/v1/messages/stream`, {
      authorization: `Bearer ${alice}`,
    });
    const theirs = await openStream(`${t.baseUrl}/api/v1/messages/stream`, {
      authorization: `Bearer ${bob}`,
    });
    try {
      expect(mine.res.status).toBe(200);
      expect(mine.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const sent = await send(t, alice, node!, 'live?');
      expect(sent.status).toBe(202);
      await waitFor(
        () =>
          mine.events.some(
            (e) => e.event === 'message' && e.data.id === sent.body.id && e.data.status === 'delivered',
          )
            ? true
            : undefined,
        10_000,
        'the delivered event',
      );
      const statuses = mine.events
        .filter((e) => e.event === 'message' && e.data.id === sent.body.id)
        .map((e) => e.data.status);
      expect(statuses).toEqual(['queued', 'sent', 'delivered']);
      const summary = mine.events.find((e) => e.event === 'conversation');
      expect(summary?.data).toMatchObject({ node_id: node, latest_text: 'live?', unread_count: 0 });
      expect(theirs.events).toEqual([]);
    } finally {
      await mine.close();
      await theirs.close();
    }
  });

  it('refuses a caller without a token, with a bad token, or without the role', async () => {
    const none = await call(t.baseUrl, 'GET', '/api/v1/messages/stream');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="meshhub"');
    const bad = await call(t.baseUrl, 'GET', '/api/v1/messages/stream', { token: 'a.b.c' });
    expect(bad.status).toBe(401);
    const device = await subscriber(t, 'sensor', { roles: ['device'] });
    expect((await call(t.baseUrl, 'GET', '/api/v1/messages/stream', { token: device })).status).toBe(403);
  });

  it('opens with a single-use ticket, so EventSource needs no token in the URL', async () => {
    const issued = await call(t.baseUrl, 'POST', '/api/v1/messages/stream/tickets', { token: alice });
    expect(issued.status).toBe(201);
    expect(issued.body).toEqual({ ticket: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_in: 30 });
    const url = `${t.baseUrl}/api/v1/messages/stream?ticket=${issued.body.ticket}`;
    const stream = await openStream(url);
    try {
      expect(stream.res.status).toBe(200);
      const sent = await send(t, alice, node!, 'via ticket');
      await waitFor(
        () => (stream.events.some((e) => e.data.id === sent.body.id) ? true : undefined),
        10_000,
        'an event on the ticket stream',
      );
    } finally {
      await stream.close();
    }
    const again = await call(t.baseUrl, 'GET', `/api/v1/messages/stream?ticket=${issued.body.ticket}`);
    expect(again.status).toBe(401);
    expect(again.body.detail).toMatch(/unknown, used or expired/);
    const forged = await call(t.baseUrl, 'GET', `/api/v1/messages/stream?ticket=${'A'.repeat(43)}`);
    expect(forged.status).toBe(401);
    expect((await call(t.baseUrl, 'POST', '/api/v1/messages/stream/tickets')).status).toBe(401);
  });

  it('limits open streams per user (429)', async () => {
    const streams = [];
    try {
      for (let i = 0; i < 5; i++) {
        const s = await openStream(`${t.baseUrl}/api/v1/messages/stream`, { authorization: `Bearer ${bob}` });
        streams.push(s);
        expect(s.res.status).toBe(200);
      }
      const sixth = await call(t.baseUrl, 'GET', '/api/v1/messages/stream', { token: bob });
      expect(sixth.status).toBe(429);
      expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      for (const s of streams) await s.close();
    }
    await waitFor(
      async () => {
        const s = await openStream(`${t.baseUrl}/api/v1/messages/stream`, { authorization: `Bearer ${bob}` });
        await s.close();
        return s.res.status === 200 ? true : undefined;
      },
      5_000,
      'a stream slot freed by closing',
    );
  });
});
