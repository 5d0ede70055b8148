/**
 * The outbox's disk budget (docs/sync.md "Disk budget"): past it, the oldest `readings` entries
 * become dropped entries, whole, and the rollups of every (node, hour) and (node, day) their rows
 * touched are appended, so the means still reach the upstream; the readings are counted one by
 * one; nothing else is ever dropped, and the sequence keeps no gap.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { bucketStart, ROLLUP_TABLE, type RollupInterval } from '../../../src/store/rollups.js';
import { batchSchema, type RecordBody } from '../../../sync/protocol.js';
import { Outbox } from '../../../sync/site/outbox.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';
import { rollup } from '../../store/fixtures.js';

const T0 = Date.UTC(2025, 4, 1, 22); // two hours before midnight: readings span two days
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const NODES = ['!0000000a', '!0000000b'];

let dir: string;
let file: string;
let db: Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-outbox-budget-'));
  file = join(dir, 'hub.sqlite');
  db = openDatabase(file);
  enableOutbox(db);
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

interface Entry {
  seq: number;
  kind: string;
  body: string | null;
}
const entries = () => db.prepare('SELECT seq, kind, body FROM sync_outbox ORDER BY seq').all() as Entry[];
const realBytes = () =>
  db.prepare('SELECT coalesce(sum(octet_length(body)), 0) FROM sync_outbox').pluck().get() as number;

/** Readings per node and hour in sixHours(). */
const PER_HOUR = 60;

/**
 * Six hours of readings every minute from two nodes (odd values, so sums are not round), an
 * hour per write (one `readings` entry of 120 rows), a text every hour in between.
 */
function sixHours(): void {
  const writer = new ReadingWriter(db);
  const messages = new MessageRepository(db);
  for (let hour = 0; hour < 6; hour++) {
    const batch = [];
    for (let i = 0; i < PER_HOUR; i++) {
      const ts = T0 + hour * HOUR + i * MINUTE;
      for (const [n, nodeId] of NODES.entries()) {
        batch.push({ nodeId, timestamp: ts, temperatureC: 10 + i * 0.1 + n, windDirection: (i * 37) % 360 });
      }
    }
    writer.write(batch);
    messages.createOutbound({
      owner: 'alice',
      ownerName: 'Alice',
      nodeId: NODES[0]!,
      senderNodeId: null,
      text: `hour ${hour}`,
      at: T0 + hour * HOUR,
    });
  }
}

/** The bucket's figures as the hub holds them (the writer's open bucket, or the table's row). */
function rollupRow(interval: RollupInterval, nodeId: string, start: number) {
  const row = rollup(db, ROLLUP_TABLE[interval] as 'readings_hourly' | 'readings_daily', nodeId).find(
    (r) => r.bucket_start === start,
  )!;
  const { node_id: _node, bucket_start: _start, ...figures } = row;
  return figures;
}

