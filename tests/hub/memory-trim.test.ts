/**
 * The memory trimmer (issue 17): it trims only when no reading was stored since its last check,
 * and again only once RSS grew past the lowest it saw since then.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage, MemoryTrimmer } from '../../hub/memory-trim.js';

const dbs: Database.Database[] = [];
afterEach(() => {
  for (const db of dbs) db.close();
  dbs.length = 0;
});

function trimmer(growthBytes: number) {
  const db = new Database(':memory:');
  dbs.push(db);
  let stored = 0;
  const trims: number[] = [];
  const t = new MemoryTrimmer({
    db,
    activity: () => stored,
    growthBytes,
    onTrim: (before) => trims.push(before),
  });
  return { t, trims, store: (n: number) => (stored += n) };
}

describe('MemoryTrimmer', () => {
  it('waits for a quiet period, then trims once until memory grows again', () => {
    const { t, trims, store } = trimmer(1e12);
    store(10);
    expect(t.check()).toBe(false); // readings were stored since construction
    expect(t.check()).toBe(true); // quiet: the first trim
    expect(t.check()).toBe(false); // quiet, but RSS did not grow by 1 TB
    store(1);
    expect(t.check()).toBe(false);
    expect(trims).toHaveLength(1);
  });

  it('trims at every quiet check when any growth is enough', () => {
    const { t, trims } = trimmer(-1e12);
    expect(t.check()).toBe(true);
    expect(t.check()).toBe(true);
    expect(trims).toHaveLength(2);
  });

  it('can run a full collection without --expose-gc', () => {
    expect(collectGarbage()).toBe(true);
  });
});
