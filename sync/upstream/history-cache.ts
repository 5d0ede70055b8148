/**
 * The upstream's history buckets, cached as the hub caches them (src/weather/bucket-cache.ts):
 * per (site, interval, node) one contiguous range of serialized buckets, so a year of hourly
 * means is read from PostgreSQL once and afterwards only its newest buckets are (BENCHMARKS.md
 * "Issue 12", a year of history). Decoding 8,760 rows in node-postgres costs far more than the
 * query itself; the hub is as fast only because it does not decode them again either.
 *
 * Several upstream processes share one database, so a process cannot learn of changes from its
 * own batch applies alone. Two ways, the first whenever it can be trusted:
 * - Notified (history-changes.ts, UPSTREAM_HISTORY_LISTEN): every batch that changes buckets
 *   NOTIFYs its site and the oldest time it changed, at its commit; this process drops the site's
 *   cached buckets from there on as the notification arrives. While the listening connection
 *   provably delivers (`liveEpoch()`), a site checked against PostgreSQL once on that connection
 *   is answered from memory when the cache holds the whole answer: no query at all. An answer
 *   may then miss a batch whose notification is still on its way (history-changes.ts says how
 *   long that can be).
 * - Checked: otherwise (no listener, the connection down, reconnecting or silent, a site not yet
 *   checked on this connection, buckets to load) each request asks PostgreSQL once, in ONE round
 *   trip, both
 *   - the check: the site's acknowledged sequence and, when batches arrived since this process
 *     last looked (`seen`), the oldest time they changed (`sync_batches.changed_from`); every
 *     cached bucket of the site from there on is dropped (batches tile the sequence, no gaps, no
 *     overlaps, so those after `seen` are the ones with `first_seq > seen`), and
 *   - the buckets the answer lacks: from the end of the cached range, or from the first bucket
 *     the check drops if that is earlier (computed by PostgreSQL in the same statement), to the
 *     end asked for. Usually none, or the one a new reading changed.
 *   So a checked answer is never older than the request: whatever any process committed before
 *   the request came is in it.
 *
 * Requests and notified drops of one site run one after another (a promise chain per site): a
 * load that started before a drop can never append buckets the drop meant to remove, and a
 * request that comes after a notification is answered after its drop.
 */
import { BUCKET_MS, bucketStart, type RollupInterval } from '../../src/store/rollups.js';
import { BucketCache, CachedRange, lowerBound } from '../../src/weather/bucket-cache.js';
import type { HistoryChangeFeed } from './history-changes.js';

/** A series asked for within this long is loaded again as soon as a notification drops from it. */
const REFILL_ASKED_WITHIN_MS = 60_000;

export interface BucketPage {
  body: Uint8Array<ArrayBuffer>;
  /** Set when more buckets remain: the `after` of the next page. */
  nextAfter?: number;
}

/** What a checked load asks: buckets of the series with a start in [load_from, end), at most `max`. */
export interface CheckedLoadQuery {
  /** The site's acknowledged sequence this process's cache reflects; -1 when none yet (no
   * cached bucket to check: the batches before are not looked at). */
  seen: number;
  /** The first bucket the answer needs. */
  lower: number;
  /** Where the cached buckets end (`lower` when none are cached). */
  from: number;
  end: number;
  max: number;
}

export interface CheckedLoad {
  /** The site's acknowledged sequence; undefined when the site is not registered. */
  ackedSeq?: number;
  /** The oldest time changed by the batches after `seen`; null when none changed a bucket. */
  changedFrom: number | null;
  /**
   * Where the rows start: max(lower, min(from, the start of changedFrom's bucket)), the
   * cached range's end once the check's drop is done (or `lower`).
   */
  loadedFrom: number;
  /** The buckets with a start in [loadedFrom, end), ascending, at most `max`: [start, json]. */
  rows: Array<[number, string]>;
}

export interface BucketSource {
  /** The check and the missing buckets, one statement (one snapshot, one round trip). */
  checkAndLoad(
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    query: CheckedLoadQuery,
  ): Promise<CheckedLoad>;
}

const EMPTY = new CachedRange(0, 0).body(0, 0);

/** True when `range` holds every bucket of a page from `lower` to `end` of at most `max` - 1 (and
 * whether one more follows). */
function holds(range: CachedRange, lower: number, end: number, max: number): boolean {
  if (end <= range.to) return true;
  return range.starts.length - lowerBound(range.starts, lower) >= max;
}

interface HeldBody {
  range: CachedRange;
  first: number;
  last: number;
  body: Uint8Array<ArrayBuffer>;
}