describe('enforceBudget', () => {
  it('drops the oldest readings only, appends their buckets’ rollups, counts them, and keeps the sequence whole', () => {
    sixHours();
    const outbox = new Outbox(db);
    const before = entries();
    const lastBefore = outbox.lastSeq();
    const stats = outbox.stats();
    expect(stats.approxBytes).toBe(realBytes());
    const budget = Math.round(stats.approxBytes * 0.7);

    const dropped = outbox.enforceBudget(budget);
    expect(dropped).toBeGreaterThan(0);
    const after = entries();
    const after1 = outbox.stats();
    expect(after1.approxBytes).toBe(realBytes());
    expect(after1.approxBytes).toBeLessThanOrEqual(budget);
    expect(after1.droppedTotal).toBe(dropped);

    // Oldest first, whole entries: the dropped entries are the first readings entries, and
    // `dropped` counts their readings.
    const readingSeqs = before.filter((e) => e.kind === 'readings').map((e) => e.seq);
    const droppedSeqs = after.filter((e) => e.kind === 'dropped').map((e) => e.seq);
    expect(droppedSeqs).toEqual(readingSeqs.slice(0, droppedSeqs.length));
    expect(droppedSeqs.length).toBeGreaterThan(1);
    expect(droppedSeqs.length).toBeLessThan(readingSeqs.length);
    expect(dropped).toBe(droppedSeqs.length * PER_HOUR * NODES.length);
    expect(after.filter((e) => e.kind === 'dropped').every((e) => e.body === null)).toBe(true);
    // Everything else is as it was: same seq, kind and body (messages and transitions included).
    const kept = (list: Entry[]) => list.filter((e) => e.seq <= lastBefore && !droppedSeqs.includes(e.seq));
    expect(kept(after)).toEqual(kept(before));
    expect(after.filter((e) => e.kind === 'message')).toHaveLength(6);

    // One rollup entry per bucket touched, after everything that was there, with the hub's figures.
    const touched = new Set<string>();
    for (const e of before.filter((x) => droppedSeqs.includes(x.seq))) {
      for (const [node_id, ts] of (JSON.parse(e.body!) as RecordBody<'readings'>).rows) {
        for (const interval of ['1h', '1d'] as const) {
          touched.add(`${interval} ${node_id} ${bucketStart(ts, interval)}`);
        }
      }
    }
    const rollups = after.filter((e) => e.seq > lastBefore);
    expect(rollups.every((e) => e.kind === 'rollup')).toBe(true);
    const bodies = rollups.map((e) => JSON.parse(e.body!) as RecordBody<'rollup'>);
    expect(new Set(bodies.map((b) => `${b.interval} ${b.node_id} ${b.bucket_start}`))).toEqual(touched);
    expect(bodies.length).toBe(touched.size);
    for (const { interval, node_id, bucket_start, ...figures } of bodies) {
      expect(figures).toEqual(rollupRow(interval, node_id, bucket_start));
    }
    expect(bodies.some((b) => b.interval === '1d')).toBe(true);

    // A batch names the dropped runs; it is a valid protocol batch.
    const batch = outbox.readBatch({ maxRecords: 5_000, maxBytes: 4 * 1024 * 1024 })!;
    expect(batch.dropped.length).toBeGreaterThan(0);
    expect(batch.dropped.reduce((n, [a, b]) => n + b - a + 1, 0)).toBe(droppedSeqs.length);
    const parsed = batchSchema.parse({
      protocol: 1,
      site_id: 'site-a',
      first_seq: batch.firstSeq,
      last_seq: batch.lastSeq,
      records: JSON.parse(batch.recordsJson),
      dropped: batch.dropped,
      sent_at: T0,
    });
    expect(parsed.records.filter((r) => r.kind === 'rollup')).toHaveLength(touched.size);

    // Under budget: nothing more. The count survives a restart.
    expect(outbox.enforceBudget(budget)).toBe(0);
    closeDatabase(db);
    db = openDatabase(file);
    expect(new Outbox(db).stats()).toMatchObject({ droppedTotal: dropped, approxBytes: realBytes() });
  });

  it('never drops messages, transitions or rollups, even with a budget of zero', () => {
    sixHours();
    const outbox = new Outbox(db);
    const others = () => entries().filter((e) => e.kind !== 'readings' && e.kind !== 'dropped');
    const before = others();
    const readings = 6 * PER_HOUR * NODES.length;

    expect(outbox.enforceBudget(0)).toBe(readings);
    expect(entries().filter((e) => e.kind === 'readings')).toEqual([]);
    const after = others();
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length).every((e) => e.kind === 'rollup')).toBe(true);

    // Nothing left to drop: the rollups and messages stay, over budget as they are.
    expect(outbox.enforceBudget(0)).toBe(0);
    expect(others()).toEqual(after);
    expect(outbox.stats().droppedTotal).toBe(readings);
  });

  it('does not drop readings whose rollups would outweigh them', () => {
    // One reading an hour: each dropped reading would cost a rollup record of its own.
    const writer = new ReadingWriter(db);
    for (let h = 0; h < 30; h++)
      writer.write([{ nodeId: NODES[0]!, timestamp: T0 + h * HOUR, pressurePa: 1e5 }]);
    const outbox = new Outbox(db);
    expect(outbox.enforceBudget(100)).toBe(0);
    expect(entries().every((e) => e.kind === 'readings')).toBe(true);
  });

  it('keeps approxBytes honest when another Outbox acknowledged or dropped meanwhile', () => {
    sixHours();
    const one = new Outbox(db);
    const two = new Outbox(db);
    expect(one.stats().approxBytes).toBe(realBytes());
    two.acknowledge(10);
    expect(one.stats().approxBytes).toBe(realBytes());
    two.enforceBudget(Math.round(realBytes() * 0.8));
    expect(one.stats().approxBytes).toBe(realBytes());
    one.acknowledge(200);
    new ReadingWriter(db).write([{ nodeId: NODES[1]!, timestamp: T0 + 7 * HOUR, temperatureC: 9 }]);
    expect(one.stats().approxBytes).toBe(realBytes());
    expect(two.stats().approxBytes).toBe(realBytes());
  });
});
