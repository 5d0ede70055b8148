/**
 * Serialized rollup buckets, kept per (interval, node) for one contiguous range of bucket starts.
 *
 * A closed hour or day never changes again, so a chart that asks for a year of hourly means asks
 * SQLite only for the buckets it has not seen yet (usually the current one) and copies the rest
 * out of one UTF-8 buffer: no per-request serialization, no string joins, no encoding. A stored
 * reading truncates its node's range at the reading's bucket, which drops exactly the buckets
 * that may have changed (the current one, or an older one for late data). Memory is bounded:
 * the least recently used ranges go once the buffers together pass `maxBytes`.
 */

import type { Statement } from '../store/database.js';
import { bucketStart, type RollupInterval } from '../store/rollups.js';
import { bucketLower, EMPTY_BODY, type HistoryPage, type HistoryQuery } from './weather-reads.js';

const OPEN = Buffer.from('{"data":[');
const CLOSE = Buffer.from(']}');
const COMMA = 0x2c;

/** First index whose value is ≥ `value` (the array is ascending). */
export function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Every bucket with a start in [from, to), ascending, each stored as its JSON and a comma. */
export class CachedRange {
  readonly starts: number[] = [];
  private readonly offsets: number[] = [];
  private bytes: Buffer = Buffer.alloc(0);
  private used = 0;

  constructor(
    public from: number,
    public to: number,
  ) {}

  /** Bytes held (the buffer's capacity), for the cache's bound. */
  get byteLength(): number {
    return this.bytes.length;
  }

  /** Adds a bucket after the last one. */
  append(start: number, json: string): void {
    const worst = this.used + json.length * 3 + 1;
    if (worst > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(worst, this.bytes.length * 2, 4096));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.starts.push(start);
    this.offsets.push(this.used);
    this.used += this.bytes.write(json, this.used, 'utf8');
    this.bytes[this.used++] = COMMA;
  }

  /** Forgets the buckets from index `at` on. */
  truncate(at: number): void {
    if (at >= this.starts.length) return;
    this.used = this.offsets[at]!;
    this.starts.length = at;
    this.offsets.length = at;
  }

  /** The response body `{"data":[…]}` of the buckets at indexes [first, last). */
  body(first: number, last: number): Uint8Array<ArrayBuffer> {
    if (first >= last) return Buffer.concat([OPEN, CLOSE]);
    const end = (last < this.offsets.length ? this.offsets[last]! : this.used) - 1; // without the last comma
    return Buffer.concat([OPEN, this.bytes.subarray(this.offsets[first]!, end), CLOSE]);
  }
}

export class BucketCache {
  /** Map order is recency order: a hit moves the entry to the end. */
  private readonly ranges = new Map<string, CachedRange>();
  private bytes = 0;

  constructor(private readonly maxBytes = 8_000_000) {}

  /** Bytes held by all ranges. */
  get size(): number {
    return this.bytes;
  }

  /** The key's range without counting it as used (eviction order unchanged). */
  peek(key: string): CachedRange | undefined {
    return this.ranges.get(key);
  }

  get(key: string): CachedRange | undefined {
    const range = this.ranges.get(key);
    if (range) {
      this.ranges.delete(key);
      this.ranges.set(key, range);
    }
    return range;
  }

  /** Stores a range built by `fill`, replacing any other range of the key. */
  set(key: string, range: CachedRange): void {
    this.drop(key);
    this.ranges.set(key, range);
    this.bytes += range.byteLength;
    this.evict();
  }

  /** Lets `grow` append buckets to the key's range (at its end), then accounts for the bytes. */
  extend(key: string, range: CachedRange, grow: (range: CachedRange) => void): void {
    const before = range.byteLength;
    grow(range);
    if (this.ranges.get(key) !== range) return;
    this.bytes += range.byteLength - before;
    this.evict();
  }

  /** The bucket starting at `start` changed: forget it and everything after it in the key's range. */
  truncate(key: string, start: number): void {
    const range = this.ranges.get(key);
    if (!range || start >= range.to) return;
    if (start <= range.from) {
      this.drop(key);
      return;
    }
    range.truncate(lowerBound(range.starts, start));
    range.to = start;
  }

  clear(): void {
    this.ranges.clear();
    this.bytes = 0;
  }

  private drop(key: string): void {
    const old = this.ranges.get(key);
    if (!old) return;
    this.ranges.delete(key);
    this.bytes -= old.byteLength;
  }

  private evict(): void {
    for (const key of this.ranges.keys()) {
      if (this.bytes <= this.maxBytes) return;
      this.drop(key);
    }
  }
}

function cacheKey(interval: RollupInterval, nodeId: string): string {
  return `${interval}\u0000${nodeId}`;
}

/** Reads buckets: (node, from, to, max) → up to `max` rows with a start in [from, to), ascending, the start first. */
export interface BucketSelect {
  all(nodeId: string, from: number, to: number, max: number): unknown[][];
}

/**
 * One node's `1h` / `1d` history pages served from a BucketCache of serialized buckets where it
 * covers them, else read from the rollup table (`select`: node, from, to, limit → rows with the
 * bucket start first) and cached: the weather history's, and any series kept with its rollups
 * (device health).
 */
export class BucketHistory {
  private readonly cache: BucketCache;

  constructor(
    private readonly select: Record<RollupInterval, BucketSelect>,
    private readonly json: (nodeId: string, start: number, row: unknown[]) => string,
    cacheBytes?: number,
  ) {
    this.cache = new BucketCache(cacheBytes);
  }

  /** A value of `nodeId` at `ts` was stored: the cached buckets from its hour and day on are dropped. */
  changed(nodeId: string, ts: number): void {
    this.cache.truncate(cacheKey('1h', nodeId), bucketStart(ts, '1h'));
    this.cache.truncate(cacheKey('1d', nodeId), bucketStart(ts, '1d'));
  }

  clear(): void {
    this.cache.clear();
  }

  page(query: HistoryQuery, interval: RollupInterval): HistoryPage {
    const { nodeId, end, limit } = query;
    const lower = bucketLower(query, interval);
    if (lower >= end) return { body: EMPTY_BODY };
    const key = cacheKey(interval, nodeId);
    let range = this.cache.get(key);
    if (!range || lower < range.from || lower > range.to) {
      range = new CachedRange(lower, lower);
      this.load(range, interval, nodeId, end, limit + 1);
      this.cache.set(key, range);
    } else if (end > range.to) {
      const wanted = limit + 1 - (range.starts.length - lowerBound(range.starts, lower));
      if (wanted > 0) this.cache.extend(key, range, (r) => this.load(r, interval, nodeId, end, wanted));
    }
    const first = lowerBound(range.starts, lower);
    const stop = Math.min(lowerBound(range.starts, end), first + limit + 1);
    const more = stop - first > limit;
    const last = more ? first + limit : stop;
    const body = range.body(first, last);
    return more ? { body, nextAfter: range.starts[last - 1]! } : { body };
  }

  /** Appends up to `max` buckets with a start in [range.to, end) and moves `to` as far as they are complete. */
  private load(range: CachedRange, interval: RollupInterval, nodeId: string, end: number, max: number): void {
    const rows = this.select[interval].all(nodeId, range.to, end, max);
    for (const row of rows) range.append(row[0] as number, this.json(nodeId, row[0] as number, row));
    // A full result may stop short of `end`: it is complete only through its last bucket.
    range.to = rows.length === max ? range.starts[range.starts.length - 1]! + 1 : end;
  }
}