export class UpstreamHistoryCache {
  private readonly buckets: BucketCache;
  /** Per site: the acknowledged sequence this process's cached buckets reflect. */
  private readonly seen = new Map<string, number>();
  /** Per site: the cache keys held (to truncate them all when the site's data changes). */
  private readonly keys = new Map<string, Set<string>>();
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Per key: the last body answered, while the key's range has not changed since. */
  private readonly bodies = new Map<string, HeldBody>();
  private bodyBytes = 0;
  private readonly maxBodyBytes: number;
  /** Per site: the feed's epoch in which it was last checked against PostgreSQL. */
  private readonly checked = new Map<string, number>();
  /** Per key: when it was last asked for (what a notified drop loads again at once). */
  private readonly asked = new Map<string, number>();
  /** Requests answered with a PostgreSQL query (the rest came from memory alone). */
  queries = 0;
  /** Queries run to load again what a notified drop removed from a series asked for lately. */
  refills = 0;

  constructor(
    private readonly source: BucketSource,
    maxBytes = 32_000_000,
    private readonly feed?: HistoryChangeFeed,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new BucketCache(maxBytes);
    this.maxBodyBytes = maxBytes / 4;
    feed?.subscribe((siteId, from) => this.changed(siteId, from));
  }

  /**
   * A batch (of any process) changed the site's buckets from `from` on: drop them, in turn, and
   * load again at once what a series asked for within the last minute held (a dashboard that
   * follows a node asks again soon: its answer is then ready, with no query of its own).
   */
  private changed(siteId: string, from: number): void {
    // Nothing cached and nothing under way: nothing to drop.
    if (!this.keys.has(siteId) && !this.queues.has(siteId)) return;
    this.enqueue(siteId, async () => {
      const refill: Array<[key: string, to: number]> = [];
      const now = this.now();
      const keys = this.keys.get(siteId) ?? new Set<string>();
      for (const key of keys) {
        const range = this.buckets.peek(key);
        if (!range) {
          // Evicted for other series: nothing of it to drop or load.
          keys.delete(key);
          this.asked.delete(key);
        } else if (now - (this.asked.get(key) ?? 0) <= REFILL_ASKED_WITHIN_MS) refill.push([key, range.to]);
      }
      this.truncateSite(siteId, from);
      for (const [key, to] of refill) await this.refill(siteId, key, to);
    }).catch(() => {
      // PostgreSQL did not answer: the drop is done, and the next request loads what it lacks.
    });
  }

  /** Loads the buckets of `key` up to `to` (where its range ended before a drop). */
  private async refill(siteId: string, key: string, to: number): Promise<void> {
    const range = this.buckets.peek(key);
    if (!range || range.to >= to) return;
    const [, interval, nodeId] = key.split('\u0000') as [string, RollupInterval, string];
    const seen = this.seen.get(siteId);
    const max = Math.ceil((to - range.to) / BUCKET_MS[interval]) + 1;
    this.refills++;
    const checked = await this.source.checkAndLoad(siteId, nodeId, interval, {
      seen: seen ?? -1,
      lower: range.from,
      from: range.to,
      end: to,
      max,
    });
    if (checked.ackedSeq === undefined) return;
    this.takeCheck(siteId, seen, checked);
    if (this.buckets.peek(key) !== range || range.to !== checked.loadedFrom) return;
    this.forgetBody(key);
    this.buckets.extend(key, range, (r) => this.append(r, checked.rows, to, max));
  }

  /** What a check found: every series of the site loses what batches since `seen` changed. */
  private takeCheck(siteId: string, seen: number | undefined, checked: CheckedLoad): void {
    const acked = checked.ackedSeq!;
    if (seen !== undefined && acked > seen && checked.changedFrom !== null) {
      this.truncateSite(siteId, checked.changedFrom);
    }
    if (seen === undefined || acked > seen) this.seen.set(siteId, acked);
  }

  /** One page of buckets with a start in [floor(start), end) (after `after`), at most `limit`. */
  page(
    siteId: string,
    nodeId: string,
    interval: RollupInterval,
    query: { start: number; end: number; limit: number; after?: number },
  ): Promise<BucketPage> {
    return this.enqueue(siteId, () => this.pageNow(siteId, nodeId, interval, query));
  }

