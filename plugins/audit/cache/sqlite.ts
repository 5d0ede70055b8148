/**
 * The cache store in the hub's SQLite file (no CACHE_URL): the audit plugin's `audit_cache` and
 * `audit_jobs` tables (migration 2). Statements are small and indexed; expired rows are ignored
 * on read and deleted by `purgeExpired`, which the plugin's maintenance schedule runs.
 *
 * Rate-limit counters are rows of `audit_cache` too (keys `rate:…`, the count as the value, the
 * window's end as `expires_at`): one upsert counts a hit and answers the count, atomically.
 */
import type { Database } from '../../../src/store/database.js';
import type { CacheBackend, CacheStore, JobRecord, JobStore, RateCounter, RateHit } from './store.js';

type JobRow = {
  id: string;
  owner: string;
  status: JobRecord['status'];
  request: string;
  result: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number;
};

const toJob = (r: JobRow): JobRecord => ({
  id: r.id,
  owner: r.owner,
  status: r.status,
  request: r.request,
  ...(r.result !== null ? { result: r.result } : {}),
  ...(r.error !== null ? { error: r.error } : {}),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  expiresAt: r.expires_at,
});

/** `prepare`'s statements for the current connection, prepared again only when it changes. */
function preparedPer<T>(db: () => Database, prepare: (db: Database) => T): () => T {
  let prepared: { db: Database; statements: T } | undefined;
  return () => {
    const current = db();
    if (prepared?.db !== current) prepared = { db: current, statements: prepare(current) };
    return prepared.statements;
  };
}

export class SqliteCacheStore implements CacheStore {
  /** Prepared once per connection: a cache hit should cost a lookup, not a statement compile. */
  private readonly statements = preparedPer(
    () => this.db(),
    (db) => ({
      get: db.prepare('SELECT value FROM audit_cache WHERE key = ? AND expires_at > ?').pluck(),
      set: db.prepare(
        'INSERT INTO audit_cache (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
      ),
    }),
  );

  constructor(
    private readonly db: () => Database,
    private readonly now: () => number = Date.now,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return this.statements().get.get(key, this.now()) as string | undefined;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.statements().set.run(key, value, this.now() + ttlMs);
  }

  purgeExpired(): number {
    return this.db().prepare('DELETE FROM audit_cache WHERE expires_at <= ?').run(this.now()).changes;
  }
}

/** How often (in hits) the counter deletes a batch of expired rows itself, between maintenance runs. */
const SWEEP_EVERY = 1_024;

export class SqliteRateCounter implements RateCounter {
  private readonly statements = preparedPer(
    () => this.db(),
    (db) => ({
      // One statement, so one transaction: a window that has closed starts again at 1.
      hit: db.prepare(
        `INSERT INTO audit_cache (key, value, expires_at) VALUES (@key, '1', @now + @window)
         ON CONFLICT (key) DO UPDATE SET
           value = CASE WHEN audit_cache.expires_at <= @now THEN '1'
                        ELSE CAST(CAST(audit_cache.value AS INTEGER) + 1 AS TEXT) END,
           expires_at = CASE WHEN audit_cache.expires_at <= @now THEN @now + @window
                             ELSE audit_cache.expires_at END
         RETURNING CAST(value AS INTEGER) AS count, expires_at AS resetAt`,
      ),
      sweep: db.prepare(
        'DELETE FROM audit_cache WHERE key IN (SELECT key FROM audit_cache WHERE expires_at <= ? LIMIT 500)',
      ),
    }),
  );
  private hits = 0;

  constructor(
    private readonly db: () => Database,
    private readonly now: () => number = Date.now,
  ) {}

  async hit(key: string, windowMs: number): Promise<RateHit> {
    const statements = this.statements();
    const now = this.now();
    const row = statements.hit.get({
      key: `rate:${key}`,
      now,
      window: Math.max(1, Math.round(windowMs)),
    }) as RateHit;
    // Many clients' windows close every minute: keep the table small without waiting for maintenance.
    if (++this.hits % SWEEP_EVERY === 0) statements.sweep.run(now);
    return { count: row.count, resetAt: row.resetAt };
  }
}

export class SqliteJobStore implements JobStore {
  constructor(
    private readonly db: () => Database,
    private readonly now: () => number = Date.now,
  ) {}

  async create(job: { id: string; owner: string; request: string; ttlMs: number }): Promise<void> {
    const now = this.now();
    this.db()
      .prepare(
        `INSERT INTO audit_jobs (id, owner, status, request, created_at, updated_at, expires_at)
         VALUES (?, ?, 'queued', ?, ?, ?, ?)`,
      )
      .run(job.id, job.owner, job.request, now, now, now + job.ttlMs);
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const row = this.db()
      .prepare('SELECT * FROM audit_jobs WHERE id = ? AND expires_at > ?')
      .get(id, this.now()) as JobRow | undefined;
    return row ? toJob(row) : undefined;
  }

  async claimNext(): Promise<JobRecord | undefined> {
    const db = this.db();
    const now = this.now();
    const row = db.transaction(() => {
      const next = db
        .prepare(
          "SELECT * FROM audit_jobs WHERE status = 'queued' AND expires_at > ? ORDER BY created_at, id LIMIT 1",
        )
        .get(now) as JobRow | undefined;
      if (!next) return undefined;
      db.prepare("UPDATE audit_jobs SET status = 'running', updated_at = ? WHERE id = ?").run(now, next.id);
      return { ...next, status: 'running' as const, updated_at: now };
    })();
    return row ? toJob(row) : undefined;
  }

  async finish(
    id: string,
    outcome: { status: 'succeeded'; result: string } | { status: 'failed'; error: string },
  ): Promise<void> {
    this.db()
      .prepare('UPDATE audit_jobs SET status = ?, result = ?, error = ?, updated_at = ? WHERE id = ?')
      .run(
        outcome.status,
        outcome.status === 'succeeded' ? outcome.result : null,
        outcome.status === 'failed' ? outcome.error : null,
        this.now(),
        id,
      );
  }

  async requeueRunning(): Promise<number> {
    return this.db()
      .prepare("UPDATE audit_jobs SET status = 'queued', updated_at = ? WHERE status = 'running'")
      .run(this.now()).changes;
  }

  async purgeExpired(): Promise<number> {
    return this.db().prepare('DELETE FROM audit_jobs WHERE expires_at <= ?').run(this.now()).changes;
  }
}

export function sqliteBackend(db: () => Database, now: () => number = Date.now): CacheBackend {
  const cache = new SqliteCacheStore(db, now);
  const jobs = new SqliteJobStore(db, now);
  return {
    kind: 'sqlite',
    cache,
    rates: new SqliteRateCounter(db, now),
    jobs: {
      ...bind(jobs),
      purgeExpired: async () => cache.purgeExpired() + (await jobs.purgeExpired()),
    },
    open: async () => {},
    close: async () => {},
  };
}

function bind(jobs: SqliteJobStore): JobStore {
  return {
    create: (j) => jobs.create(j),
    get: (id) => jobs.get(id),
    claimNext: () => jobs.claimNext(),
    finish: (id, o) => jobs.finish(id, o),
    requeueRunning: () => jobs.requeueRunning(),
    purgeExpired: () => jobs.purgeExpired(),
  };
}
