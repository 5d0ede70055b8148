/**
 * The site outbox on a real SQLite file: every write path's records arrive as protocol.ts
 * records in commit order, in the transaction of the record, and are read, acknowledged and
 * switched off as the push actor needs. Readings come from the reading writer's observer: one
 * `readings` entry per MAX_READINGS_ROWS rows of a write transaction, carrying exactly what it
 * added; consecutive ones travel merged into one record (`through`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { migrateComponent } from '../../../src/store/component-migrations.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import {
  batchCoverageProblem,
  batchSchema,
  MAX_READINGS_ROWS,
  RECORD_KINDS,
  type SyncRecord,
  syncRecordSchema,
} from '../../../sync/protocol.js';
import { Outbox, type OutboxBatch, OutboxSequenceError } from '../../../sync/site/outbox.js';
import {
  disableOutbox,
  enableOutbox,
  migrateSyncTables,
  outboxObservesReadings,
  outboxTriggerNames,
  SYNC_COMPONENT,
  SYNC_MIGRATIONS,
} from '../../../sync/site/outbox-schema.js';
import { readingBody } from '../helpers/records.js';

const T0 = Date.UTC(2025, 4, 1);
const MINUTE = 60_000;
const A = '!0000000a';
const B = '!0000000b';

let dir: string;
let file: string;
let db: Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshhub-outbox-'));
  file = join(dir, 'hub.sqlite');
  db = openDatabase(file);
});
afterEach(() => {
  closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

const all = (outbox: Outbox) => outbox.readBatch({ maxRecords: 5_000, maxBytes: 4 * 1024 * 1024 });
const kinds = (outbox: Outbox) => all(outbox)?.records.map((r) => r.kind) ?? [];
const entryCount = () => db.prepare('SELECT count(*) FROM sync_outbox').pluck().get() as number;
/** The records as sent: what `recordsJson` says (the batch itself carries no bodies). */
const sent = (batch: OutboxBatch | undefined) =>
  batch ? (JSON.parse(batch.recordsJson) as SyncRecord[]) : [];
const entryKinds = () => db.prepare('SELECT kind FROM sync_outbox ORDER BY seq').pluck().all() as string[];
/** The rows of every `readings` entry, in order. */
const readingRows = () =>
  (
    db.prepare("SELECT body FROM sync_outbox WHERE kind = 'readings' ORDER BY seq").pluck().all() as string[]
  ).map((body) => (JSON.parse(body) as { rows: unknown[][] }).rows);
const NO_VALUES = [null, null, null, null, null, null, null, null];
type Entry = { seq: number; kind: string; body: string | null };

function asBatch(outbox: Outbox) {
  const batch = all(outbox)!;
  return {
    protocol: 1,
    site_id: 'site-a',
    first_seq: batch.firstSeq,
    last_seq: batch.lastSeq,
    records: sent(batch),
    dropped: batch.dropped,
    sent_at: T0,
  };
}

function auditEvent(key: string, at: number) {
  return {
    tenant: 'default',
    source: 'directory' as const,
    sourceKey: key,
    timestamp: at,
    service: 'Core Directory',
    operation: 'Add member to group',
    resultRaw: 'Success',
    result: 'success' as const,
    actor: 'alice@contoso.com',
    target: 'Field team',
    raw: JSON.stringify({ id: key, activityDisplayName: 'Add member to group', result: 'Success' }),
  };
}

/** Alice's text "hello" to node A, at T0. */
const ALICE_HELLO_TO_A = {
  owner: 'alice',
  ownerName: 'Alice',
  nodeId: A,
  senderNodeId: null,
  text: 'hello',
  at: T0,
};

