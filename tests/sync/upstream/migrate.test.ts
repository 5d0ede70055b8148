/**
 * The upstream's migrations and partitions on a real PostgreSQL (issue 12): migrating twice and
 * from several processes at once applies each migration once; a database newer than the code is
 * refused; monthly partitions are created once even when asked concurrently, and rows that sat in
 * the default partition move into the partition made for them.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MigrationError, migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { ensurePartitions, partitionName } from '../../../sync/upstream/db/partitions.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { PG_MIGRATIONS } from '../../../sync/upstream/db/schema.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();

/**
 * A fresh schema named `<prefix>_…` for each test (with `setup` run on a pool of it), dropped
 * after it. Returns a function that opens a pool on it (at most 3 connections), closed after the test.
 */
function schemaPerTest(prefix: string, setup?: (pool: pg.Pool) => Promise<unknown>): () => pg.Pool {
  let schema: TestSchema;
  const pools: pg.Pool[] = [];
  const pool = () => {
    const p = openPool(schema.url, { max: 3 });
    pools.push(p);
    return p;
  };
  beforeEach(async () => {
    schema = await createTestSchema(prefix);
    await setup?.(pool());
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
    await schema.drop();
  });
  return pool;
}

describe.skipIf(skip)('upstream migrations', () => {
  const pool = schemaPerTest('migrate');

  const ledger = async (p: pg.Pool) =>
    (await p.query<{ version: number }>('SELECT version FROM upstream_migrations ORDER BY version')).rows.map(
      (r) => r.version,
    );

  it('migrates an empty database, and a second run changes nothing', async () => {
    const p = pool();
    expect(await migrateUpstream(p)).toBe(PG_MIGRATIONS.length);
    expect(await ledger(p)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    expect(await migrateUpstream(p)).toBe(PG_MIGRATIONS.length);
    expect(await ledger(p)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    const tables = await p.query<{ n: number }>(
      `SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'sites'`,
    );
    expect(tables.rows[0]?.n).toBe(1);
  });

  it('five processes starting at once migrate once', async () => {
    const processes = Array.from({ length: 5 }, () => pool());
    const results = await Promise.all(processes.map((p) => migrateUpstream(p)));
    expect(results).toEqual(Array(5).fill(PG_MIGRATIONS.length));
    expect(await ledger(processes[0]!)).toEqual(PG_MIGRATIONS.map((m) => m.version));
  });

  it('refuses a database migrated by a newer meshhub', async () => {
    const p = pool();
    await migrateUpstream(p);
    await p.query(
      `INSERT INTO upstream_migrations (version, name, applied_at) VALUES (99, 'from the future', 0)`,
    );
    const error = await migrateUpstream(p).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toBe(
      `the upstream database is at schema version 99, newer than this meshhub knows (${PG_MIGRATIONS.length}); upgrade meshhub`,
    );
  });

  it('a migration that fails leaves no ledger row and no half of itself', async () => {
    const p = pool();
    const broken = [
      ...PG_MIGRATIONS,
      { version: PG_MIGRATIONS.length + 1, name: 'bad', sql: 'CREATE TABLE half (a INT); SELECT nope' },
    ];
    await expect(migrateUpstream(p, broken)).rejects.toThrow(/nope/);
    expect(await ledger(p)).toEqual(PG_MIGRATIONS.map((m) => m.version));
    const half = await p.query(`SELECT to_regclass('half') AS t`);
    expect(half.rows[0]?.t).toBeNull();
  });
});

describe.skipIf(skip)('upstream partitions', () => {
  const pool = schemaPerTest('parts', (p) => migrateUpstream(p));
  const NOW = Date.UTC(2026, 2, 15, 12);
  const now = () => NOW;

  const partitions = async (p: pg.Pool, parent: string) =>
    (
      await p.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
         JOIN pg_namespace n ON n.oid = p.relnamespace
         WHERE p.relname = $1 AND n.nspname = current_schema() ORDER BY 1`,
        [parent],
      )
    ).rows.map((r) => r.name);

  it('creates the month of each time and the month after, for both tables', async () => {
    const p = pool();
    await ensurePartitions(p, [Date.UTC(2026, 0, 31, 23, 59)], { now });
    expect(await partitions(p, 'readings')).toEqual([
      'readings_default',
      'readings_y2026m01',
      'readings_y2026m02',
      'readings_y2026m03',
      'readings_y2026m04',
    ]);
    expect(await partitions(p, 'audit_events')).toContain('audit_events_y2026m01');
    // Bounds: the last ms of January is in January's partition, the first of February in February's.
    await p.query(
      `INSERT INTO sites (site_id, public_jwks, created_at) VALUES ('a', '{}', 0);
       INSERT INTO readings (site_id, node_id, ts, received_at) VALUES
         ('a', '!00000001', ${Date.UTC(2026, 1, 1) - 1}, 0), ('a', '!00000001', ${Date.UTC(2026, 1, 1)}, 0)`,
    );
    const where = await p.query<{ part: string }>(
      `SELECT tableoid::regclass::text AS part FROM readings ORDER BY ts`,
    );
    expect(where.rows.map((r) => r.part)).toEqual(['readings_y2026m01', 'readings_y2026m02']);
  });

  it('puts times far outside the window in the default partition instead of making partitions for them', async () => {
    const p = pool();
    await ensurePartitions(p, [0, Date.UTC(2099, 0, 1)], { now });
    expect(await partitions(p, 'readings')).toEqual([
      'readings_default',
      'readings_y2026m03',
      'readings_y2026m04',
    ]);
  });

  it('three processes asking for the same months at once create each partition once', async () => {
    const times = [Date.UTC(2025, 11, 3), Date.UTC(2026, 0, 9)];
    const processes = [pool(), pool(), pool()];
    await Promise.all(processes.map((p) => ensurePartitions(p, times, { now })));
    expect(await partitions(processes[0]!, 'readings')).toEqual([
      'readings_default',
      'readings_y2025m12',
      'readings_y2026m01',
      'readings_y2026m02',
      'readings_y2026m03',
      'readings_y2026m04',
    ]);
  });

  it('moves rows the default partition holds for a month into its new partition', async () => {
    const p = pool();
    const ts = Date.UTC(2026, 5, 10);
    await p.query(
      `INSERT INTO sites (site_id, public_jwks, created_at) VALUES ('a', '{}', 0);
       INSERT INTO readings (site_id, node_id, ts, temperature_c, received_at) VALUES ('a', '!00000001', ${ts}, 21.5, 7)`,
    );
    await ensurePartitions(p, [ts], { now });
    const rows = await p.query(
      `SELECT tableoid::regclass::text AS part, temperature_c, received_at FROM readings`,
    );
    expect(rows.rows).toEqual([
      { part: partitionName('readings', 2026 * 12 + 5 - 1970 * 12), temperature_c: 21.5, received_at: 7 },
    ]);
  });
});
