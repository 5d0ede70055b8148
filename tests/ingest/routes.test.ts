/**
 * `POST /api/v1/ingest/readings` on the real hub: bearer tokens with the ingest role, 202 with
 * counts per reason once committed, 422/400/413/415 problem details that change nothing, the
 * 10 000-reading batch, and a property: no batch of arbitrary JSON gets a 5xx or loses a good
 * reading.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalIssuer, latestOf, localIssuer, type MqttTestHub, startMqttHub } from '../mqtt/helpers.js';

let t: MqttTestHub;
let issuer: LocalIssuer;
let ingestToken: string;

beforeAll(async () => {
  issuer = await localIssuer();
  t = await startMqttHub({}, { tokenVerifier: issuer.verifier });
  ingestToken = await issuer.token(['ingest']);
});
afterAll(() => t.stop());

async function post(
  body: unknown,
  options: { token?: string | null; type?: string; raw?: string } = {},
  // biome-ignore lint/suspicious/noExplicitAny: response bodies of several shapes
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { 'content-type': options.type ?? 'application/json' };
  const token = options.token === undefined ? ingestToken : options.token;
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${t.baseUrl}/api/v1/ingest/readings`, {
    method: 'POST',
    headers,
    body: options.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const count = (nodeId: string) =>
  (
    t.hub.store.db.prepare('SELECT count(*) AS n FROM readings WHERE node_id = ?').get(nodeId) as {
      n: number;
    }
  ).n;

describe('authentication', () => {
  it('wants a bearer token (401 with WWW-Authenticate)', async () => {
    const r = await post({ node_id: 'a', temperature_c: 1 }, { token: null });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer realm="meshhub"/);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(count('a')).toBe(0);
  });

  it('refuses a bad or expired token (401 invalid_token)', async () => {
    const expired = await issuer.token(['ingest'], { expiresIn: Math.floor(Date.now() / 1000) - 120 });
    for (const token of ['not.a.token', expired]) {
      const r = await post({ node_id: 'a', temperature_c: 1 }, { token });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
  });

  it('refuses a token without the ingest role (403), and takes one with admin', async () => {
    const r = await post({ node_id: 'a', temperature_c: 1 }, { token: await issuer.token(['integration']) });
    expect(r.status).toBe(403);
    expect(r.body.detail).toBe('the token does not carry the ingest role');
    const admin = await post({ node_id: 'adm', temperature_c: 1 }, { token: await issuer.token(['admin']) });
    expect(admin.status).toBe(202);
  });
});

describe('accepting readings', () => {
  it('answers 202 once a single reading is committed; it shows in /weather/latest', async () => {
    const r = await post({
      node_id: 'greenhouse',
      timestamp: '2026-01-02T03:04:05+01:00',
      temperature_c: 24.5,
      humidity_percent: 70,
    });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ accepted: 1, rejected: 0, rejected_by_reason: {}, errors: [] });
    expect(count('greenhouse')).toBe(1);
    expect(await latestOf(t.baseUrl, 'greenhouse')).toEqual({
      node_id: 'greenhouse',
      timestamp: '2026-01-02T02:04:05.000Z',
      temperature_c: 24.5,
      humidity_percent: 70,
    });
  });

  it('stores the good readings of a batch and lists each rejected one with its reason', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const r = await post([
      { node_id: 'batch', timestamp: '2026-01-01T00:00:00Z', temperature_c: 10 },
      { node_id: 'batch', timestamp: '2026-01-01T00:01:00Z', temperature_c: 500 },
      { node_id: 'batch', timestamp: '2026-01-01T00:02:00Z', temperature_c: '11' },
      { node_id: 'batch', timestamp: future, temperature_c: 12 },
      { node_id: 'batch', timestamp: '2026-01-01T00:04:00Z', temprature_c: 13 },
      { timestamp: '2026-01-01T00:05:00Z', temperature_c: 14 },
      { node_id: 'batch', timestamp: '2026-01-01T00:06:00Z', wind_direction: 12.5 },
      { node_id: 'batch', timestamp: '2026-01-01T00:07:00Z', pressure_pa: 1013 },
      { node_id: 'bad id/with slash', temperature_c: 15 },
      'not an object',
      { node_id: 'batch', timestamp: '2026-01-01T00:10:00Z' },
      { node_id: 'batch', timestamp: '2026-01-01T00:11:00Z', humidity_percent: 55 },
    ]);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({
      accepted: 2,
      rejected: 10,
      rejected_by_reason: {
        out_of_range: 2,
        not_a_number: 1,
        timestamp_in_future: 1,
        unknown_field: 1,
        missing_node_id: 1,
        not_an_integer: 1,
        invalid_node_id: 1,
        not_an_object: 1,
        no_metrics: 1,
      },
    });
    expect(r.body.errors).toContainEqual({
      field: '[1].temperature_c',
      reason: 'out_of_range',
      index: 1,
      message: 'temperature_c must be between -100 and 100 °C',
    });
    expect(r.body.errors).toContainEqual(
      expect.objectContaining({
        field: '[7].pressure_pa',
        message: expect.stringContaining('hPa must be multiplied by 100'),
      }),
    );
    expect(r.body.errors).toContainEqual(
      expect.objectContaining({ field: '[4].temprature_c', message: 'unknown field "temprature_c"' }),
    );
    expect(count('batch')).toBe(2);
  });

  it('takes a batch of 10 000 readings', async () => {
    const start = Date.UTC(2026, 0, 10);
    const batch = Array.from({ length: 10_000 }, (_, i) => ({
      node_id: `bulk-${i % 50}`,
      timestamp: new Date(start + i * 1000).toISOString(),
      temperature_c: (i % 400) / 10,
    }));
    const r = await post(batch);
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ accepted: 10_000, rejected: 0 });
    const stored = t.hub.store.db
      .prepare("SELECT count(*) AS n FROM readings WHERE node_id LIKE 'bulk-%'")
      .get();
    expect(stored).toEqual({ n: 10_000 });
  });
});

describe('refusing a request (nothing is stored)', () => {
  it('422 when every reading is rejected, naming each', async () => {
    const r = await post([
      { node_id: 'none', temperature_c: 'hot' },
      { node_id: 'none', humidity_percent: 101 },
    ]);
    expect(r.status).toBe(422);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(r.body).toMatchObject({
      status: 422,
      title: 'Unprocessable Content',
      detail: 'all 2 readings were rejected',
      accepted: 0,
      rejected: 2,
      rejected_by_reason: { not_a_number: 1, out_of_range: 1 },
      errors: [
        {
          field: '[0].temperature_c',
          reason: 'not_a_number',
          message: 'temperature_c must be a number in °C, got a string',
        },
        {
          field: '[1].humidity_percent',
          reason: 'out_of_range',
          message: 'humidity_percent must be between 0 and 100 %',
        },
      ],
    });
    expect(r.body.request_id).toEqual(expect.any(String));
    expect(count('none')).toBe(0);
  });

  it('400 for malformed JSON and for an empty batch', async () => {
    const bad = await post(undefined, { raw: '[{"node_id": "x",' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toBe('the request body is not valid JSON');
    const empty = await post([]);
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toBe('the batch is empty');
  });

  it('413 for more than 10 000 readings', async () => {
    const r = await post(Array.from({ length: 10_001 }, () => ({ node_id: 'big', temperature_c: 1 })));
    expect(r.status).toBe(413);
    expect(r.body.detail).toBe('at most 10000 readings per request');
    expect(count('big')).toBe(0);
  });

  it('415 for a body that is not JSON', async () => {
    const r = await post(undefined, {
      raw: 'node_id=x&temperature_c=1',
      type: 'application/x-www-form-urlencoded',
    });
    expect(r.status).toBe(415);
  });
});

describe('property: good readings survive any garbage beside them', () => {
  const metric = fc.oneof(
    fc.double(),
    fc.integer({ min: -1_000, max: 200_000 }),
    fc.string({ maxLength: 5 }),
    fc.constant(null),
    fc.boolean(),
  );
  const garbage = fc.oneof(
    fc.anything(),
    fc.record(
      {
        node_id: fc.oneof(fc.string({ maxLength: 70 }), fc.integer()),
        timestamp: fc.oneof(fc.string({ maxLength: 30 }), fc.integer()),
        temperature_c: metric,
        humidity_percent: metric,
        wind_direction: metric,
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    ),
  );
  const good = fc.record({
    temperature_c: fc.double({ min: -40, max: 50, noNaN: true }),
    humidity_percent: fc.integer({ min: 0, max: 100 }),
  });

  it('never answers 5xx, counts every item, and stores every good reading', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            good.map((g) => ({ good: g })),
            garbage.map((g) => ({ garbage: g })),
          ),
          {
            minLength: 1,
            maxLength: 25,
          },
        ),
        async (items) => {
          run++;
          const nodeId = `prop-${run}`;
          let goodCount = 0;
          const batch = items.map((item, i) => {
            if (!('good' in item)) return item.garbage;
            goodCount++;
            return {
              node_id: nodeId,
              timestamp: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
              ...item.good,
            };
          });
          const r = await post(batch);
          expect(r.status).toBeLessThan(500);
          expect([202, 422]).toContain(r.status);
          expect((r.status === 202 ? r.body.accepted : 0) + r.body.rejected).toBe(items.length);
          if (goodCount > 0) expect(r.status).toBe(202);
          expect(count(nodeId)).toBe(goodCount);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('when the store cannot commit', () => {
  it('answers 503 with Retry-After, as problem details', async () => {
    const { Hono } = await import('hono');
    const { ingestRoutes } = await import('../../src/ingest/routes.js');
    const { createErrorHandler } = await import('../../src/http/error-handler.js');
    const app = new Hono();
    app.route(
      '/api/v1/ingest',
      ingestRoutes({
        sink: { submit: () => Promise.reject(new Error('SQLITE_FULL')) },
        verifier: issuer.verifier,
      }),
    );
    app.onError(createErrorHandler());
    const res = await app.request('/api/v1/ingest/readings', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ingestToken}` },
      body: JSON.stringify({ node_id: 'x', temperature_c: 1 }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(await res.json()).toMatchObject({
      status: 503,
      detail: 'the readings could not be stored; send them again later',
    });
  });

  it('413 for a chunked body (no Content-Length) once it passes 8 MiB', async () => {
    const chunk = new TextEncoder().encode('1,'.repeat(512 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 10) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${t.baseUrl}/api/v1/ingest/readings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ingestToken}` },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    // The rest of the body is never read, so the connection is not offered for another request.
    expect(res.headers.get('connection')).toBe('close');
  });

  it('413 for a body over 8 MiB, before parsing it', async () => {
    const r = await post(undefined, { raw: `[${'1,'.repeat(4_500_000)}1]` });
    expect(r.status).toBe(413);
    expect(r.body.detail).toMatch(/larger than 8388608 bytes/);
  });
});

describe('rememberVerifiedTokens', () => {
  it('verifies a token once until its exp, then again; failures are not remembered', async () => {
    const { rememberVerifiedTokens } = await import('../../src/ingest/routes.js');
    let calls = 0;
    let clock = 1_000_000;
    const inner = {
      async verify(token: string) {
        calls++;
        if (token === 'bad') throw new Error('bad');
        return { subject: 's', username: 's', roles: ['ingest'], issuer: 'i', claims: { exp: 1_000 + 60 } };
      },
    };
    const cached = rememberVerifiedTokens(inner, 2, () => clock);
    await cached.verify('good');
    await cached.verify('good');
    expect(calls).toBe(1);
    clock = 1_060_001;
    await cached.verify('good');
    expect(calls).toBe(2);
    await expect(cached.verify('bad')).rejects.toThrow('bad');
    await expect(cached.verify('bad')).rejects.toThrow('bad');
    expect(calls).toBe(4);
  });
});
