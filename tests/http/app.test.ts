import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp } from '../../src/http/app.js';
import { buildHealthReport, type HealthReport } from '../../src/http/health.js';
import { ProblemError, validationProblem } from '../../src/http/problem.js';
import type { ActorStatus } from '../../src/kernel/supervisor.js';
import { HubMetrics } from '../../src/metrics.js';

const actor = (name: string, over: Partial<ActorStatus> = {}): ActorStatus => ({
  name,
  state: 'running',
  required: true,
  ready: true,
  restarts: 0,
  detail: {},
  ...over,
});
const radioUp = { state: 'connected', transport: 'tcp', simulated: true } as const;

function appWith(routes: Hono, health?: () => HealthReport) {
  return createHttpApp({
    log: pino({ level: 'silent' }),
    metrics: new HubMetrics({ defaultMetrics: false }),
    version: '1.2.3',
    health:
      health ??
      (() => buildHealthReport({ version: '1.2.3', startedAt: 0, radio: radioUp, actors: [actor('store')] })),
    routes: [{ path: '/api/v1/test', app: routes }],
  });
}

describe('HTTP app', () => {
  const routes = new Hono()
    .get('/problem', () => {
      throw new ProblemError(429, 'slow down', { headers: { 'retry-after': '7' } });
    })
    .get('/invalid', () => {
      const parsed = z.object({ limit: z.number().int(), node_id: z.string() }).safeParse({ limit: 1.5 });
      throw validationProblem(parsed.error!);
    })
    .get('/boom', () => {
      throw new Error('secret internal detail: password=hunter2');
    })
    .get('/http-exception', () => {
      throw new HTTPException(413, { message: 'body too large' });
    })
    .post('/json', async (c) => c.json(await c.req.json()));
  const app = appWith(routes);

  it('turns a ProblemError into problem+json with its status, headers and the request id', async () => {
    const res = await app.request('/api/v1/test/problem', { headers: { 'x-request-id': 'req-1' } });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('retry-after')).toBe('7');
    expect(res.headers.get('x-request-id')).toBe('req-1');
    expect(await res.json()).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'slow down',
      request_id: 'req-1',
    });
  });

  it('names every invalid field of a zod failure', async () => {
    const res = await app.request('/api/v1/test/invalid');
    const body = (await res.json()) as {
      errors: Array<{ field: string }>;
      detail: string;
      status: string;
      actors: Array<Record<string, unknown>>;
    };
    expect(res.status).toBe(400);
    expect(body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['limit', 'node_id']);
    expect(body.detail).toBe('invalid limit, node_id');
  });

  it('answers an unexpected error with a generic 500 that leaks nothing', async () => {
    const res = await app.request('/api/v1/test/boom');
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(text)).toMatchObject({
      status: 500,
      detail: 'the server could not complete the request',
    });
  });

  it('keeps the status of an HTTPException as a problem body', async () => {
    const res = await app.request('/api/v1/test/http-exception');
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ status: 413, detail: 'body too large' });
  });

  it('answers malformed JSON with a 400 problem, not a 500', async () => {
    const res = await app.request('/api/v1/test/json', {
      method: 'POST',
      body: '{"a":',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await app.request('/nowhere');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ status: 404, detail: 'no route for GET /nowhere' });
  });

  it('serves the version', async () => {
    expect(await (await app.request('/api/version')).json()).toEqual({ version: '1.2.3' });
  });

  it('records latency by route pattern, not raw path', async () => {
    const metrics = new HubMetrics({ defaultMetrics: false });
    const a = createHttpApp({
      log: pino({ level: 'silent' }),
      metrics,
      version: '1',
      health: () => buildHealthReport({ version: '1', startedAt: 0, radio: radioUp, actors: [] }),
      routes: [{ path: '/api/v1/things', app: new Hono().get('/:id', (c) => c.text(c.req.param('id'))) }],
    });
    await a.request('/api/v1/things/one');
    await a.request('/api/v1/things/two');
    const text = (await metrics.render()).body;
    expect(text).toMatch(
      /meshhub_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/things\/:id",status="200"\} 2/,
    );
  });
});

describe('health', () => {
  it('is ok when everything runs and the radio is connected', () => {
    const h = buildHealthReport({
      version: '1',
      startedAt: 0,
      now: 5_000,
      radio: radioUp,
      actors: [actor('store'), actor('radio')],
    });
    expect(h).toMatchObject({ status: 'ok', uptime_s: 5 });
  });

  it('is degraded when the radio link is down or an optional actor is disabled', () => {
    const down = { ...radioUp, state: 'connecting' } as const;
    expect(
      buildHealthReport({ version: '1', startedAt: 0, radio: down, actors: [actor('store')] }).status,
    ).toBe('degraded');
    const plugin = actor('plugin', { required: false, state: 'disabled', ready: false });
    expect(
      buildHealthReport({ version: '1', startedAt: 0, radio: radioUp, actors: [actor('store'), plugin] })
        .status,
    ).toBe('degraded');
  });

  it('is not degraded by a missing radio when RADIO=none', () => {
    const none = { state: 'disconnected', transport: 'none', simulated: false } as const;
    expect(
      buildHealthReport({ version: '1', startedAt: 0, radio: none, actors: [actor('store')] }).status,
    ).toBe('ok');
  });

  it('answers 503 when a required actor is down', async () => {
    const app = appWith(new Hono(), () =>
      buildHealthReport({
        version: '1',
        startedAt: 0,
        radio: radioUp,
        actors: [actor('store', { state: 'failed', ready: false, lastError: 'disk full' })],
      }),
    );
    const res = await app.request('/health');
    expect(res.status).toBe(503);
    const body = (await res.json()) as {
      errors: Array<{ field: string }>;
      detail: string;
      status: string;
      actors: Array<Record<string, unknown>>;
    };
    expect(body.status).toBe('down');
    expect(body.actors[0]).toMatchObject({ name: 'store', state: 'failed', last_error: 'disk full' });
  });
});
