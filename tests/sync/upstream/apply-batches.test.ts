/**
 * BatchApplier on a real PostgreSQL (issue 12 "Bad input and faults"): a batch is applied once
 * and whole, a retry is acknowledged without applying, and every refusal (gap, backwards,
 * replayed request, unknown or revoked site) leaves the database exactly as it was — also when
 * two upstream processes (two pools) receive the same batch at the same moment.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch, RecordBody, RecordKind } from '../../../sync/protocol.js';
import { BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { numberedBatch } from '../helpers/batches.js';
import { nodeBody, readingBody } from '../helpers/records.js';
import { migratedSchema } from './helpers.js';

const skip = await skipWithoutPostgres();

const T0 = Date.UTC(2026, 2, 10, 8, 0);
const NOW = Date.UTC(2026, 2, 10, 12, 0);
const NODE_A = '!0000000a';
const NODE_B = '!0000000b';

type Entry = { [K in RecordKind]: { kind: K; body: RecordBody<K>; at?: number } }[RecordKind];

const batchOf = (siteId: string, firstSeq: number, entries: Entry[], dropped = 0): Batch =>
  numberedBatch(siteId, firstSeq, entries, T0, dropped);

function reading(nodeId: string, ts: number, values: Parameters<typeof readingBody>[2]): Entry {
  return { kind: 'reading', body: readingBody(nodeId, ts, values) };
}

function node(nodeId: string, updatedAt: number, shortName: string): Entry {
  return {
    kind: 'node',
    body: nodeBody(nodeId, updatedAt, { short_name: shortName }),
  };
}

const TABLES = [
  'readings',
  'readings_hourly',
  'readings_daily',
  'readings_latest',
  'nodes',
  'messages',
  'message_transitions',
  'site_subscriptions',
  'audit_events',
  'audit_event_keys',
  'audit_comments',
  'sync_batches',
  'sync_request_ids',
];

/** Everything a batch could change: each table's rows (as JSON) and the sites rows. */
async function snapshot(pool: pg.Pool): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const table of [...TABLES, 'sites']) {
    const { rows } = await pool.query(`SELECT * FROM ${table} ORDER BY 1, 2`);
    out[table] = rows;
  }
  return out;
}

