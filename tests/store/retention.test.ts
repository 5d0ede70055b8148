import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { deleteReadingsOlderThan } from '../../src/store/retention.js';
import { DAY, memoryDb, reading, T0 } from './fixtures.js';

let db: Database;

beforeEach(() => {
  db = memoryDb();
});
afterEach(() => closeDatabase(db));

const CUTOFF = T0 + 10 * DAY;

/** Per node: `old` readings before the cutoff (an hour apart) and `fresh` from the cutoff on. */
function seed(nodes: Record<string, { old: number; fresh: number }>): void {
  const writer = new ReadingWriter(db);
  for (const [nodeId, { old, fresh }] of Object.entries(nodes)) {
    const readings = [
      ...Array.from({ length: old }, (_, i) =>
        reading(nodeId, CUTOFF - (i + 1) * 3_600_000, { temperatureC: i }),
      ),
      ...Array.from({ length: fresh }, (_, i) =>
        reading(nodeId, CUTOFF + i * 60_000, { temperatureC: 100 + i }),
      ),
    ];
    writer.write(readings);
  }
}

const count = (sql: string) => db.prepare(sql).pluck().get() as number;

describe('deleteReadingsOlderThan', () => {
  it('deletes only raw rows older than the cutoff, keeps the rollups and latest rows', async () => {
    seed({ '!a': { old: 12, fresh: 3 }, '!b': { old: 0, fresh: 2 }, '!c': { old: 7, fresh: 0 } });
    const hourly = db.prepare('SELECT * FROM readings_hourly ORDER BY node_id, bucket_start').all();
    const daily = db.prepare('SELECT * FROM readings_daily ORDER BY node_id, bucket_start').all();
    const latest = db.prepare('SELECT * FROM readings_latest ORDER BY node_id').all();

    expect(await deleteReadingsOlderThan(db, CUTOFF)).toBe(19);

    expect(count(`SELECT count(*) FROM readings WHERE ts < ${CUTOFF}`)).toBe(0);
    expect(count('SELECT count(*) FROM readings')).toBe(5); // the cutoff itself is kept
    expect(count(`SELECT min(ts) FROM readings`)).toBe(CUTOFF);
    expect(db.prepare('SELECT * FROM readings_hourly ORDER BY node_id, bucket_start').all()).toEqual(hourly);
    expect(db.prepare('SELECT * FROM readings_daily ORDER BY node_id, bucket_start').all()).toEqual(daily);
    expect(db.prepare('SELECT * FROM readings_latest ORDER BY node_id').all()).toEqual(latest);

    expect(await deleteReadingsOlderThan(db, CUTOFF)).toBe(0);
  });

  it('works in chunks of at most chunkRows, yielding to the event loop between them', async () => {
    seed({ '!a': { old: 13, fresh: 1 }, '!b': { old: 4, fresh: 0 }, '!c': { old: 18, fresh: 2 } });
    const chunks: number[] = [];
    let chunksWhenOthersRan = -1;
    const done = deleteReadingsOlderThan(db, CUTOFF, { chunkRows: 10, onChunk: (n) => chunks.push(n) });
    setImmediate(() => {
      chunksWhenOthersRan = chunks.length;
    });
    expect(await done).toBe(35);

    expect(chunks).toEqual([10, 10, 10, 5]);
    // Other work got its turn while the job was under way, not only once it was over.
    expect(chunksWhenOthersRan).toBeGreaterThan(0);
    expect(chunksWhenOthersRan).toBeLessThan(chunks.length);
    expect(count('SELECT count(*) FROM readings')).toBe(3);
  });

  it('handles an empty table and rejects a nonsense cutoff', async () => {
    expect(await deleteReadingsOlderThan(db, CUTOFF)).toBe(0);
    await expect(deleteReadingsOlderThan(db, Number.NaN)).rejects.toThrow(RangeError);
  });
});
