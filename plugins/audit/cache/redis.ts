/**
 * The cache store in Redis (`CACHE_URL=redis://…` or `rediss://…`), with ioredis. Keys live under
 * one prefix (`meshhub:audit:`, or the URL's own path as a database number, as Redis URLs do):
 * - `cache:<key>`: a string with PX expiry;
 * - `job:<id>`: a hash of the job record, expiring with the job;
 * - `jobs:queued`, `jobs:running`: lists of job ids (LMOVE moves one atomically when claimed);
 * - `rate:<tier>:<client>`: a rate-limit counter, INCR and PEXPIRE in one Lua script (atomic).
 *
 * Commands fail fast when Redis is down (no offline queue, bounded retries per request, a
 * command timeout for a Redis that hangs): callers treat a failing store as "no cache", a failing
 * job store as a 503, and a failing rate counter as a refusal (fail-closed) — never as a hang.
 */
import { Redis } from 'ioredis';
import type { CacheBackend, CacheStore, JobRecord, JobStore, RateCounter, RateHit } from './store.js';

const PREFIX = 'meshhub:audit:';

export function redisClient(url: string): Redis {
  return new Redis(url, {
    keyPrefix: PREFIX,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 3_000,
    commandTimeout: 2_000,
    // Reconnect with growing delays, capped: a Redis restart heals without a hub restart.
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
}

export class RedisCacheStore implements CacheStore {
  constructor(private readonly redis: Redis) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.redis.get(`cache:${key}`)) ?? undefined;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.redis.set(`cache:${key}`, value, 'PX', Math.max(1, Math.round(ttlMs)));
  }
}

/**
 * One hit, atomically: INCR; the first hit of a window (or a key left without expiry) gets the
 * window as its expiry; answers the count and the milliseconds until the window closes.
 */
const RATE_HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if n == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`;

type WithRateHit = Redis & {
  meshhubRateHit(key: string, windowMs: number): Promise<[number, number]>;
};

export class RedisRateCounter implements RateCounter {
  private readonly redis: WithRateHit;

  constructor(
    redis: Redis,
    private readonly now: () => number = Date.now,
  ) {
    // defineCommand sends EVALSHA, loading the script once; keys get the client's prefix.
    if (!('meshhubRateHit' in redis)) {
      redis.defineCommand('meshhubRateHit', { numberOfKeys: 1, lua: RATE_HIT_SCRIPT });
    }
    this.redis = redis as WithRateHit;
  }

  async hit(key: string, windowMs: number): Promise<RateHit> {
    const window = Math.max(1, Math.round(windowMs));
    const [count, ttl] = await this.redis.meshhubRateHit(`rate:${key}`, window);
    return { count: Number(count), resetAt: this.now() + Number(ttl) };
  }
}

export class RedisJobStore implements JobStore {
  constructor(
    private readonly redis: Redis,
    private readonly now: () => number = Date.now,
  ) {}

  async create(job: { id: string; owner: string; request: string; ttlMs: number }): Promise<void> {
    const now = this.now();
    await this.redis
      .multi()
      .hset(`job:${job.id}`, {
        id: job.id,
        owner: job.owner,
        status: 'queued',
        request: job.request,
        createdAt: String(now),
        updatedAt: String(now),
        expiresAt: String(now + job.ttlMs),
      })
      .pexpire(`job:${job.id}`, job.ttlMs)
      .lpush('jobs:queued', job.id)
      .exec();
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const h = await this.redis.hgetall(`job:${id}`);
    if (!h.id || !h.owner || !h.status || h.request === undefined) return undefined;
    const expiresAt = Number(h.expiresAt);
    if (expiresAt <= this.now()) return undefined;
    return {
      id: h.id,
      owner: h.owner,
      status: h.status as JobRecord['status'],
      request: h.request,
      ...(h.result !== undefined ? { result: h.result } : {}),
      ...(h.error !== undefined ? { error: h.error } : {}),
      createdAt: Number(h.createdAt),
      updatedAt: Number(h.updatedAt),
      expiresAt,
    };
  }

  async claimNext(): Promise<JobRecord | undefined> {
    for (;;) {
      const id = await this.redis.lmove('jobs:queued', 'jobs:running', 'RIGHT', 'LEFT');
      if (!id) return undefined;
      const job = await this.get(id);
      if (!job) {
        // Expired while it waited: nothing to run.
        await this.redis.lrem('jobs:running', 0, id);
        continue;
      }
      const now = this.now();
      await this.redis.hset(`job:${id}`, { status: 'running', updatedAt: String(now) });
      return { ...job, status: 'running', updatedAt: now };
    }
  }

  async finish(
    id: string,
    outcome: { status: 'succeeded'; result: string } | { status: 'failed'; error: string },
  ): Promise<void> {
    const fields: Record<string, string> = { status: outcome.status, updatedAt: String(this.now()) };
    if (outcome.status === 'succeeded') fields.result = outcome.result;
    else fields.error = outcome.error;
    // Only a job that still exists is updated (HSET on an expired key would make a record without expiry).
    if (await this.redis.exists(`job:${id}`)) await this.redis.hset(`job:${id}`, fields);
    await this.redis.lrem('jobs:running', 0, id);
  }

  async requeueRunning(): Promise<number> {
    let moved = 0;
    for (;;) {
      const id = await this.redis.lmove('jobs:running', 'jobs:queued', 'RIGHT', 'RIGHT');
      if (!id) return moved;
      if (await this.redis.exists(`job:${id}`)) {
        await this.redis.hset(`job:${id}`, { status: 'queued', updatedAt: String(this.now()) });
      }
      moved++;
    }
  }

  /** Redis expires keys itself; only ids of expired jobs left in the lists need pruning (on claim). */
  async purgeExpired(): Promise<number> {
    return 0;
  }
}

export async function redisBackend(url: string): Promise<CacheBackend> {
  const redis = redisClient(url);
  const backend: CacheBackend = {
    kind: 'redis',
    cache: new RedisCacheStore(redis),
    jobs: new RedisJobStore(redis),
    rates: new RedisRateCounter(redis),
    async open() {
      if (redis.status === 'wait' || redis.status === 'end') await redis.connect();
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
  // Errors surface on the commands that fail (callers decide); the event itself needs a listener.
  redis.on('error', () => {});
  try {
    await backend.open();
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  return backend;
}
