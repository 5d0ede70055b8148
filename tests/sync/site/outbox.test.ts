/**
 * The site outbox on a real SQLite file: every write path's records arrive as protocol.ts
 * records in commit order, in the transaction of the record, and are read, acknowledged and
 * switched off as the push actor needs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAuditRepositories } from '../../../plugins/audit/store/audit-store.js';
import { MessageRepository } from '../../../src/messaging/message-repository.js';
import { SubscriptionRepository } from '../../../src/messaging/subscription-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../../src/store/database.js';
import { NodeRepository } from '../../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../../src/store/reading-writer.js';
import { batchCoverageProblem, batchSchema, RECORD_KINDS, syncRecordSchema } from '../../../sync/protocol.js';
import { Outbox, OutboxSequenceError } from '../../../sync/site/outbox.js';
import { disableOutbox, enableOutbox, outboxTriggerNames } from '../../../sync/site/outbox-schema.js';

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

function asBatch(outbox: Outbox) {
  const batch = all(outbox)!;
  return {
    protocol: 1,
    site_id: 'site-a',
    first_seq: batch.firstSeq,
    last_seq: batch.lastSeq,
    records: batch.records,
    dropped: batch.dropped,
    sent_at: T0,
  };
}

function auditEvent(key: string, at: number) {
  return {
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
    readings.write([{ nodeId: A, timestamp: T0, humidityPercent: 40 }]); // fills a field: an update
    nodes.upsert({ nodeNum: 0xa, nodeId: A, shortName: 'A', longName: 'Alpha' }, T0);
    nodes.upsert({ nodeNum: 0xa, nodeId: A, lastHeard: T0 + MINUTE, snr: 7.25 }, T0 + MINUTE);
    const sub = subscriptions.create({ subscriber: 'alice', nodes: [B, A], source: 'cli', at: T0 });
    subscriptions.create({ subscriber: 'bob', nodes: 'all', source: 'cli', at: T0, expiresAt: T0 + 1 });
    const out = messages.createOutbound({
      owner: 'alice',
      ownerName: 'Alice',
      nodeId: A,
      senderNodeId: null,
      text: 'hello',
      at: T0,
    });
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
    expect(batch.records.map((r) => r.seq)).toEqual(batch.records.map((_, i) => i + 1));
    for (const record of batch.records) expect(syncRecordSchema.parse(record)).toEqual(record);
    expect(batch.records.map((r) => r.kind)).toEqual([
      'reading',
      'reading',
      'node',
      'node',
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
    const body = (i: number) => batch.records[i]!.body;
    expect(body(1)).toEqual({
      node_id: A,
      ts: T0,
      temperature_c: 21.5,
      humidity_percent: 40,
      pressure_pa: null,
      wind_speed_ms: null,
      wind_direction: 270,
      pm25_ugm3: null,
      pm10_ugm3: null,
      gas_resistance_kohm: null,
    });
    expect(body(3)).toEqual({
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
    expect(body(6)).toEqual({
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
    expect(body(7)).toMatchObject({ subscriber: 'bob', all_nodes: true, node_ids: [], expires_at: T0 + 1 });
    expect(body(10)).toEqual({
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
    expect(body(11)).toEqual({ message_id: out.id, seq: 2, status: 'failed', reason: 'no ACK', at: T0 + 1 });
    expect(body(14)).toEqual({
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
    expect(body(15)).toEqual({ source: 'directory', source_key: 'evt-1', tags: ['reviewed', 'field'] });
    expect(body(16)).toEqual({
      source: 'directory',
      source_key: 'evt-1',
      comment_id: 1,
      author: 'alice',
      text: 'expected',
      created_at: T0 + 3,
    });
    // Every kind but rollup (outbox-budget.test.ts) is covered here.
    expect(new Set(batch.records.map((r) => r.kind))).toEqual(
      new Set(RECORD_KINDS.filter((k) => k !== 'rollup')),
    );
    // The entry's time is SQLite's clock at the write.
    const now = Date.now();
    for (const record of batch.records) expect(Math.abs(record.at - now)).toBeLessThan(60_000);
  });

  it('recordsJson is the records, and jsonBytes its size', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    new ReadingWriter(db).write([{ nodeId: A, timestamp: T0, temperatureC: 1 / 3, pressurePa: 0.1 + 0.2 }]);
    new NodeRepository(db).upsert({ nodeNum: 0xa, nodeId: A, longName: 'Ålpha ☂' }, T0);
    const batch = all(outbox)!;
    expect(JSON.parse(batch.recordsJson)).toEqual(batch.records);
    expect(batch.jsonBytes).toBe(Buffer.byteLength(batch.recordsJson));
    // Doubles survive the trip through json_object() exactly.
    expect(batch.records[0]!.body).toMatchObject({ temperature_c: 1 / 3, pressure_pa: 0.1 + 0.2 });
  });

  it('no record for updates that change nothing the upstream shows', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const readings = new ReadingWriter(db);
    const messages = new MessageRepository(db);
    const nodes = new NodeRepository(db);
    readings.write([{ nodeId: A, timestamp: T0, temperatureC: 20 }]);
    const out = messages.createOutbound({
      owner: 'alice',
      ownerName: 'Alice',
      nodeId: A,
      senderNodeId: null,
      text: 'hello',
      at: T0,
    });
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

  it('readings of stations that are not mesh nodes stay local (the protocol cannot carry them)', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    const writer = new ReadingWriter(db);
    writer.write([
      { nodeId: 'roof-1', timestamp: T0, temperatureC: 20 },
      { nodeId: '!0000000A', timestamp: T0, temperatureC: 20 },
      { nodeId: A, timestamp: T0, temperatureC: 20 },
    ]);
    writer.write([{ nodeId: 'roof-1', timestamp: T0, humidityPercent: 50 }]);
    expect(all(outbox)!.records.map((r) => (r.body as { node_id: string }).node_id)).toEqual([A]);
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
    const records = all(outbox)!.records.slice(from);
    expect(records.map((r) => r.body)).toEqual([
      expect.objectContaining({ status: 'revoked', node_ids: [A, B], updated_at: T0 + 1 }),
    ]);
    // A revoked subscription is not a node list removeNodes touches; a live one is.
    const live = subscriptions.create({ subscriber: 'bob', nodes: [A, B], source: 'cli', at: T0 });
    const next = entryCount();
    subscriptions.removeNodes('bob', [A], T0 + 3);
    expect(
      all(outbox)!
        .records.slice(next)
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
    db.exec(`CREATE TRIGGER fail_on_b BEFORE INSERT ON readings WHEN NEW.node_id = '${B}'
      BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
    expect(() =>
      writer.write([
        { nodeId: A, timestamp: T0 + MINUTE, temperatureC: 21 },
        { nodeId: B, timestamp: T0 + MINUTE, temperatureC: 22 },
      ]),
    ).toThrow('disk full');
    expect(outbox.stats()).toMatchObject({ lastSeq: 1, depth: 1 });
    db.exec('DROP TRIGGER fail_on_b');
    writer.write([{ nodeId: B, timestamp: T0 + MINUTE, temperatureC: 22 }]);
    expect(all(outbox)!.records.map((r) => [r.seq, (r.body as { node_id: string }).node_id])).toEqual([
      [1, A],
      [2, B],
    ]);
  });
});

describe('readBatch', () => {
  function fill(n: number): void {
    new ReadingWriter(db).write(
      Array.from({ length: n }, (_, i) => ({ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i })),
    );
  }

  it('returns undefined when there is nothing to send', () => {
    enableOutbox(db);
    expect(new Outbox(db).readBatch({ maxRecords: 10, maxBytes: 10_000 })).toBeUndefined();
  });

  it('respects maxRecords and maxBytes, keeps order, and batches cover the sequence exactly once', () => {
    enableOutbox(db);
    const outbox = new Outbox(db);
    fill(20);
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
      temperatures.push(...batch.records.map((r) => (r.body as { temperature_c: number }).temperature_c));
      outbox.acknowledge(batch.lastSeq);
      batch = outbox.readBatch({ maxRecords: 6, maxBytes: 4_000 });
    }
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(temperatures).toEqual(Array.from({ length: 20 }, (_, i) => i));
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
    new ReadingWriter(db).write(
      Array.from({ length: 5 }, (_, i) => ({ nodeId: A, timestamp: T0 + i * MINUTE, temperatureC: i })),
    );
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
