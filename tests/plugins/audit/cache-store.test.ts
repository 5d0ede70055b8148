/**
 * The cache store both ways (CACHE_URL): the hub's SQLite file by default, a real Redis
 * (Debian's redis-server on a loopback port) with `CACHE_URL=redis://…` — the same contract for
 * both, and an ask answered from the Redis cache through the HTTP API.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisBackend } from '../../../plugins/audit/cache/redis.js';
import { sqliteBackend } from '../../../plugins/audit/cache/sqlite.js';
import type { CacheBackend } from '../../../plugins/audit/cache/store.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { startFakeChatCompletions } from '../../fakes/llm/fake-chat-completions.js';
import { skipWithoutRedis, startRedis, type TestRedis } from '../../helpers/redis.js';
import { auditApp, jsonInit, llmEnv, seed } from './helpers.js';

const skipRedis = skipWithoutRedis();
let redis: TestRedis | undefined;
let dir: string;
let db: Database;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-cache-'));
  db = openDatabase(join(dir, 'hub.sqlite'));
  if (!skipRedis) redis = await startRedis();
});
afterAll(async () => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
  await redis?.stop();
});

const backends: Array<[string, () => Promise<CacheBackend>, boolean]> = [
  ['SQLite', async () => sqliteBackend(() => new AuditStore(() => db).repos().db), false],
  ['Redis', () => redisBackend(redis!.url), skipRedis],
];

describe.each(backends)('the %s store', (_name, open, skip) => {
  let backend: CacheBackend;
  beforeAll(async () => {
    if (!skip) backend = await open();
  });
  afterAll(async () => backend?.close());
  const id = (s: string) => `${s}-${Math.random().toString(36).slice(2)}`;

  it.skipIf(skip)('keeps a value until it expires', async () => {
    const key = id('k');
    expect(await backend.cache.get(key)).toBeUndefined();
    await backend.cache.set(key, 'v1', 60_000);
    expect(await backend.cache.get(key)).toBe('v1');
    await backend.cache.set(key, 'v2', 60_000);
    expect(await backend.cache.get(key)).toBe('v2');
    await backend.cache.set(key, 'gone', 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(await backend.cache.get(key)).toBeUndefined();
  });

  it.skipIf(skip)('queues, claims in order, finishes, and requeues interrupted jobs', async () => {
    const [a, b] = [id('a'), id('b')];
    await backend.jobs.create({ id: a, owner: 'o', request: '{"n":1}', ttlMs: 60_000 });
    await backend.jobs.create({ id: b, owner: 'o', request: '{"n":2}', ttlMs: 60_000 });
    expect(await backend.jobs.get(a)).toMatchObject({
      id: a,
      owner: 'o',
      status: 'queued',
      request: '{"n":1}',
    });
    const first = await backend.jobs.claimNext();
    expect(first).toMatchObject({ id: a, status: 'running' });
    expect((await backend.jobs.get(a))?.status).toBe('running');
    expect(await backend.jobs.requeueRunning()).toBe(1);
    expect((await backend.jobs.get(a))?.status).toBe('queued');
    const claimed = [await backend.jobs.claimNext(), await backend.jobs.claimNext()].map((j) => j?.id).sort();
    expect(claimed).toEqual([a, b].sort());
    expect(await backend.jobs.claimNext()).toBeUndefined();
    await backend.jobs.finish(a, { status: 'succeeded', result: '{"answer":"x"}' });
    await backend.jobs.finish(b, { status: 'failed', error: 'bad' });
    expect(await backend.jobs.get(a)).toMatchObject({ status: 'succeeded', result: '{"answer":"x"}' });
    expect(await backend.jobs.get(b)).toMatchObject({ status: 'failed', error: 'bad' });
    expect(await backend.jobs.get(id('unknown'))).toBeUndefined();
  });

  it.skipIf(skip)('forgets an expired job', async () => {
    const j = id('short');
    await backend.jobs.create({ id: j, owner: 'o', request: '{}', ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    expect(await backend.jobs.get(j)).toBeUndefined();
  });
});

describe.skipIf(skipRedis)('asks with CACHE_URL=redis://…', () => {
  it('answers a repeated question from Redis, and reports the store', async () => {
    const fake = await startFakeChatCompletions();
    const t = await auditApp({
      ...llmEnv(fake.baseUrl, 'm'),
      CACHE_URL: redis!.url,
      RATE_LIMIT_ASK: '1000/1m',
    });
    try {
      seed(t.repos, [{ source: 'directory', at: Date.now() - 60_000, operation: 'Add user' }]);
      const ask = () => t.json('/api/ask', jsonInit('POST', { question: 'new users in the last day?' }));
      expect((await ask()).body.cached).toBe(false);
      expect((await ask()).body.cached).toBe(true);
      expect(fake.requests).toHaveLength(1);
      expect(t.db.prepare('SELECT count(*) FROM audit_cache').pluck().get()).toBe(0);
      expect((await t.json('/api/config/features')).body.ai.cache_store).toBe('redis');
      const job = await t.json('/api/ask', jsonInit('POST', { question: 'new users in the last day?', async: true }));
      expect(job.status).toBe(202);
      let state = '';
      for (let i = 0; i < 200 && state !== 'succeeded'; i++) {
        state = (await t.json(`/api/jobs/${job.body.job_id}`)).body.status;
        if (state !== 'succeeded') await new Promise((r) => setTimeout(r, 10));
      }
      expect(state).toBe('succeeded');
    } finally {
      await t.close();
      await fake.stop();
    }
  });

  it('refuses to start when CACHE_URL names no reachable Redis', async () => {
    await expect(auditApp({ AI_FEATURES_ENABLED: 'true', CACHE_URL: 'redis://127.0.0.1:1' })).rejects.toThrow(
      'CACHE_URL: Redis at 127.0.0.1:1 is not reachable',
    );
  });
});
