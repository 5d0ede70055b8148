/**
 * The upstream's history cache at a notification (sync/upstream/history-cache.ts): a series
 * asked for within the last minute is loaded again as soon as a batch's notification drops its
 * newest buckets, so the dashboard's next request needs no query; a series nobody asked for
 * lately costs nothing until it is asked for. A source in memory stands for PostgreSQL (the
 * PostgreSQL side is history-notified.test.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  type BucketSource,
  type CheckedLoadQuery,
  UpstreamHistoryCache,
} from '../../../sync/upstream/history-cache.js';
import type { HistoryChangeFeed } from '../../../sync/upstream/history-changes.js';

const HOUR = 3_600_000;
const SITE = 'ridge';
const NODE = '!00000001';

/** Buckets in memory; `version` bumps a bucket's value as a batch would. */
function memorySource() {
  const values = new Map<number, number>();
  for (let h = 0; h < 48; h++) values.set(h * HOUR, h);
  let acked = 1;
  let changedFrom: number | null = null;
  const calls: CheckedLoadQuery[] = [];
  const source: BucketSource = {
    async checkAndLoad(_site, _node, _interval, q) {
      calls.push(q);
      const loadFrom = Math.max(
        q.lower,
        q.seen >= 0 && changedFrom !== null ? Math.min(q.from, changedFrom) : q.from,
      );
      const rows: Array<[number, string]> = [...values.entries()]
        .filter(([start]) => start >= loadFrom && start < q.end)
        .sort((a, b) => a[0] - b[0])
        .slice(0, q.max)
        .map(([start, v]) => [start, JSON.stringify({ t: start, v })]);
      return {
        ackedSeq: acked,
        changedFrom: q.seen >= 0 && q.seen < acked ? changedFrom : null,
        loadedFrom: loadFrom,
        rows,
      };
    },
  };
  return {
    source,
    calls,
    /** A batch changing the bucket of `start` (and acknowledging one more sequence). */
    change(start: number, value: number) {
      values.set(start, value);
      acked++;
      changedFrom = start;
    },
  };
}

function liveFeed() {
  let onChange: ((siteId: string, from: number) => void) | undefined;
  const feed: HistoryChangeFeed = {
    liveEpoch: () => 1,
    subscribe(fn) {
      onChange = fn;
      return () => {};
    },
  };
  return { feed, notify: (from: number) => onChange?.(SITE, from) };
}

const text = (page: { body: Uint8Array }) => Buffer.from(page.body).toString('utf8');

describe('upstream history cache, at a notification', () => {
  it('loads again at once what a series asked for within the last minute lost, and nothing for one asked for longer ago', async () => {
    const memory = memorySource();
    const { feed, notify } = liveFeed();
    let now = 1_000_000;
    const cache = new UpstreamHistoryCache(memory.source, 32_000_000, feed, () => now);
    const ask = () => cache.page(SITE, NODE, '1h', { start: 0, end: 48 * HOUR, limit: 100 });

    expect(JSON.parse(text(await ask())).data).toHaveLength(48);
    expect(cache.queries).toBe(1);
    await ask();
    expect(cache.queries).toBe(1);

    // A batch changed hour 40; its notification drops hours 40–47 and loads them again at once.
    memory.change(40 * HOUR, 400);
    notify(40 * HOUR);
    const page = JSON.parse(text(await ask())).data as Array<{ t: number; v: number }>;
    expect(page).toHaveLength(48);
    expect(page[40]).toEqual({ t: 40 * HOUR, v: 400 });
    expect(cache.refills).toBe(1);
    expect(cache.queries).toBe(1);
    expect(memory.calls.at(-1)).toMatchObject({ from: 40 * HOUR, end: 48 * HOUR });

    // Asked for last more than a minute ago: the drop alone; the request loads what it lacks.
    now += 60_001;
    memory.change(45 * HOUR, 450);
    notify(45 * HOUR);
    const later = JSON.parse(text(await ask())).data as Array<{ t: number; v: number }>;
    expect(later[45]).toEqual({ t: 45 * HOUR, v: 450 });
    expect(cache.refills).toBe(1);
    expect(cache.queries).toBe(2);
  });

  it('a load again that PostgreSQL does not answer leaves the drop done and the next request loading what it lacks', async () => {
    const memory = memorySource();
    const { feed, notify } = liveFeed();
    const cache = new UpstreamHistoryCache(
      {
        checkAndLoad: (...args) => {
          if (failing) return Promise.reject(new Error('Connection terminated'));
          return memory.source.checkAndLoad(...args);
        },
      },
      32_000_000,
      feed,
    );
    let failing = false;
    const ask = () => cache.page(SITE, NODE, '1h', { start: 0, end: 48 * HOUR, limit: 100 });
    await ask();
    failing = true;
    memory.change(47 * HOUR, 470);
    notify(47 * HOUR);
    // The failed load again must not surface as an unhandled rejection (vitest fails the run).
    await new Promise((r) => setTimeout(r, 20));
    expect(cache.refills).toBe(1);
    failing = false;
    const page = JSON.parse(text(await ask())).data as Array<{ t: number; v: number }>;
    expect(page[47]).toEqual({ t: 47 * HOUR, v: 470 });
    expect(cache.queries).toBe(2);
  });
});
