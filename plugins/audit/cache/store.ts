/**
 * The cache store (spec "Configuration settings": CACHE_URL, "the cache store used for caching,
 * rate limits and the job queue"): without CACHE_URL it lives in the hub's SQLite file (the
 * edge default: it survives restarts); with `CACHE_URL=redis://…` in Redis (sqlite.ts, redis.ts).
 *
 * Three faces: a key/value cache with a lifetime (ask answers 1 h, explanations 24 h), the
 * background-job records of async asks, and the counters of the rate-limit tiers.
 */

export interface CacheStore {
  get(key: string): Promise<string | undefined>;
  /** Stores `value` under `key` for `ttlMs`. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
}

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface JobRecord {
  id: string;
  /** Who created it (the only caller who may read it). */
  owner: string;
  status: JobStatus;
  /** What to run, as the job runner reads it back (JSON). */
  request: string;
  /** The answer when succeeded (JSON). */
  result?: string;
  /** Why it failed, in words a client may see. */
  error?: string;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

export interface JobStore {
  create(job: { id: string; owner: string; request: string; ttlMs: number }): Promise<void>;
  /** The job, unless unknown or expired. */
  get(id: string): Promise<JobRecord | undefined>;
  /** The oldest queued job, now marked running; undefined when none waits. */
  claimNext(): Promise<JobRecord | undefined>;
  finish(
    id: string,
    outcome: { status: 'succeeded'; result: string } | { status: 'failed'; error: string },
  ): Promise<void>;
  /** After a restart: jobs left running were interrupted, and run again. */
  requeueRunning(): Promise<number>;
  purgeExpired(): Promise<number>;
}

/** What one hit on a rate counter found: the hits in the window so far, this one included. */
export interface RateHit {
  count: number;
  /** When the window closes and the count starts again (ms UTC). */
  resetAt: number;
}

/**
 * Fixed-window counters for the rate-limit tiers (http/rate-limit.ts). `hit` is atomic — one
 * SQLite statement, one Redis Lua script — so hubs or requests racing on one key never lose a
 * count: the first hit opens a window of `windowMs`, later hits add to it until it closes, and
 * the first hit after that opens the next window at 1.
 */
export interface RateCounter {
  hit(key: string, windowMs: number): Promise<RateHit>;
}

/** Every face of one backend, and how to let it go. */
export interface CacheBackend {
  kind: 'sqlite' | 'redis';
  cache: CacheStore;
  jobs: JobStore;
  rates: RateCounter;
  /** Connects (again, after `close`); idempotent. */
  open(): Promise<void>;
  close(): Promise<void>;
}
