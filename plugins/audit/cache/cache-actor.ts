/**
 * The cache store the rate-limit tiers count in (http/rate-limit.ts), as an actor: it holds the
 * backend's connection for the life of the plugin (SQLite needs none; Redis is connected when
 * the plugin is created, so an unreachable CACHE_URL stops the start, and closed on stop) and
 * purges expired rows on the maintenance schedule. The AI features keep their own backend over
 * the same store (ask/features.ts).
 */
import { Actor } from '../../../src/kernel/actor.js';
import type { CacheBackend } from './store.js';

export class AuditCacheStoreActor extends Actor {
  readonly name = 'audit-cache-store';
  override readonly dependsOn = ['store'];
  override readonly required = false;

  constructor(readonly backend: CacheBackend) {
    super();
  }

  async start(): Promise<void> {
    await this.backend.open();
  }

  /** Deletes expired cache rows, rate counters and jobs (SQLite; Redis expires keys itself). */
  async purgeExpired(): Promise<number> {
    return this.backend.jobs.purgeExpired();
  }

  override describe(): Record<string, unknown> {
    return { store: this.backend.kind };
  }

  async stop(): Promise<void> {
    await this.backend.close();
  }
}
