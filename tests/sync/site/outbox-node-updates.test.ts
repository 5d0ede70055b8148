/**
 * Node updates in the outbox (sync/site/outbox-schema.ts, migration 3): a radio site updates a
 * node with nearly every packet, and the upstream keeps only a node's newest state. So a node's
 * newer state goes into its newest entry while no batch has read that entry, and into a new
 * entry once one has: offline for a week, 50 nodes leave 50 node entries, not 100,000, and a
 * batch read again (sent again after a failure) is the batch read before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { batchSchema } from '../../../sync/protocol.js';
import { Outbox } from '../../../sync/site/outbox.js';
import { enableOutbox } from '../../../sync/site/outbox-schema.js';

const T0 = Date.UTC(2026, 10, 1);
const MINUTE = 60_000;
const nodeId = (i: number) => `!${(0x100 + i).toString(16).padStart(8, '0')}`;

let dir: string;
let db: Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-outbox-nodes-'));
  db = openDatabase(join(dir, 'hub.sqlite'));
  enableOutbox(db);
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

const limits = { maxRecords: 5_000, maxBytes: 4 * 1024 * 1024 };
type SentRecord = { seq: number; kind: string; through?: number; body: Record<string, unknown> };
const recordsOf = (json: string) => JSON.parse(json) as SentRecord[];

describe('node updates in the outbox', () => {
  it('a week offline: one entry per node with its newest state, and the readings in between merged', () => {
    const nodes = new NodeRepository(db);
    const writer = new ReadingWriter(db);
    // 5 nodes, each heard every 5 minutes for a day: a reading and a node update per packet.
    for (let round = 0; round < 288; round++) {
      for (let i = 0; i < 5; i++) {
        const at = T0 + round * 5 * MINUTE + i * 1_000;
        writer.write([{ nodeId: nodeId(i), timestamp: at, temperatureC: round / 10 }]);
        nodes.upsert({ nodeNum: 0x100 + i, nodeId: nodeId(i), lastHeard: at, snr: (round % 20) - 5 }, at);
      }
    }
    const outbox = new Outbox(db);
    const batch = outbox.readBatch(limits)!;
    expect(batchSchema.parse({ ...batchFields(batch), records: recordsOf(batch.recordsJson) })).toBeTruthy();
    const records = recordsOf(batch.recordsJson);
    const nodeRecords = records.filter((r) => r.kind === 'node');
    expect(nodeRecords).toHaveLength(5);
    for (const [i, record] of nodeRecords.entries()) {
      expect(record.body).toMatchObject({
        node_id: nodeId(i),
        last_heard: T0 + 287 * 5 * MINUTE + i * 1_000,
        snr: (287 % 20) - 5,
      });
    }
    // Every reading is there, once, in runs around the 5 node entries (at most 6 records).
    const rows = records.filter((r) => r.kind === 'readings').flatMap((r) => r.body.rows as unknown[][]);
    expect(rows).toHaveLength(288 * 5);
    expect(records.length).toBeLessThanOrEqual(5 + 6 + Math.ceil((288 * 5) / 1_000));
    // The batch covers the whole sequence, no gap.
    expect(batch.firstSeq).toBe(1);
    expect(batch.lastSeq).toBe(outbox.lastSeq());
  });

  it('leaves an entry a batch has read as it was: the newer state goes into a new entry, and the batch read again is the same', () => {
    const nodes = new NodeRepository(db);
    nodes.upsert({ nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0, snr: 1 }, T0);
    nodes.upsert({ nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0 + MINUTE, snr: 2 }, T0 + MINUTE);
    const outbox = new Outbox(db);
    const first = outbox.readBatch(limits)!;
    expect(recordsOf(first.recordsJson)).toHaveLength(1);
    expect(recordsOf(first.recordsJson)[0]!.body).toMatchObject({ snr: 2 });

    // In flight (not acknowledged): two more updates of the node, then another node's.
    nodes.upsert({ nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0 + 2 * MINUTE, snr: 3 }, T0 + 2 * MINUTE);
    nodes.upsert({ nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0 + 3 * MINUTE, snr: 4 }, T0 + 3 * MINUTE);
    nodes.upsert({ nodeNum: 0x101, nodeId: nodeId(1), lastHeard: T0 + 3 * MINUTE }, T0 + 3 * MINUTE);
    // Sent again (the first try failed): byte for byte what was sent.
    const again = outbox.readBatch({ ...limits, upTo: first.lastSeq })!;
    expect(again.recordsJson).toBe(first.recordsJson);
    const next = outbox.readBatch({ ...limits, after: first.lastSeq })!;
    expect(recordsOf(next.recordsJson).map((r) => [r.seq, r.body.node_id, r.body.snr])).toEqual([
      [2, nodeId(0), 4],
      [3, nodeId(1), null],
    ]);
  });

  it('after a restart, entries read before it stay as they were', () => {
    const nodes = new NodeRepository(db);
    nodes.upsert({ nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0, snr: 1 }, T0);
    const sent = new Outbox(db).readBatch(limits)!;
    closeDatabase(db);
    db = openDatabase(join(dir, 'hub.sqlite'));
    enableOutbox(db);
    new NodeRepository(db).upsert(
      { nodeNum: 0x100, nodeId: nodeId(0), lastHeard: T0 + MINUTE, snr: 9 },
      T0 + MINUTE,
    );
    const outbox = new Outbox(db);
    expect(outbox.readBatch({ ...limits, upTo: sent.lastSeq })!.recordsJson).toBe(sent.recordsJson);
    expect(outbox.lastSeq()).toBe(2);
  });
});

function batchFields(batch: { firstSeq: number; lastSeq: number; dropped: [number, number][] }) {
  return {
    protocol: 1,
    site_id: 'ridge',
    first_seq: batch.firstSeq,
    last_seq: batch.lastSeq,
    dropped: batch.dropped,
    sent_at: T0,
  };
}