describe('outbox records', () => {
  it('every write path writes records that parse with the protocol schemas, in commit order', () => {
    const audit = openAuditRepositories(db);
    enableOutbox(db);
    const outbox = new Outbox(db);
    const readings = new ReadingWriter(db);
    const nodes = new NodeRepository(db);
    const subscriptions = new SubscriptionRepository(db);
    const messages = new MessageRepository(db);

    readings.write([{ nodeId: A, timestamp: T0, temperatureC: 21.5, windDirection: 270 }]);
    // Fills a field (temperature it repeats with another value: the stored one stands).
    readings.write([{ nodeId: A, timestamp: T0, temperatureC: 30, humidityPercent: 40 }]);
    nodes.upsert({ nodeNum: 0xa, nodeId: A, shortName: 'A', longName: 'Alpha' }, T0);
    nodes.upsert({ nodeNum: 0xa, nodeId: A, lastHeard: T0 + MINUTE, snr: 7.25 }, T0 + MINUTE);
    const sub = subscriptions.create({ subscriber: 'alice', nodes: [B, A], source: 'cli', at: T0 });
    subscriptions.create({ subscriber: 'bob', nodes: 'all', source: 'cli', at: T0, expiresAt: T0 + 1 });
    const out = messages.createOutbound(ALICE_HELLO_TO_A);
    messages.update(out, { status: 'failed', failureCode: 'no_ack', reason: 'no ACK', at: T0 + 1 });
    messages.createInbound({
      owner: 'alice',
      ownerName: 'Alice',
      nodeId: A,
      targetNodeId: B,
      text: 'hi back',
      packetId: 7,
      at: T0 + 2,
    });
    audit.writer.writeNow([auditEvent('evt-1', T0)]);
    audit.annotations.setTags(1, ['reviewed', 'field']);
    audit.annotations.addComment(1, { author: 'alice', text: 'expected', at: T0 + 3 });

    const batch = asBatch(outbox);
    const parsed = batchSchema.parse(batch);
    expect(parsed.records).toEqual(batch.records);
    // The two readings entries (one per write) travel as one record standing for both.
    expect(batch.records.map((r) => [r.seq, r.through])).toEqual(
      batch.records.map((_, i) => (i === 0 ? [1, 2] : [i + 2, undefined])),
    );
    for (const record of batch.records) expect(syncRecordSchema.parse(record)).toEqual(record);
    expect(batch.records.map((r) => r.kind)).toEqual([
      'readings', // the new row, then the field the second write filled
      'node', // inserted, then updated before any batch read it: one entry, the newest state
      'subscription', // the row
      'subscription', // + !0000000a
      'subscription', // + !0000000b
      'subscription', // bob, all nodes
      'message',
      'message_transition',
      'message', // failed
      'message_transition',
      'message', // inbound
      'message_transition',
      'audit_event',
      'audit_tags',
      'audit_comment',
    ]);
    const body = (i: number) => batch.records[i - 1]!.body;
    // Exactly what each write added: all of the new row, then only the field the fill added.
    expect(batch.records[0]!.body).toEqual({
      rows: [
        [A, T0, 21.5, null, null, null, 270, null, null, null],
        [A, T0, null, 40, null, null, null, null, null, null],
      ],
    });
    expect(body(2)).toEqual({
      node_num: 10,
      node_id: A,
      short_name: 'A',
      long_name: 'Alpha',
      hw_model: null,
      latitude: null,
      longitude: null,
      altitude: null,
      last_heard: T0 + MINUTE,
      battery_level: null,
      snr: 7.25,
      updated_at: T0 + MINUTE,
    });
    expect(body(5)).toEqual({
      id: sub.id,
      subscriber: 'alice',
      all_nodes: false,
      node_ids: [A, B],
      status: 'active',
      expires_at: null,
      source: 'cli',
      reference: null,
      created_at: T0,
      updated_at: T0,
    });
    expect(body(6)).toMatchObject({ subscriber: 'bob', all_nodes: true, node_ids: [], expires_at: T0 + 1 });
    expect(body(9)).toEqual({
      id: out.id,
      owner: 'alice',
      owner_name: 'Alice',
      node_id: A,
      direction: 'outbound',
      sender_node_id: null,
      target_node_id: A,
      text: 'hello',
      status: 'failed',
      failure_code: 'no_ack',
      failure_reason: 'no ACK',
      created_at: T0,
      updated_at: T0 + 1,
    });
    expect(body(10)).toEqual({ message_id: out.id, seq: 2, status: 'failed', reason: 'no ACK', at: T0 + 1 });
    expect(body(13)).toEqual({
      source: 'directory',
      source_key: 'evt-1',
      ts: T0,
      service: 'Core Directory',
      operation: 'Add member to group',
      result: 'success',
      actor: 'alice@contoso.com',
      target: 'Field team',
      tags: [],
      raw: auditEvent('evt-1', T0).raw,
      ingested_at: expect.any(Number),
    });
    expect(body(14)).toEqual({ source: 'directory', source_key: 'evt-1', tags: ['reviewed', 'field'] });
    expect(body(15)).toEqual({
      source: 'directory',
      source_key: 'evt-1',
      comment_id: 1,
      author: 'alice',
      text: 'expected',
      created_at: T0 + 3,
    });
    // Every kind but rollup (outbox-budget.test.ts) and the old per-reading kind is covered here.
    expect(new Set(batch.records.map((r) => r.kind))).toEqual(
      new Set(RECORD_KINDS.filter((k) => k !== 'rollup' && k !== 'reading')),
    );
    // The entry's time is SQLite's clock at the write.
    const now = Date.now();
    for (const record of batch.records) expect(Math.abs(record.at - now)).toBeLessThan(60_000);
  });

  it('recordsJson is the records, and jsonBytes its size; no body is parsed to make them', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    new ReadingWriter(db).write([{ nodeId: A, timestamp: T0, temperatureC: 1 / 3, pressurePa: 0.1 + 0.2 }]);
    new ReadingWriter(db).write([{ nodeId: B, timestamp: T0, temperatureC: -0.5 }]);
    new NodeRepository(db).upsert({ nodeNum: 0xa, nodeId: A, longName: 'Ålpha ☂' }, T0);
    const batch = all(outbox)!;
    const records = sent(batch);
    expect(
      records.map(({ seq, kind, at, through }) => ({ seq, kind, at, ...(through ? { through } : {}) })),
    ).toEqual(batch.records);
    expect(batch.records.map((r) => Object.keys(r).sort())).toEqual([
      ['at', 'kind', 'seq', 'through'],
      ['at', 'kind', 'seq'],
    ]);
    expect(batch.jsonBytes).toBe(Buffer.byteLength(batch.recordsJson));
    // Doubles survive the trip exactly.
    expect(records[0]!.body).toEqual({
      rows: [
        [A, T0, 1 / 3, null, 0.1 + 0.2, null, null, null, null, null],
        [B, T0, -0.5, ...NO_VALUES.slice(1)],
      ],
    });
    // The byte count holds at every size limit, merged records included.
    for (let max = 1; max < batch.jsonBytes + 10; max += 7) {
      const part = outbox.readBatch({ maxRecords: 100, maxBytes: max })!;
      expect(part.jsonBytes).toBe(Buffer.byteLength(part.recordsJson));
      expect(part.jsonBytes <= max || part.records.length === 1).toBe(true);
    }
  });

  it('no record for updates that change nothing the upstream shows', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const readings = new ReadingWriter(db);
    const messages = new MessageRepository(db);
    const nodes = new NodeRepository(db);
    readings.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    const out = messages.createOutbound(ALICE_HELLO_TO_A);
    nodes.upsert({ nodeNum: 0xa, nodeId: A, shortName: 'A' }, T0);
    const before = entryCount();

    // A replayed reading, a no-op UPDATE of a reading and of a node.
    readings.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    db.prepare('UPDATE readings SET temperature_c = temperature_c, humidity_percent = NULL').run();
    nodes.upsert({ nodeNum: 0xa, nodeId: A, shortName: 'A' }, T0);
    // Send-attempt bookkeeping: attempts, packet_id, ack_deadline, next_attempt_at.
    expect(messages.beginAttempt(out, 1234, T0 + 1, T0 + 30_000)).toBe(true);
    messages.abandonAttempt({ ...out, attempts: 1 }, 1234, T0 + 2);
    db.prepare('UPDATE messages SET status = status, owner = owner, attempts = attempts + 5').run();
    expect(entryCount()).toBe(before);

    // A retry that stays queued: its transition is a record, the message (unchanged) is not.
    messages.update(out, { status: 'queued', reason: 'retry 1', nextAttemptAt: T0 + 5_000, at: T0 + 3 });
    expect(kinds(outbox).slice(before)).toEqual(['message_transition']);
  });

  it('carries station ids as the ingest takes them; an id the protocol cannot carry stays local', () => {
    enableOutbox(db);
    const writer = new ReadingWriter(db);
    writer.write([
      { nodeId: 'roof-1', timestamp: T0, temperatureC: 20 },
      { nodeId: 'bad id', timestamp: T0, temperatureC: 20 }, // no ingest path stores one
      { nodeId: A, timestamp: T0, temperatureC: 20 },
      { nodeId: 'x'.repeat(65), timestamp: T0, temperatureC: 20 },
      { nodeId: 'Weather.Station_2:a!', timestamp: T0, temperatureC: 21 },
    ]);
    writer.write([{ nodeId: 'roof-1', timestamp: T0, humidityPercent: 50 }]);
    expect(readingRows().map((rows) => rows.map((r) => r[0]))).toEqual([
      ['roof-1', A, 'Weather.Station_2:a!'],
      ['roof-1'],
    ]);
    expect(batchSchema.safeParse(asBatch(new Outbox(db))).success).toBe(true);
  });

  it('writes one readings entry per MAX_READINGS_ROWS rows of a write transaction', () => {
    enableOutbox(db);
    const writer = new ReadingWriter(db);
    const count = 2 * MAX_READINGS_ROWS + 500;
    writer.write(
      Array.from({ length: count }, (_, i) => ({ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i })),
    );
    // Two transactions in one: a writer call inside an outer transaction is its own entry.
    db.transaction(() => {
      writer.write([{ nodeId: B, timestamp: T0, temperatureC: 1 }]);
      writer.write([{ nodeId: B, timestamp: T0 + MINUTE, temperatureC: 2 }]);
    })();
    const rows = readingRows();
    expect(rows.map((r) => r.length)).toEqual([MAX_READINGS_ROWS, MAX_READINGS_ROWS, 500, 1, 1]);
    expect(rows.flat().map((r) => r[2])).toEqual([...Array.from({ length: count }, (_, i) => i), 1, 2]);
    // Sent merged up to MAX_READINGS_ROWS rows a record: the three big ones alone, the last two together.
    const batch = all(new Outbox(db))!;
    expect(batch.records.map((r) => [r.seq, r.through])).toEqual([
      [1, undefined],
      [2, undefined],
      [3, 5],
    ]);
    expect(batchSchema.safeParse(asBatch(new Outbox(db))).success).toBe(true);
  });

  it('merges consecutive readings entries only, up to MAX_READINGS_ROWS rows, and never across another kind', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const writer = new ReadingWriter(db);
    const nodes = new NodeRepository(db);
    let t = T0;
    const next = () => {
      t += MINUTE;
      return t;
    };
    const one = () => writer.write([{ nodeId: A, timestamp: next(), temperatureC: 1 }]);
    one();
    one();
    nodes.upsert({ nodeNum: 0xa, nodeId: A }, T0);
    one();
    writer.write(
      Array.from({ length: MAX_READINGS_ROWS - 1 }, () => ({
        nodeId: A,
        timestamp: next(),
        pressurePa: 1,
      })),
    );
    one(); // one row too many for the record before
    expect(entryKinds()).toEqual(['readings', 'readings', 'node', 'readings', 'readings', 'readings']);
    const batch = all(outbox)!;
    expect(batch.records.map((r) => [r.kind, r.seq, r.through])).toEqual([
      ['readings', 1, 2],
      ['node', 3, undefined],
      ['readings', 4, 5],
      ['readings', 6, undefined],
    ]);
    const records = sent(batch);
    expect(records.map((r) => (r.kind === 'readings' ? r.body.rows.length : 0))).toEqual([
      2,
      0,
      MAX_READINGS_ROWS,
      1,
    ]);
    expect(batchSchema.safeParse(asBatch(outbox)).success).toBe(true);
  });

  it('subscription changes send the whole subscription, node ids in order', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const subscriptions = new SubscriptionRepository(db);
    const sub = subscriptions.create({ subscriber: 'alice', nodes: [A, B], source: 'cli', at: T0 });
    const from = entryCount();
    subscriptions.setStatus(sub.id, 'revoked', T0 + 1);
    subscriptions.setStatus(sub.id, 'revoked', T0 + 1); // no change: no record
    subscriptions.removeNodes('alice', [A], T0 + 2);
    const records = sent(all(outbox)).slice(from);
    expect(records.map((r) => r.body)).toEqual([
      expect.objectContaining({ status: 'revoked', node_ids: [A, B], updated_at: T0 + 1 }),
    ]);
    // A revoked subscription is not a node list removeNodes touches; a live one is.
    const live = subscriptions.create({ subscriber: 'bob', nodes: [A, B], source: 'cli', at: T0 });
    const next = entryCount();
    subscriptions.removeNodes('bob', [A], T0 + 3);
    expect(
      sent(all(outbox))
        .slice(next)
        .map((r) => r.body),
    ).toEqual([expect.objectContaining({ id: live.id, node_ids: [B], status: 'active' })]);
  });
});

