/**
 * The upstream's backup is PostgreSQL's own (README "Backups and upgrades"): `pg_dump` of the
 * upstream's schema with its data, `pg_restore` into another database, and every table holds
 * exactly the rows it held. Needs `pg_dump`/`pg_restore` (Debian's postgresql-client) and a
 * server; under CI=true a missing one fails the run.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateUpstream } from '../../sync/upstream/db/migrate.js';
import { ensurePartitions } from '../../sync/upstream/db/partitions.js';
import { openPool } from '../../sync/upstream/db/pool.js';
import { createTestSchema, skipWithoutPostgres, TEST_DATABASE_URL } from '../helpers/postgres.js';
import { skipBecauseMissing } from '../helpers/skips.js';

function toolMissing(): boolean {
  for (const tool of ['pg_dump', 'pg_restore']) {
    const ran = spawnSync(tool, ['--version']);
    if (ran.status !== 0)
      return skipBecauseMissing(tool, `${tool} is not installed (Debian: postgresql-client)`);
  }
  return false;
}

const skip = (await skipWithoutPostgres()) || toolMissing();

function run(tool: string, args: string[]): void {
  const ran = spawnSync(tool, args, { encoding: 'utf8' });
  if (ran.status !== 0) throw new Error(`${tool} failed (${ran.status}): ${ran.stderr}`);
}

async function tableCounts(url: string, schema: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ tablename: string }>(
      'SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename',
      [schema],
    );
    const counts: Record<string, number> = {};
    for (const { tablename } of tables.rows) {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM "${schema}"."${tablename}"`,
      );
      counts[tablename] = Number(rows[0]!.n);
    }
    return counts;
  } finally {
    await client.end();
  }
}

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(skip)('the upstream backed up with pg_dump and restored with pg_restore', () => {
  it('restores every table with exactly its rows into another database', async () => {
    const schema = await createTestSchema('dump');
    cleanups.push(() => schema.drop());
    const pool = openPool(schema.url, { max: 2 });
    cleanups.push(() => pool.end());
    await migrateUpstream(pool);
    const jan = Date.UTC(2026, 0, 15);
    const feb = Date.UTC(2026, 1, 15);
    await ensurePartitions(pool, [jan, feb]);
    await pool.query(
      `INSERT INTO sites (site_id, public_jwks, created_at) VALUES ('site-a', '{"keys":[]}', $1), ('site-b', '{"keys":[]}', $1)`,
      [jan],
    );
    await pool.query(
      `INSERT INTO readings (site_id, node_id, ts, received_at)
       SELECT CASE WHEN i % 2 = 0 THEN 'site-a' ELSE 'site-b' END, '!0000000' || (i % 5), $1::bigint + i * 60000, $1::bigint
       FROM generate_series(1, 300) AS i`,
      [jan],
    );
    await pool.query(
      `INSERT INTO readings (site_id, node_id, ts, received_at)
       SELECT 'site-a', '!00000001', $1::bigint + i * 60000, $1::bigint FROM generate_series(1, 120) AS i`,
      [feb],
    );
    await pool.query(
      `INSERT INTO nodes (site_id, node_id, node_num, updated_at, received_at)
       SELECT 'site-a', '!0000000' || i, i, $1, $1 FROM generate_series(0, 4) AS i`,
      [jan],
    );
    await pool.query(
      `INSERT INTO users (username, password_hash, roles, created_at, updated_at)
       VALUES ('alice', 'x', '{admin}', $1, $1), ('bob', 'y', '{subscriber}', $1, $1)`,
      [jan],
    );
    const before = await tableCounts(TEST_DATABASE_URL, schema.schema);
    expect(before.sites).toBe(2);
    expect(before.nodes).toBe(5);
    expect(before.users).toBe(2);
    expect([before.readings_y2026m01, before.readings_y2026m02]).toEqual([300, 120]);

    // What the README tells an operator to run.
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-pgdump-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const dump = join(dir, 'upstream.dump');
    run('pg_dump', [
      '--format=custom',
      `--schema=${schema.schema}`,
      `--file=${dump}`,
      `--dbname=${TEST_DATABASE_URL}`,
    ]);

    const restored = `meshhub_restore_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${restored}`);
    cleanups.push(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${restored}`);
      await admin.end();
    });
    const restoredUrl = new URL(TEST_DATABASE_URL);
    restoredUrl.pathname = `/${restored}`;
    run('pg_restore', ['--no-owner', '--exit-on-error', `--dbname=${restoredUrl}`, dump]);

    expect(await tableCounts(restoredUrl.toString(), schema.schema)).toEqual(before);
  });
});