  /** Runs `run` after everything queued for the site before it. */
  private enqueue<T>(siteId: string, run: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(siteId) ?? Promise.resolve();
    const next = previous.then(run, run);
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
    const start = bucketStart(query.start, interval);
    const lower = query.after === undefined ? start : Math.max(start, query.after + 1);
    if (lower >= end) return { body: EMPTY };
    const key = `${siteId}\u0000${interval}\u0000${nodeId}`;
    this.asked.set(key, this.now());
    const seen = this.seen.get(siteId);
    const cached = this.buckets.get(key);
    const fresh = !cached || lower < cached.from || lower > cached.to;
    const max = limit + 1;
    const live = this.feed?.liveEpoch();
    if (!fresh && live !== undefined && this.checked.get(siteId) === live && holds(cached, lower, end, max)) {
      return this.answer(key, cached, lower, end, limit);
    }
    this.queries++;
    const checked = await this.source.checkAndLoad(siteId, nodeId, interval, {
      seen: seen ?? -1,
      lower,
      from: fresh ? lower : cached.to,
      end,
      max,
    });
    // Listening since before the query began: whatever the query did not see will be notified.
    if (live !== undefined && this.feed?.liveEpoch() === live) this.checked.set(siteId, live);
    if (checked.ackedSeq === undefined) return { body: EMPTY };
    const acked = checked.ackedSeq;
    this.takeCheck(siteId, seen, checked);

    let range = this.buckets.get(key);
    if (!fresh && range === cached && range.to === checked.loadedFrom) {
      if (checked.loadedFrom < end) {
        this.forgetBody(key);
        this.buckets.extend(key, range, (r) => this.append(r, checked.rows, end, max));
      }
    } else {
      range = new CachedRange(lower, lower);
      if (checked.loadedFrom === lower) this.append(range, checked.rows, end, max);
      else {
        // The cached range went meanwhile (evicted for another site's): load it whole. Later
        // than the check, so at least as new.
        const again = await this.source.checkAndLoad(siteId, nodeId, interval, {
          seen: acked,
          lower,
          from: lower,
          end,
          max,
        });
        this.append(range, again.rows, end, max);
      }
      this.forgetBody(key);
      this.buckets.set(key, range);
      this.remember(siteId, key);
    }
    return this.answer(key, range, lower, end, limit);
  }

  /** The page of the key's range from `lower` to `end`, at most `limit` buckets. */
  private answer(key: string, range: CachedRange, lower: number, end: number, limit: number): BucketPage {
    const first = lowerBound(range.starts, lower);
    const stop = Math.min(lowerBound(range.starts, end), first + limit + 1);
    const more = stop - first > limit;
    const last = more ? first + limit : stop;
    const body = this.body(key, range, first, last);
    return more ? { body, nextAfter: range.starts[last - 1]! } : { body };
  }

  private truncateSite(siteId: string, from: number): void {
    for (const key of this.keys.get(siteId) ?? []) {
      const interval = key.split('\u0000')[1] as RollupInterval;
      this.forgetBody(key);
      this.buckets.truncate(key, bucketStart(from, interval));
    }
  }

  /**
   * The body of buckets [first, last) of the key's range: the one answered last when the same
   * buckets are asked again of an unchanged range (a chart of a year reloaded: no 2 MB copy
   * per request). Every change of a range (drop, load, replacement) forgets its body first.
   */
  private body(key: string, range: CachedRange, first: number, last: number): Uint8Array<ArrayBuffer> {
    const held = this.bodies.get(key);
    if (held && held.range === range && held.first === first && held.last === last) {
      this.bodies.delete(key);
      this.bodies.set(key, held);
      return held.body;
    }
    this.forgetBody(key);
    const body = range.body(first, last);
    this.bodies.set(key, { range, first, last, body });
    this.bodyBytes += body.byteLength;
    for (const [other, old] of this.bodies) {
      if (this.bodyBytes <= this.maxBodyBytes) break;
      this.bodies.delete(other);
      this.bodyBytes -= old.body.byteLength;
    }
    return body;
  }

  private forgetBody(key: string): void {
    const held = this.bodies.get(key);
    if (!held) return;
    this.bodies.delete(key);
    this.bodyBytes -= held.body.byteLength;
  }

  private remember(siteId: string, key: string): void {
    let keys = this.keys.get(siteId);
    if (!keys) {
      keys = new Set();
      this.keys.set(siteId, keys);
    }
    keys.add(key);
  }

  /** Appends loaded buckets and moves `to` as far as they are complete. */
  private append(range: CachedRange, rows: Array<[number, string]>, end: number, max: number): void {
    for (const [start, json] of rows) range.append(start, json);
    // A full result may stop short of `end`: it is complete only through its last bucket.
    range.to = rows.length === max ? range.starts[range.starts.length - 1]! + 1 : end;
  }
}
