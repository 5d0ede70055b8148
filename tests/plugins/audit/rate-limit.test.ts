/**
 * The rate-limit tiers counting in the cache store (issue 13: "CACHE_URL … caches, rate-limit
 * tiers and the job queue; without it they live in SQLite — they survive restarts — with
 * CACHE_URL=redis://… in Redis; the rate limiter stays fail-closed when the store fails").
 *
 * - the counter contract (RateCounter.hit) on SQLite and on a real redis-server: counts per key,
 *   a closed window starts again, concurrent hits through two connections never lose a count;
 * - through the plugin's real HTTP routes: a limit survives a hub restart on the SQLite file, and
 *   is shared through Redis; 429 carries Retry-After counting down to the window's end;
 * - fail-closed: a failing store (a broken SQLite table, a stopped Redis) refuses limited routes
 *   with a 503 problem and Retry-After — never a 500, never a pass — and exempt routes still answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { standaloneApp, standaloneModuleHost } from '../../../hub/module-host.js';
import { redisBackend } from '../../../plugins/audit/cache/redis.js';
import { sqliteBackend } from '../../../plugins/audit/cache/sqlite.js';
import type { CacheBackend } from '../../../plugins/audit/cache/store.js';
import { RateLimiter } from '../../../plugins/audit/http/rate-limit.js';
import { auditModule } from '../../../plugins/audit/index.js';
import { auditSettings } from '../../../plugins/audit/settings.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import type { Actor } from '../../../src/kernel/actor.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { skipWithoutRedis, startRedis, type TestRedis } from '../../helpers/redis.js';
import { QUIET_ENV, silent } from './helpers.js';

const skipRedis = skipWithoutRedis();
let redis: TestRedis | undefined;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-rate-'));
  if (!skipRedis) redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The audit plugin as the hub builds it, over the SQLite file at `path` (reopened by a restart). */
async function hubOn(path: string, env: Record<string, string> = {}) {
  const db = openDatabase(path);
  const { host, mounts, metrics, scheduler } = await standaloneModuleHost({
    db,
    dataDir: dir,
    log: silent,
    version: '9.9.9',
  });
  const input = Object.fromEntries(
    Object.entries({ ...QUIET_ENV, ...env }).filter(([k, v]) => k in auditSettings.shape && v.trim() !== ''),
  );
  const actors: Actor[] = await host.create(auditModule, auditSettings.parse(input), { plugin: true });
  for (const actor of actors) await actor.start();
  await scheduler.start();
  const app: Hono = standaloneApp(mounts, metrics, '9.9.9');
  return {
    db,
    /** A request from `client` (the address the limiter counts by). */
    async get(path: string, client = '192.0.2.10') {
      const res = await app.request(path, {}, { incoming: { socket: { remoteAddress: client } } });
      const text = await res.text();
      // biome-ignore lint/suspicious/noExplicitAny: problem and list bodies
      const body: any = text ? JSON.parse(text) : undefined;
      return { status: res.status, headers: res.headers, body };
    },
    async close() {
      await scheduler.stop();
      for (const actor of actors.slice().reverse()) await actor.stop();
      closeDatabase(db);
    },
  };
}

const openDbs: Database[] = [];
afterAll(() => {
  for (const db of openDbs) closeDatabase(db);
});

const stores: Array<[string, () => Promise<CacheBackend>, boolean]> = [
  [
    'SQLite',
    async () => {
      const db = openDatabase(join(dir, 'counters.sqlite'));
      openDbs.push(db);
      return sqliteBackend(() => new AuditStore(() => db).repos().db);
    },
    false,
  ],
  ['Redis', () => redisBackend(redis!.url), skipRedis],
];

