/**
 * The upstream's history buckets, cached as the hub caches them (src/weather/bucket-cache.ts):
 * per (site, interval, node) one contiguous range of serialized buckets, so a year of hourly
 * means is read from PostgreSQL once and afterwards only its newest buckets are (BENCHMARKS.md
 * "Issue 12", a year of history). Decoding 8,760 rows in node-postgres costs far more than the
 * query itself; the hub is as fast only because it does not decode them again either.
 *
 * Several upstream processes share one database, so a process cannot learn of changes from its
 * own batch applies alone. Every applied batch records the oldest time it changed
 * (`sync_batches.changed_from`); before answering from its cache, a process reads the site's
 * acknowledged sequence and, when batches arrived since it last looked, the oldest time they
 * changed, and drops every cached bucket of that site from there on. One indexed query on the
 * site's row and its newest batches: batches tile the sequence (no gaps, no overlaps), so those
 * after `seen` are the ones with `first_seq > seen`.
 *
 * Requests of one site run one after another (a promise chain per site): a load that started
 * before a truncation can never append buckets the truncation meant to drop.
 */
import type pg from 'pg';
import { BucketCache, CachedRange, lowerBound } from '../../src/weather/bucket-cache.js';

export type RollupInterval = '1h' | '1d';

const BUCKET_MS: Record<RollupInterval, number> = { '1h': 3_600_000, '1d': 86_400_000 };

export interface BucketPage {
  body: Uint8Array;
  /** Set when more buckets remain: the `after` of the next page. */
  nextAfter?: number;
}

export interface BucketSource {
  /** Up to `max` buckets of the series with a start in [from, end), ascending: [start, json]. */
  load(
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    from: number,
    end: number,
    max: number,
  ): Promise<Array<[number, string]>>;
}

const bucketStart = (ts: number, interval: RollupInterval) =>
  Math.floor(ts / BUCKET_MS[interval]) * BUCKET_MS[interval];

export class UpstreamHistoryCache {
  private readonly buckets: BucketCache;
  /** Per site: the acknowledged sequence this process's cached buckets reflect. */
  private readonly seen = new Map<string, number>();
  /** Per site: the cache keys held (to truncate them all when the site's data changes). */
  private readonly keys = new Map<string, Set<string>>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly source: BucketSource,
    maxBytes = 32_000_000,
  ) {
    this.buckets = new BucketCache(maxBytes);
  }

  /** One page of buckets with a start in [floor(start), end) (after `after`), at most `limit`. */
  page(
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    query: { start: number; end: number; limit: number; after?: number },
  ): Promise<BucketPage> {
    const previous = this.queues.get(siteId) ?? Promise.resolve();
    const next = previous.then(
      () => this.pageNow(siteId, nodeId, interval, query),
      () => this.pageNow(siteId, nodeId, interval, query),
    );
    const tail = next.catch(() => {});
    this.queues.set(siteId, tail);
    void tail.then(() => {
      if (this.queues.get(siteId) === tail) this.queues.delete(siteId);
    });
    return next;
  }

  private async pageNow(
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    query: { start: number; end: number; limit: number; after?: number },
  ): Promise<BucketPage> {
    const { end, limit } = query;
    const from = bucketStart(query.start, interval);
    const lower = query.after === undefined ? from : Math.max(from, query.after + 1);
    if (lower >= end) return { body: new CachedRange(0, 0).body(0, 0) };
    await this.refresh(siteId);
    const key = `${siteId}\u0000${interval}\u0000${nodeId}`;
    let range = this.buckets.get(key);
    if (!range || lower < range.from || lower > range.to) {
      range = new CachedRange(lower, lower);
      await this.fill(range, siteId, nodeId, interval, end, limit + 1);
      this.buckets.set(key, range);
      this.remember(siteId, key);
    } else if (end > range.to) {
      const wanted = limit + 1 - (range.starts.length - lowerBound(range.starts, lower));
      if (wanted > 0) {
        const held = range;
        const loaded = await this.rows(held, siteId, nodeId, interval, end, wanted);
        this.buckets.extend(key, held, (r) => this.append(r, loaded, end, wanted));
      }
    }
    const first = lowerBound(range.starts, lower);
    const stop = Math.min(lowerBound(range.starts, end), first + limit + 1);
    const more = stop - first > limit;
    const last = more ? first + limit : stop;
    const body = range.body(first, last);
    return more ? { body, nextAfter: range.starts[last - 1]! } : { body };
  }

  /** Drops the site's buckets that batches applied since the last look (by any process) changed. */
  private async refresh(siteId: string): Promise<void> {
    const seen = this.seen.get(siteId);
    const { rows } = await this.pool.query<{ acked_seq: number; changed_from: number | null }>(
      `SELECT acked_seq,
         (SELECT min(changed_from) FROM sync_batches b WHERE b.site_id = $1 AND b.first_seq > $2) AS changed_from
       FROM sites WHERE site_id = $1`,
      [siteId, seen ?? 0],
    );
    const row = rows[0];
    if (!row) return;
    const acked = Number(row.acked_seq);
    if (seen !== undefined && acked > seen && row.changed_from !== null) {
      const changed = Number(row.changed_from);
      for (const key of this.keys.get(siteId) ?? []) {
        const interval = key.split('\u0000')[1] as RollupInterval;
        this.buckets.truncate(key, bucketStart(changed, interval));
      }
    }
    if (seen === undefined || acked > seen) this.seen.set(siteId, acked);
  }

  private remember(siteId: string, key: string): void {
    let keys = this.keys.get(siteId);
    if (!keys) {
      keys = new Set();
      this.keys.set(siteId, keys);
    }
    keys.add(key);
  }

  private async fill(
    range: CachedRange,
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    end: number,
    max: number,
  ): Promise<void> {
    this.append(range, await this.rows(range, siteId, nodeId, interval, end, max), end, max);
  }

  private rows(
    range: CachedRange,
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    end: number,
    max: number,
  ): Promise<Array<[number, string]>> {
    return this.source.load(siteId, nodeId, interval, range.to, end, max);
  }

  /** Appends loaded buckets and moves `to` as far as they are complete. */
  private append(range: CachedRange, rows: Array<[number, string]>, end: number, max: number): void {
    for (const [start, json] of rows) range.append(start, json);
    // A full result may stop short of `end`: it is complete only through its last bucket.
    range.to = rows.length === max ? range.starts[range.starts.length - 1]! + 1 : end;
  }
}