async function count(pool: pg.Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`);
  return rows[0]!.n;
}

describe.skipIf(skip)('BatchApplier', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let applier: BatchApplier;
  const extraPools: pg.Pool[] = [];

  beforeEach(async () => {
    ({ schema, pool } = await migratedSchema('apply', ['a', 'b']));
    applier = new BatchApplier(pool, { now: () => NOW });
  });
  afterEach(async () => {
    await Promise.all(extraPools.splice(0).map((p) => p.end()));
    await pool.end();
    await schema.drop();
  });

  const first = () =>
    batchOf('a', 1, [
      reading(NODE_A, T0, { temperature_c: 20.5, humidity_percent: 40 }),
      reading(NODE_A, T0 + 60_000, { temperature_c: 21 }),
      node(NODE_A, T0, 'A'),
      reading(NODE_B, T0, { pressure_pa: 101_325 }),
    ]);

  it('applies a batch whole and moves the site cursor, with the upstream’s receive time on every row', async () => {
    const outcome = await applier.apply('a', first(), { value: 'jti-1', expiresAt: NOW + 120_000 });
    expect(outcome).toEqual({ kind: 'applied', ackedSeq: 4 });
    expect(await count(pool, 'readings')).toBe(3);
    expect(await count(pool, 'nodes')).toBe(1);
    const site = await pool.query('SELECT * FROM sites WHERE site_id = $1', ['a']);
    expect(site.rows[0]).toMatchObject({
      acked_seq: 4,
      last_batch_at: NOW,
      last_record_at: T0 + 3,
      records_applied: 4,
    });
    const batches = await pool.query('SELECT * FROM sync_batches');
    // changed_from: the oldest reading time the batch changed (history caches drop from there).
    expect(batches.rows).toEqual([
      { site_id: 'a', first_seq: 1, last_seq: 4, records: 4, applied_at: NOW, changed_from: T0 },
    ]);
    const received = await pool.query<{ received_at: number }>(
      'SELECT received_at FROM readings UNION ALL SELECT received_at FROM nodes',
    );
    expect(received.rows.map((r) => r.received_at)).toEqual([NOW, NOW, NOW, NOW]);
    // The site's own times stay as they were (a site clock hours off does not move them).
    const times = await pool.query<{ ts: number }>('SELECT ts FROM readings ORDER BY ts, node_id');
    expect(times.rows.map((r) => r.ts)).toEqual([T0, T0, T0 + 60_000]);
  });

  it('a retried batch is acknowledged as a duplicate and applies nothing', async () => {
    await applier.apply('a', first(), { value: 'jti-1', expiresAt: NOW + 120_000 });
    const second = batchOf('a', 5, [reading(NODE_A, T0 + 120_000, { temperature_c: 22 })]);
    await applier.apply('a', second);
    const before = await snapshot(pool);
    expect(await applier.apply('a', first(), { value: 'jti-2', expiresAt: NOW + 120_000 })).toEqual({
      kind: 'duplicate',
      ackedSeq: 5,
    });
    expect(await applier.apply('a', second)).toEqual({ kind: 'duplicate', ackedSeq: 5 });
    const after = await snapshot(pool);
    // Only the retry's request id is new.
    expect({ ...after, sync_request_ids: [] }).toEqual({ ...before, sync_request_ids: [] });
    expect(await count(pool, 'sync_request_ids')).toBe(2);
  });

  /**
   * Sends `batch` as site `siteId` (under request id `jti`, if given) and expects it refused as
   * `refusal` says, with nothing in the database changed.
   */
  async function expectRefused(
    siteId: string,
    batch: Batch,
    jti: { value: string; expiresAt: number } | undefined,
    refusal: { reason: string; expectedSeq: number; detail: string },
  ): Promise<void> {
    const before = await snapshot(pool);
    expect(await applier.apply(siteId, batch, jti)).toEqual({ kind: 'refused', ...refusal });
    expect(await snapshot(pool)).toEqual(before);
  }

  it('refuses a gap, naming the next sequence it needs, and changes nothing', async () => {
    await applier.apply('a', first());
    await expectRefused(
      'a',
      batchOf('a', 7, [reading(NODE_A, T0 + 1, { temperature_c: 1 })]),
      { value: 'jti-gap', expiresAt: NOW + 120_000 },
      {
        reason: 'gap',
        expectedSeq: 5,
        detail: 'the batch starts at 7, but the next sequence number the upstream needs is 5',
      },
    );
  });

  it('refuses a batch overlapping what was applied that is not a retry of it', async () => {
    await applier.apply('a', first());
    const overlapping = batchOf('a', 3, [
      reading(NODE_A, T0 + 5, { temperature_c: 1 }),
      reading(NODE_A, T0 + 6, { temperature_c: 2 }),
      reading(NODE_A, T0 + 7, { temperature_c: 3 }),
    ]);
    await expectRefused('a', overlapping, undefined, {
      reason: 'sequence_backwards',
      expectedSeq: 5,
      detail: 'the batch starts at 3, at or before 4, which is applied already',
    });
    // Same first_seq as an applied batch, but longer: not a retry either.
    const longer = batchOf('a', 1, [
      ...first().records.map((r) => ({ kind: r.kind, body: r.body }) as Entry),
      node(NODE_B, T0, 'B'),
    ]);
    const before = await snapshot(pool);
    expect(await applier.apply('a', longer)).toMatchObject({
      kind: 'refused',
      reason: 'sequence_backwards',
      expectedSeq: 5,
    });
    expect(await snapshot(pool)).toEqual(before);
  });

  it('refuses a replayed signed request, even for a batch it would apply', async () => {
    await applier.apply('a', first(), { value: 'jti-1', expiresAt: NOW + 120_000 });
    const next = batchOf('a', 5, [reading(NODE_A, T0 + 9, { temperature_c: 9 })]);
    await expectRefused(
      'a',
      next,
      { value: 'jti-1', expiresAt: NOW + 120_000 },
      {
        reason: 'replayed_request',
        expectedSeq: 5,
        detail: 'this signed request (batch 5..5) was received before',
      },
    );
  });

  it('refuses unknown and revoked sites and changes nothing', async () => {
    await pool.query(
      `INSERT INTO sites (site_id, public_jwks, created_at, revoked_at) VALUES ('gone', '{"keys":[]}', 0, 5)`,
    );
    await expectRefused('nobody', batchOf('nobody', 1, [node(NODE_A, 1, 'A')]), undefined, {
      reason: 'unknown_site',
      expectedSeq: 0,
      detail: 'no site nobody',
    });
    await expectRefused('gone', batchOf('gone', 1, [node(NODE_A, 1, 'A')]), undefined, {
      reason: 'revoked_site',
      expectedSeq: 1,
      detail: 'site gone is revoked',
    });
  });

  it('acknowledges sequence numbers the site dropped, and a batch of nothing but drops', async () => {
    const batch = batchOf('a', 1, [reading(NODE_A, T0, { temperature_c: 1 })], 3);
    expect(await applier.apply('a', batch)).toEqual({ kind: 'applied', ackedSeq: 4 });
    expect(await applier.apply('a', batchOf('a', 5, [], 10))).toEqual({ kind: 'applied', ackedSeq: 14 });
    const site = await pool.query(
      'SELECT acked_seq, records_applied, last_record_at FROM sites WHERE site_id = $1',
      ['a'],
    );
    expect(site.rows[0]).toEqual({ acked_seq: 14, records_applied: 1, last_record_at: T0 });
  });

  type Jti = { value: string; expiresAt: number };

  /**
   * Eight rounds of site a's batches (round r's records from `entries(r)`), each sent to this
   * applier and at the same moment to one on a second pool, as to a second upstream process
   * (with the request ids `jtis(r)` gives, if any): one applies it, the other answers duplicate,
   * both acknowledging the whole batch.
   */
  async function sendEachToTwoAtOnce(
    entries: (round: number) => Entry[],
    jtis: (round: number) => [Jti, Jti] | [] = () => [],
  ): Promise<void> {
    const other = openPool(schema.url, { max: 4 });
    extraPools.push(other);
    const there = new BatchApplier(other, { now: () => NOW });
    let seq = 1;
    for (let round = 0; round < 8; round++) {
      const batch = batchOf('a', seq, entries(round));
      const [here, away] = jtis(round);
      const outcomes = await Promise.all([applier.apply('a', batch, here), there.apply('a', batch, away)]);
      expect(outcomes.map((o) => o.kind).sort()).toEqual(['applied', 'duplicate']);
      expect(outcomes.map((o) => (o.kind === 'refused' ? -1 : o.ackedSeq))).toEqual([
        batch.last_seq,
        batch.last_seq,
      ]);
      seq = batch.last_seq + 1;
    }
  }

  it('two upstream processes receiving the same batch at once apply it exactly once', async () => {
    await sendEachToTwoAtOnce(
      (round) =>
        Array.from({ length: 50 }, (_, i) =>
          reading(i % 2 ? NODE_A : NODE_B, T0 + round * 100_000 + i * 1000, {
            temperature_c: round + i / 100,
          }),
        ),
      (round) => [
        { value: `here-${round}`, expiresAt: NOW + 1 },
        { value: `there-${round}`, expiresAt: NOW + 1 },
      ],
    );
    expect(await count(pool, 'readings')).toBe(400);
    const sums = await pool.query<{ n: number }>(
      'SELECT sum(temperature_c_count)::int AS n FROM readings_hourly',
    );
    expect(sums.rows[0]?.n).toBe(400);
    const site = await pool.query('SELECT acked_seq, records_applied FROM sites WHERE site_id = $1', ['a']);
    expect(site.rows[0]).toEqual({ acked_seq: 400, records_applied: 400 });
  });

  it('two processes receiving the same batch without readings at once apply it exactly once', async () => {
    // No COPY to collide in: the second waits for the site's lock, then finds the batch applied
    // by the first (which the lock statement's own snapshot could not see).
    await sendEachToTwoAtOnce((round) =>
      Array.from({ length: 20 }, (_, i) => node(i % 2 ? NODE_A : NODE_B, T0 + round * 100 + i, `r${round}`)),
    );
    const site = await pool.query('SELECT acked_seq, records_applied FROM sites WHERE site_id = $1', ['a']);
    expect(site.rows[0]).toEqual({ acked_seq: 160, records_applied: 160 });
    expect(await count(pool, 'sync_batches')).toBe(8);
  });

  it('keeps the sites apart: the same sequence numbers from another site are its own', async () => {
    await applier.apply('a', first());
    expect(await applier.apply('b', batchOf('b', 1, [reading(NODE_A, T0, { temperature_c: 99 })]))).toEqual({
      kind: 'applied',
      ackedSeq: 1,
    });
    const rows = await pool.query(
      'SELECT site_id, temperature_c FROM readings WHERE node_id = $1 AND ts = $2 ORDER BY 1',
      [NODE_A, T0],
    );
    expect(rows.rows).toEqual([
      { site_id: 'a', temperature_c: 20.5 },
      { site_id: 'b', temperature_c: 99 },
    ]);
  });

  it('a reading stored before without its latest row is found, and only what it adds counts', async () => {
    // A row the fast path cannot know of (no readings_latest row says the node has readings).
    await pool.query(
      `INSERT INTO readings (site_id, node_id, ts, temperature_c, received_at) VALUES ('a', $1, $2, 20, 1)`,
      [NODE_A, T0],
    );
    await applier.apply(
      'a',
      batchOf('a', 1, [reading(NODE_A, T0, { temperature_c: 25, humidity_percent: 50 })]),
    );
    const row = await pool.query('SELECT temperature_c, humidity_percent, received_at FROM readings');
    expect(row.rows).toEqual([{ temperature_c: 20, humidity_percent: 50, received_at: 1 }]);
    const hourly = await pool.query(
      'SELECT temperature_c_count, humidity_percent_count, humidity_percent_sum FROM readings_hourly',
    );
    expect(hourly.rows).toEqual([
      { temperature_c_count: 0, humidity_percent_count: 1, humidity_percent_sum: 50 },
    ]);
  });

  it('creates the month partitions the readings need', async () => {
    const may = Date.UTC(2026, 4, 20);
    await applier.apply('a', batchOf('a', 1, [reading(NODE_A, may, { temperature_c: 1 })]));
    const part = await pool.query<{ part: string }>('SELECT tableoid::regclass::text AS part FROM readings');
    expect(part.rows[0]?.part).toBe('readings_y2026m05');
  });
});