describe.each(stores)('the rate counter in %s', (_name, open, skip) => {
  let a: CacheBackend;
  let b: CacheBackend;
  beforeAll(async () => {
    if (skip) return;
    // Two connections to one store: two hubs, or a hub before and after a restart.
    [a, b] = [await open(), await open()];
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  const key = (s: string) => `${s}:${Math.random().toString(36).slice(2)}`;

  it.skipIf(skip)('counts hits per key within the window, and says when it closes', async () => {
    const k = key('default');
    const before = Date.now();
    const first = await a.rates.hit(k, 60_000);
    expect(first.count).toBe(1);
    expect(first.resetAt).toBeGreaterThan(before);
    expect(first.resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect((await a.rates.hit(k, 60_000)).count).toBe(2);
    expect((await b.rates.hit(k, 60_000)).count).toBe(3);
    // The window stays the first hit's: later hits do not push its end out.
    expect((await a.rates.hit(k, 60_000)).resetAt).toBeLessThanOrEqual(first.resetAt + 5);
    expect((await a.rates.hit(key('other'), 60_000)).count).toBe(1);
  });

  it.skipIf(skip)('starts again at 1 once the window has closed', async () => {
    const k = key('ask');
    expect((await a.rates.hit(k, 50)).count).toBe(1);
    expect((await a.rates.hit(k, 50)).count).toBe(2);
    await new Promise((r) => setTimeout(r, 120));
    expect((await a.rates.hit(k, 50)).count).toBe(1);
  });

  it.skipIf(skip)('never loses a count when hits race through two connections', async () => {
    const k = key('write');
    const hits = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).rates.hit(k, 60_000)),
    );
    expect(hits.map((h) => h.count).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
  });
});

describe('the limiter in front of the audit routes', () => {
  it('keeps counting across a hub restart on the SQLite file (429 with Retry-After)', async () => {
    const path = join(dir, 'restart.sqlite');
    let hub = await hubOn(path, { RATE_LIMIT_DEFAULT: '2/1h' });
    expect((await hub.get('/api/events')).status).toBe(200);
    expect((await hub.get('/api/events')).status).toBe(200);
    const limited = await hub.get('/api/events');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(limited.body).toMatchObject({ status: 429, tier: 'default' });
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(3_500);
    expect(retry).toBeLessThanOrEqual(3_600);
    // Another client has its own count.
    expect((await hub.get('/api/events', '192.0.2.99')).status).toBe(200);
    await hub.close();

    hub = await hubOn(path, { RATE_LIMIT_DEFAULT: '2/1h' });
    try {
      const after = await hub.get('/api/events');
      expect(after.status).toBe(429);
      expect(Number(after.headers.get('retry-after'))).toBeLessThanOrEqual(retry);
      expect((await hub.get('/api/events', '192.0.2.99')).status).toBe(200);
      expect((await hub.get('/api/events', '192.0.2.99')).status).toBe(429);
    } finally {
      await hub.close();
    }
  });

  it('fails closed when the SQLite store fails: 503 problem with Retry-After, exempt routes answer', async () => {
    const hub = await hubOn(join(dir, 'broken.sqlite'), { RATE_LIMIT_DEFAULT: '100/1m' });
    try {
      expect((await hub.get('/api/events')).status).toBe(200);
      hub.db.exec('ALTER TABLE audit_cache RENAME TO audit_cache_away');
      for (const path of ['/api/events', '/api/filter-options', '/api/events/1']) {
        const refused = await hub.get(path);
        expect(refused.status, path).toBe(503);
        expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(refused.headers.get('retry-after')).toBe('5');
        expect(refused.body).toMatchObject({ status: 503, tier: 'default' });
        expect(refused.body.detail).toMatch(/rate limiter .* cache store failed/);
      }
      expect((await hub.get('/api/config/features')).status).toBe(200);
      // The store is back: so are the routes.
      hub.db.exec('ALTER TABLE audit_cache_away RENAME TO audit_cache');
      expect((await hub.get('/api/events')).status).toBe(200);
    } finally {
      await hub.close();
    }
  });

  it('refuses, never passes, whatever the counter throws or answers', async () => {
    const rules = {
      fetch: { limit: 1, windowMs: 60_000 },
      ask: { limit: 1, windowMs: 60_000 },
      write: { limit: 1, windowMs: 60_000 },
      default: { limit: 5, windowMs: 60_000 },
    };
    const errors: string[] = [];
    const failing = new RateLimiter(
      rules,
      { hit: async () => Promise.reject(new Error('disk I/O error')) },
      { onStoreError: (e) => errors.push(e.message) },
    );
    await expect(failing.take('default', 'x')).rejects.toThrow(/disk I\/O error/);
    await expect(failing.take('default', 'x')).rejects.toThrow();
    expect(errors).toEqual(['disk I/O error']); // told once, not once per request
    // A nonsense count is a refusal too.
    const garbled = new RateLimiter(rules, { hit: async () => ({ count: Number.NaN, resetAt: 0 }) });
    expect((await garbled.take('default', 'x')).ok).toBe(false);
  });
});

describe.skipIf(skipRedis)('the limiter with CACHE_URL=redis://…', () => {
  it('shares one count between hubs on one Redis, and fails closed when Redis stops', async () => {
    // A Redis of its own: this test stops it.
    const own = await startRedis();
    const env = { CACHE_URL: own.url, RATE_LIMIT_DEFAULT: '2/1h' };
    const first = await hubOn(join(dir, 'redis-a.sqlite'), env);
    const second = await hubOn(join(dir, 'redis-b.sqlite'), env);
    try {
      expect((await first.get('/api/events')).status).toBe(200);
      expect((await second.get('/api/events')).status).toBe(200);
      const limited = await first.get('/api/events');
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(3_500);
      expect((await second.get('/api/events')).status).toBe(429);

      await own.stop();
      for (const hub of [first, second]) {
        const refused = await hub.get('/api/events', '192.0.2.77');
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('5');
        expect(refused.body).toMatchObject({ status: 503, tier: 'default' });
      }
      expect((await first.get('/api/config/auth')).status).toBe(200);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