describe('transactions', () => {
  it('a rolled-back transaction leaves no entry and no gap in the sequence', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const nodes = new NodeRepository(db);
    const messages = new MessageRepository(db);
    nodes.upsert({ nodeNum: 0xa, nodeId: A }, T0);
    expect(outbox.lastSeq()).toBe(1);

    expect(() =>
      db.transaction(() => {
        nodes.upsert({ nodeNum: 0xb, nodeId: B }, T0);
        messages.createOutbound({
          owner: 'alice',
          ownerName: 'Alice',
          nodeId: B,
          senderNodeId: null,
          text: 'lost',
          at: T0,
        });
        throw new Error('crash before commit');
      })(),
    ).toThrow('crash before commit');
    expect(entryCount()).toBe(1);
    expect(outbox.lastSeq()).toBe(1);

    nodes.upsert({ nodeNum: 0xb, nodeId: B }, T0);
    expect(all(outbox)!.records.map((r) => r.seq)).toEqual([1, 2]);
  });

  it('a reading batch that fails stores neither readings nor entries', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const writer = new ReadingWriter(db);
    writer.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    db.exec(`CREATE TRIGGER fail_on_b BEFORE INSERT ON reading_rows
      WHEN NEW.node_key = (SELECT node_key FROM reading_nodes WHERE node_id = '${B}')
      BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    expect(() =>
      writer.write([
        { nodeId: A, timestamp: T0 + MINUTE, temperatureC: 21 },
        { nodeId: B, timestamp: T0 + MINUTE, temperatureC: 22 },
      ]),
    ).toThrow('disk full');
    expect(outbox.stats()).toMatchObject({ lastSeq: 1, depth: 1 });
    expect(readingRows()).toEqual([[[A, T0, 20, ...NO_VALUES.slice(1)]]]);
    db.exec('DROP TRIGGER fail_on_b');
    writer.write([{ nodeId: B, timestamp: T0 + MINUTE, temperatureC: 22 }]);
    expect(readingRows()).toEqual([
      [[A, T0, 20, ...NO_VALUES.slice(1)]],
      [[B, T0 + MINUTE, 22, ...NO_VALUES.slice(1)]],
    ]);
    expect(outbox.stats()).toMatchObject({ lastSeq: 2, depth: 2 });
  });

  it('an observer that throws fails the write: no readings, no entry', () => {
    enableOutbox(db);
    const writer = new ReadingWriter(db);
    db.exec(
      `CREATE TRIGGER fail_outbox BEFORE INSERT ON sync_outbox BEGIN SELECT RAISE(ABORT, 'outbox full'); END`,
    );
    expect(() => writer.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }])).toThrow('outbox full');
    expect(db.prepare('SELECT count(*) FROM readings').pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM readings_hourly').pluck().get()).toBe(0);
    db.exec('DROP TRIGGER fail_outbox');
    // The writer's memory of the latest row moved with nothing: the same reading is new again.
    writer.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    expect(readingRows()).toEqual([[[A, T0, 20, ...NO_VALUES.slice(1)]]]);
  });
});

describe('readBatch', () => {
  /** `n` entries: one reading per write. */
  function fill(n: number): void {
    const writer = new ReadingWriter(db);
    for (let i = 0; i < n; i++) writer.write([{ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i }]);
  }

  it('returns undefined when there is nothing to send', () => {
    enableOutbox(db);
    expect(new Outbox(db).readBatch({ maxRecords: 10, maxBytes: 10_000 })).toBeUndefined();
  });

  it('respects maxRecords and maxBytes, keeps order, and batches cover the sequence exactly once', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    // Readings alternating with node updates (each of another node, so none takes in another):
    // nothing to merge, one record per entry.
    const writer = new ReadingWriter(db);
    const nodes = new NodeRepository(db);
    for (let i = 0; i < 10; i++) {
      writer.write([{ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i }]);
      const num = 0x100 + i;
      nodes.upsert(
        { nodeNum: num, nodeId: `!${num.toString(16).padStart(8, '0')}`, snr: i },
        T0 + i * MINUTE,
      );
    }
    const first = outbox.readBatch({ maxRecords: 7, maxBytes: 1_000_000 })!;
    expect(first.records.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(first).toMatchObject({ firstSeq: 1, lastSeq: 7, dropped: [] });
    const three = outbox.readBatch({ maxRecords: 3, maxBytes: 1_000_000 })!.jsonBytes;
    expect(outbox.readBatch({ maxRecords: 100, maxBytes: three })!.records).toHaveLength(3);
    expect(outbox.readBatch({ maxRecords: 100, maxBytes: three - 1 })!.records).toHaveLength(2);
    // Always at least one record, however small the byte limit.
    expect(outbox.readBatch({ maxRecords: 100, maxBytes: 1 })!.records).toHaveLength(1);

    const seen: number[] = [];
    const temperatures: unknown[] = [];
    for (let batch = outbox.readBatch({ maxRecords: 6, maxBytes: 4_000 }); batch; ) {
      expect(
        batchCoverageProblem({
          first_seq: batch.firstSeq,
          last_seq: batch.lastSeq,
          records: batch.records,
          dropped: batch.dropped,
        }),
      ).toBeUndefined();
      expect(batch.records.length).toBeLessThanOrEqual(6);
      seen.push(...batch.records.map((r) => r.seq));
      for (const r of sent(batch)) {
        if (r.kind === 'readings') temperatures.push(...r.body.rows.map((row) => row[2]));
      }
      outbox.acknowledge(batch.lastSeq);
      batch = outbox.readBatch({ maxRecords: 6, maxBytes: 4_000 });
    }
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(temperatures).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('refuses to make a batch over a hole in the sequence', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    fill(3);
    db.prepare('DELETE FROM sync_outbox WHERE seq = 2').run();
    expect(() => all(outbox)).toThrow(OutboxSequenceError);
    expect(() => all(outbox)).toThrow('outbox sequence 2 is missing (the next entry is 3)');
  });
});

describe('acknowledge', () => {
  it('deletes what the upstream stored, persists the cursor across a reopen, and never moves back', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const writer = new ReadingWriter(db);
    for (let i = 0; i < 5; i++) writer.write([{ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i }]);
    outbox.acknowledge(3);
    expect(db.prepare('SELECT seq FROM sync_outbox ORDER BY seq').pluck().all()).toEqual([4, 5]);
    outbox.acknowledge(2); // behind the cursor: nothing
    expect(outbox.stats()).toMatchObject({ ackedSeq: 3, lastSeq: 5, depth: 2 });

    closeDatabase(db);
    db = openDatabase(file);
    enableOutbox(db);
    const reopened = new Outbox(db);
    expect(reopened.ackedSeq()).toBe(3);
    expect(all(reopened)).toMatchObject({ firstSeq: 4, lastSeq: 5 });

    reopened.acknowledge(99); // past the last entry: clamped
    expect(reopened.stats()).toMatchObject({ ackedSeq: 5, lastSeq: 5, depth: 0, oldestAt: null });
    expect(entryCount()).toBe(0);
    // The sequence goes on after everything was deleted (AUTOINCREMENT, not max(seq) + 1).
    new ReadingWriter(db).write([{ nodeId: A, timestamp: T0 + 10 * MINUTE, temperatureC: 1 }]);
    expect(all(reopened)).toMatchObject({ firstSeq: 6, lastSeq: 6 });
    expect(() => reopened.acknowledge(1.5)).toThrow(RangeError);
  });

  it('stats: depth, oldest entry time and bytes waiting', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    expect(outbox.stats()).toEqual({
      depth: 0,
      ackedSeq: 0,
      lastSeq: 0,
      oldestAt: null,
      droppedTotal: 0,
      approxBytes: 0,
    });
    new NodeRepository(db).upsert({ nodeNum: 0xa, nodeId: A, shortName: 'A' }, T0);
    new NodeRepository(db).upsert({ nodeNum: 0xb, nodeId: B, shortName: 'B' }, T0);
    const bodies = db.prepare('SELECT body FROM sync_outbox ORDER BY seq').pluck().all() as string[];
    const stats = outbox.stats();
    expect(stats).toMatchObject({ depth: 2, lastSeq: 2 });
    expect(stats.approxBytes).toBe(Buffer.byteLength(bodies.join('')));
    expect(Math.abs(stats.oldestAt! - Date.now())).toBeLessThan(60_000);
    outbox.acknowledge(1);
    expect(outbox.stats().approxBytes).toBe(Buffer.byteLength(bodies[1]!));
  });
});

describe('switching the outbox on and off', () => {
  it('disableOutbox stops entries and keeps the tables; enableOutbox twice writes one entry per record', () => {
    enableOutbox(db);
    enableOutbox(db);
    const outbox = new Outbox(db);
    const nodes = new NodeRepository(db);
    nodes.upsert({ nodeNum: 0xa, nodeId: A }, T0);
    expect(entryCount()).toBe(1);

    disableOutbox(db);
    expect(outboxTriggerNames(db)).toEqual([]);
    nodes.upsert({ nodeNum: 0xb, nodeId: B }, T0);
    new ReadingWriter(db).write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    expect(entryCount()).toBe(1);
    expect(outbox.stats()).toMatchObject({ depth: 1, lastSeq: 1 });
    disableOutbox(db); // harmless too

    enableOutbox(db);
    nodes.upsert({ nodeNum: 0xc, nodeId: '!0000000c' }, T0);
    expect(kinds(outbox)).toEqual(['node', 'node']);
    expect(outbox.lastSeq()).toBe(2);
  });

  it('registers the readings observer once however often enabled, and not at all when disabled', () => {
    expect(outboxObservesReadings(db)).toBe(false);
    enableOutbox(db);
    enableOutbox(db);
    expect(outboxObservesReadings(db)).toBe(true);
    const writer = new ReadingWriter(db);
    writer.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    expect(entryKinds()).toEqual(['readings']);
    disableOutbox(db);
    expect(outboxObservesReadings(db)).toBe(false);
    writer.write([{ nodeId: A, timestamp: T0 + MINUTE, temperatureC: 21 }]);
    expect(entryKinds()).toEqual(['readings']);
    enableOutbox(db);
    writer.write([{ nodeId: A, timestamp: T0 + 2 * MINUTE, temperatureC: 22 }]);
    expect(readingRows().map((rows) => rows.map((r) => r[2]))).toEqual([[20], [22]]);
  });

  it('turns the entries of the old per-reading triggers into one-row readings entries, same seq', () => {
    // A hub that synced with version 1 of the schema: `reading` entries, the whole row each.
    migrateComponent(db, SYNC_COMPONENT, SYNC_MIGRATIONS.slice(0, 1));
    const insert = db.prepare('INSERT INTO sync_outbox (kind, at, body) VALUES (?, ?, json(?))');
    const row = (ts: number, t: number | null, h: number | null) =>
      JSON.stringify(readingBody(A, ts, { temperature_c: t, humidity_percent: h }));
    insert.run('reading', T0, row(T0, 1 / 3, null));
    insert.run('node', T0, JSON.stringify({ node_num: 10 }));
    insert.run('reading', T0 + 1, row(T0, 1 / 3, 0.1 + 0.2));
    insert.run('dropped', T0 + 2, null);
    db.prepare("UPDATE sync_outbox SET body = NULL WHERE kind = 'dropped'").run();
    migrateSyncTables(db);
    const entries = (db.prepare('SELECT seq, kind, body FROM sync_outbox ORDER BY seq').all() as Entry[]).map(
      (e) => ({ ...e, body: e.body === null ? null : JSON.parse(e.body) }),
    );
    // The doubles exactly as they were.
    expect(entries).toEqual([
      { seq: 1, kind: 'readings', body: { rows: [[A, T0, 1 / 3, ...NO_VALUES.slice(1)]] } },
      { seq: 2, kind: 'node', body: { node_num: 10 } },
      { seq: 3, kind: 'readings', body: { rows: [[A, T0, 1 / 3, 0.1 + 0.2, ...NO_VALUES.slice(2)]] } },
      { seq: 4, kind: 'dropped', body: null },
    ]);
    // And they travel merged like any others.
    const batch = new Outbox(db).readBatch({ maxRecords: 10, maxBytes: 100_000 })!;
    expect(batch.records.map((r) => [r.seq, r.kind])).toEqual([
      [1, 'readings'],
      [2, 'node'],
      [3, 'readings'],
    ]);
    expect(batch.dropped).toEqual([[4, 4]]);
  });

  it('creates the audit triggers only once the audit tables exist', () => {
    enableOutbox(db);
    const core = outboxTriggerNames(db);
    expect(core.every((n) => n.startsWith('sync_outbox_'))).toBe(true);
    expect(core.some((n) => n.includes('audit'))).toBe(false);
    const audit = openAuditRepositories(db);
    enableOutbox(db); // again, as after the plugin migrated its tables
    expect(outboxTriggerNames(db).filter((n) => n.includes('audit'))).toEqual([
      'sync_outbox_audit_event_comments_insert',
      'sync_outbox_audit_event_raw_insert',
      'sync_outbox_audit_events_tags',
    ]);
    audit.writer.writeNow([auditEvent('evt-1', T0), auditEvent('evt-1', T0)]); // a duplicate: once
    expect(kinds(new Outbox(db))).toEqual(['audit_event']);
  });

  it('carries a named tenant with its audit records; the default tenant’s are as before', () => {
    const audit = openAuditRepositories(db);
    enableOutbox(db);
    audit.writer.writeNow([auditEvent('guest-1', T0), { ...auditEvent('guest-1', T0), tenant: 'contoso' }]);
    audit.annotations.setTags(2, ['seen']);
    audit.annotations.addComment(2, { author: 'alice', text: 'expected', at: T0 + 3 });
    const { records } = asBatch(new Outbox(db));
    for (const record of records) expect(syncRecordSchema.parse(record)).toEqual(record);
    expect(records.map((r) => [r.kind, (r.body as { tenant?: string }).tenant ?? null])).toEqual([
      ['audit_event', null],
      ['audit_event', 'contoso'],
      ['audit_tags', 'contoso'],
      ['audit_comment', 'contoso'],
    ]);
  });

  it('a hub that never enabled sync can still read its (empty) outbox', () => {
    const outbox = new Outbox(db);
    expect(outboxTriggerNames(db)).toEqual([]);
    expect(outbox.stats().depth).toBe(0);
    outbox.setState('last_error', 'refused');
    expect(outbox.getState('last_error')).toBe('refused');
    outbox.setState('last_error', null);
    expect(outbox.getState('last_error')).toBeUndefined();
  });
});
