/**
 * The upstream's transactions when PostgreSQL goes away under them (issue 12, "PostgreSQL
 * restarted mid-batch"): a connection cut between two statements of a transaction fails that
 * transaction with a transient error the caller retries; it is never an uncaught exception that
 * takes the whole upstream down, and the pool goes on with fresh connections.
 */
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTransientDatabaseError, openPool, withTransaction } from '../../../sync/upstream/db/pool.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';

const skip = await skipWithoutPostgres();

describe.skipIf(skip)('upstream transactions when the database restarts', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let admin: pg.Pool;
  const uncaught: Error[] = [];
  const onUncaught = (error: Error) => uncaught.push(error);

  beforeEach(async () => {
    schema = await createTestSchema('pool');
    pool = openPool(schema.url, { max: 2 });
    admin = openPool(schema.url, { max: 1, applicationName: 'meshhub-test-admin' });
    await pool.query('CREATE TABLE t (n INTEGER)');
    uncaught.length = 0;
    // vitest reports uncaught exceptions as errors of the run; this listener sees them first.
    process.prependListener('uncaughtException', onUncaught);
  });
  afterEach(async () => {
    process.off('uncaughtException', onUncaught);
    await pool.end();
    await admin.end();
    await schema.drop();
  });

  it('fails the transaction whose connection was cut between statements, and goes on', async () => {
    const attempt = withTransaction(pool, async (client) => {
      await client.query('INSERT INTO t VALUES (1)');
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // The server ends this session while no statement of it runs.
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await client.query('INSERT INTO t VALUES (2)');
    });
    const error = await attempt.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(isTransientDatabaseError(error)).toBe(true);
    expect(uncaught).toEqual([]);
    // Nothing of the cut transaction is kept, and the pool serves the next one.
    await withTransaction(pool, (client) => client.query('INSERT INTO t VALUES (3)'));
    expect((await pool.query('SELECT n FROM t ORDER BY n')).rows).toEqual([{ n: 3 }]);
  });
});
