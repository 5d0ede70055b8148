/**
 * BatchApplier for everything but readings (issue 12, docs/sync.md "Upstream"): node rows (the
 * newest wins), messages (origin and subscriber kept, `read` never back to `received`, replies
 * routed to internet subscribers, listeners told after the commit), status transitions,
 * subscriptions and the audit plugin's events, tags and comments.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch, RecordBody, RecordKind } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { numberedBatch } from '../helpers/batches.js';
import { migratedSchema } from './helpers.js';

const skip = await skipWithoutPostgres();

const T0 = Date.UTC(2026, 2, 10, 8, 0);
const NOW = Date.UTC(2026, 2, 10, 12, 0);
const NODE = '!0000000a';
const M1 = '01950000-0000-7000-8000-000000000001';
const M2 = '01950000-0000-7000-8000-000000000002';

type Entry = { [K in RecordKind]: { kind: K; body: RecordBody<K> } }[RecordKind];

const batchOf = (siteId: string, firstSeq: number, entries: Entry[]): Batch =>
  numberedBatch(siteId, firstSeq, entries, T0);

function message(id: string, overrides: Partial<RecordBody<'message'>> = {}): Entry {
  return {
    kind: 'message',
    body: {
      id,
      owner: 'admin',
      owner_name: 'Admin',
      node_id: NODE,
      direction: 'outbound',
      sender_node_id: null,
      target_node_id: NODE,
      text: 'hello',
      status: 'queued',
      failure_code: null,
      failure_reason: null,
      created_at: T0,
      updated_at: T0,
      ...overrides,
    },
  };
}

function node(updatedAt: number, shortName: string): Entry {
  return {
    kind: 'node',
    body: {
      node_num: 10,
      node_id: NODE,
      short_name: shortName,
      long_name: `${shortName} long`,
      hw_model: 'HELTEC_V3',
      latitude: 52.5,
      longitude: 13.4,
      altitude: 30,
      last_heard: updatedAt,
      battery_level: 88,
      snr: 6.5,
      updated_at: updatedAt,
    },
  };
}

describe.skipIf(skip)('BatchApplier records', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let applier: BatchApplier;
  let told: { siteId: string; ids: string[] }[];
  let seq: number;

  beforeEach(async () => {
    ({ schema, pool } = await migratedSchema('records', ['a', 'b']));
    told = [];
    applier = new BatchApplier(pool, {
      now: () => NOW,
      onMessages: (siteId, ids) => told.push({ siteId, ids }),
    });
    seq = 1;
  });
  afterEach(async () => {
    await pool.end();
    await schema.drop();
  });

  async function send(entries: Entry[], siteId = 'a') {
    const batch = batchOf(siteId, siteId === 'a' ? seq : 1, entries);
    if (siteId === 'a') seq = batch.last_seq + 1;
    const outcome = await applier.apply(siteId, batch);
    expect(outcome.kind).toBe('applied');
  }

  it('keeps the newest node row, whatever order the records come in', async () => {
    await send([node(T0 + 2, 'new'), node(T0 + 1, 'older')]);
    await send([node(T0, 'oldest')]);
    const rows = await pool.query('SELECT * FROM nodes');
    expect(rows.rows).toEqual([
      {
        site_id: 'a',
        node_id: NODE,
        node_num: 10,
        short_name: 'new',
        long_name: 'new long',
        hw_model: 'HELTEC_V3',
        latitude: 52.5,
        longitude: 13.4,
        altitude: 30,
        last_heard: T0 + 2,
        battery_level: 88,
        snr: 6.5,
        updated_at: T0 + 2,
        received_at: NOW,
      },
    ]);
    await send([node(T0 + 3, 'newest')]);
    expect((await pool.query('SELECT short_name FROM nodes')).rows).toEqual([{ short_name: 'newest' }]);
  });

  it('stores site texts: a reply owned by upstream:<principal> belongs to that subscriber, a local one to nobody', async () => {
    await send([
      message(M1, {
        owner: 'upstream:alice',
        direction: 'inbound',
        status: 'received',
        sender_node_id: NODE,
        target_node_id: null,
      }),
      message(M2, { owner: 'admin' }),
    ]);
    const rows = await pool.query(
      'SELECT id, origin, subscriber, owner, status, received_at FROM messages ORDER BY id',
    );
    expect(rows.rows).toEqual([
      {
        id: M1,
        origin: 'site',
        subscriber: 'alice',
        owner: 'upstream:alice',
        status: 'received',
        received_at: NOW,
      },
      { id: M2, origin: 'site', subscriber: null, owner: 'admin', status: 'queued', received_at: NOW },
    ]);
    expect(told).toEqual([{ siteId: 'a', ids: [M1, M2] }]);
  });

  it('a text an internet subscriber sent down keeps its origin, subscriber and owner as the site reports its statuses', async () => {
    await pool.query(
      `INSERT INTO messages (site_id, id, origin, subscriber, owner, owner_name, node_id, direction, target_node_id, text,
                             status, created_at, updated_at, received_at)
       VALUES ('a', $1, 'upstream', 'bob', 'bob', 'Bob', $2, 'outbound', $2, 'hi there', 'queued', $3, $3, $3)`,
      [M1, NODE, T0],
    );
    await send([
      message(M1, {
        owner: 'upstream:bob',
        owner_name: 'Bob',
        text: 'hi there',
        status: 'sent',
        updated_at: T0 + 5,
      }),
    ]);
    await send([
      message(M1, {
        owner: 'upstream:bob',
        text: 'hi there',
        status: 'failed',
        failure_code: 'no_ack',
        failure_reason: 'no acknowledgement',
        updated_at: T0 + 9,
      }),
    ]);
    const rows = await pool.query(
      'SELECT origin, subscriber, owner, owner_name, status, failure_code, failure_reason, updated_at FROM messages',
    );
    expect(rows.rows).toEqual([
      {
        origin: 'upstream',
        subscriber: 'bob',
        owner: 'bob',
        owner_name: 'Bob',
        status: 'failed',
        failure_code: 'no_ack',
        failure_reason: 'no acknowledgement',
        updated_at: T0 + 9,
      },
    ]);
    expect(told).toEqual([
      { siteId: 'a', ids: [M1] },
      { siteId: 'a', ids: [M1] },
    ]);
  });

  it('never moves a read text back to received, in one batch or across batches', async () => {
    const inbound = {
      owner: 'upstream:alice',
      direction: 'inbound',
      status: 'received',
      sender_node_id: NODE,
    } as const;
    await send([
      message(M1, inbound),
      message(M1, { ...inbound, status: 'read', updated_at: T0 + 1 }),
      message(M1, inbound),
    ]);
    expect((await pool.query('SELECT status FROM messages')).rows).toEqual([{ status: 'read' }]);
    await send([message(M1, { ...inbound, updated_at: T0 + 2 })]);
    const rows = await pool.query('SELECT status, updated_at FROM messages');
    expect(rows.rows).toEqual([{ status: 'read', updated_at: T0 + 2 }]);
  });

  it('tells listeners only about messages that changed, after the commit', async () => {
    await send([message(M1), message(M2)]);
    told = [];
    let committed: unknown;
    const watcher = new BatchApplier(pool, {
      now: () => NOW,
      onMessages: (siteId, ids) => {
        told.push({ siteId, ids });
        // Another connection sees the change already: the listener runs after COMMIT.
        committed = pool.query('SELECT status FROM messages WHERE id = $1', [M2]).then((r) => r.rows[0]);
      },
    });
    const batch = batchOf('a', seq, [message(M1), message(M2, { status: 'sent', updated_at: T0 + 1 })]);
    seq = batch.last_seq + 1;
    await watcher.apply('a', batch);
    expect(told).toEqual([{ siteId: 'a', ids: [M2] }]);
    expect(await committed).toEqual({ status: 'sent' });
  });

  it('leaves another site’s message with the same id alone', async () => {
    await send([message(M1, { text: 'from a' })]);
    await send([message(M1, { text: 'from b', status: 'failed', updated_at: T0 + 100 })], 'b');
    const rows = await pool.query('SELECT site_id, text, status FROM messages');
    expect(rows.rows).toEqual([{ site_id: 'a', text: 'from a', status: 'queued' }]);
  });

  it('stores a text with a NUL character (SQLite holds them, PostgreSQL text cannot) as U+FFFD', async () => {
    await send([message(M1, { text: 'a\u0000b', owner: 'x\u0000' })]);
    const rows = await pool.query('SELECT text, owner FROM messages');
    expect(rows.rows).toEqual([{ text: 'a\uFFFDb', owner: 'x\uFFFD' }]);
  });

  it('stores each status transition once', async () => {
    const transition = (n: number, status: 'queued' | 'sent'): Entry => ({
      kind: 'message_transition',
      body: { message_id: M1, seq: n, status, reason: n === 1 ? 'radio took it' : null, at: T0 + n },
    });
    await send([transition(0, 'queued'), transition(1, 'sent')]);
    await send([transition(1, 'sent')]);
    const rows = await pool.query(
      'SELECT message_id, seq, status, reason, at FROM message_transitions ORDER BY seq',
    );
    expect(rows.rows).toEqual([
      { message_id: M1, seq: 0, status: 'queued', reason: null, at: T0 },
      { message_id: M1, seq: 1, status: 'sent', reason: 'radio took it', at: T0 + 1 },
    ]);
  });

  it('mirrors the site’s subscriptions, node lists included', async () => {
    const sub = (status: 'active' | 'revoked', nodeIds: string[], updatedAt: number): Entry => ({
      kind: 'subscription',
      body: {
        id: 3,
        subscriber: 'upstream:alice',
        all_nodes: false,
        node_ids: nodeIds,
        status,
        expires_at: null,
        source: 'upstream',
        reference: 'up-7',
        created_at: T0,
        updated_at: updatedAt,
      },
    });
    await send([sub('active', [NODE, '!0000000b'], T0)]);
    await send([sub('revoked', ['!0000000c'], T0 + 5)]);
    const rows = await pool.query(
      'SELECT id, subscriber, node_ids, status, reference, updated_at FROM site_subscriptions',
    );
    expect(rows.rows).toEqual([
      {
        id: 3,
        subscriber: 'upstream:alice',
        node_ids: ['!0000000c'],
        status: 'revoked',
        reference: 'up-7',
        updated_at: T0 + 5,
      },
    ]);
  });

  it('stores audit events once, in their month, with tag changes and comments', async () => {
    const event = (key: string, ts: number, tags: string[]): Entry => ({
      kind: 'audit_event',
      body: {
        source: 'm365',
        source_key: key,
        ts,
        service: 'Exchange',
        operation: 'MailItemsAccessed',
        result: 'Succeeded',
        actor: 'eve@example.org',
        target: 'inbox "q1"',
        tags,
        raw: '{"Id":"x"}',
        ingested_at: ts + 10,
      },
    });
    const checked: Entry = {
      kind: 'audit_comment',
      body: {
        source: 'm365',
        source_key: 'k1',
        comment_id: 1,
        author: 'admin',
        text: 'checked',
        created_at: T0,
      },
    };
    const feb = Date.UTC(2026, 1, 3);
    await send([
      event('k1', feb, ['a']),
      event('k2', T0, []),
      event('k1', feb, ['again']),
      {
        kind: 'audit_tags',
        body: { source: 'm365', source_key: 'k1', tags: ['reviewed', 'ok'] },
      },
      checked,
    ]);
    await send([
      event('k1', feb + 1, ['moved?']),
      { kind: 'audit_tags', body: { source: 'm365', source_key: 'k2', tags: ['x'] } },
      { kind: 'audit_tags', body: { source: 'm365', source_key: 'nope', tags: ['x'] } },
      checked,
    ]);
    const events = await pool.query(
      `SELECT tableoid::regclass::text AS part, source_key, ts, tags, raw, received_at FROM audit_events ORDER BY source_key`,
    );
    expect(events.rows).toEqual([
      {
        part: 'audit_events_y2026m02',
        source_key: 'k1',
        ts: feb,
        tags: ['reviewed', 'ok'],
        raw: '{"Id":"x"}',
        received_at: NOW,
      },
      {
        part: 'audit_events_y2026m03',
        source_key: 'k2',
        ts: T0,
        tags: ['x'],
        raw: '{"Id":"x"}',
        received_at: NOW,
      },
    ]);
    expect((await pool.query('SELECT source_key, ts FROM audit_event_keys ORDER BY 1')).rows).toEqual([
      { source_key: 'k1', ts: feb },
      { source_key: 'k2', ts: T0 },
    ]);
    expect(
      (await pool.query('SELECT source_key, comment_id, author, text FROM audit_comments')).rows,
    ).toEqual([{ source_key: 'k1', comment_id: 1, author: 'admin', text: 'checked' }]);
  });

  it('keeps two tenants’ events with the same record id as two rows, with their own tags and comments', async () => {
    const event = (tenant: string, tags: string[]): Entry => ({
      kind: 'audit_event',
      body: {
        tenant,
        source: 'directory',
        source_key: 'Directory_guest_1',
        ts: T0,
        service: 'Entra ID',
        operation: 'Add member to group',
        result: 'success',
        actor: 'guest@example.org',
        target: 'group "sales"',
        tags,
        raw: `{"tenant":"${tenant}"}`,
        ingested_at: T0 + 10,
      },
    });
    await send([
      event('contoso', []),
      event('fabrikam', []),
      event('contoso', ['dup']),
      {
        kind: 'audit_tags',
        body: { tenant: 'fabrikam', source: 'directory', source_key: 'Directory_guest_1', tags: ['seen'] },
      },
      {
        kind: 'audit_comment',
        body: {
          tenant: 'contoso',
          source: 'directory',
          source_key: 'Directory_guest_1',
          comment_id: 1,
          author: 'admin',
          text: 'expected',
          created_at: T0,
        },
      },
    ]);
    const rows = await pool.query('SELECT tenant, source_key, tags, raw FROM audit_events ORDER BY tenant');
    expect(rows.rows).toEqual([
      { tenant: 'contoso', source_key: 'Directory_guest_1', tags: [], raw: '{"tenant":"contoso"}' },
      { tenant: 'fabrikam', source_key: 'Directory_guest_1', tags: ['seen'], raw: '{"tenant":"fabrikam"}' },
    ]);
    expect((await pool.query('SELECT tenant, comment_id FROM audit_comments')).rows).toEqual([
      { tenant: 'contoso', comment_id: 1 },
    ]);
  });
});
