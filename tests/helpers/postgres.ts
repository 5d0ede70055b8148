/**
 * A real PostgreSQL for the sync tests (issue 12): Debian's `postgresql`, which `.ci/run`
 * installs, starts and gives a `meshhub_test` database. Each caller gets a schema of its own
 * (dropped at cleanup), so test files run in parallel against one database without seeing each
 * other's tables.
 *
 * `TEST_DATABASE_URL` names the server (default: the one `.ci/run` creates; README "Tests" says
 * how to make it). When none answers: under CI (`CI=true`) the tests FAIL; elsewhere they skip,
 * and the run ends with one line saying why (tests/helpers/skips.ts).
 */
import pg from 'pg';
import { createScratchSchema } from '../../scripts/bench/lib/postgres.js';
import { skipBecauseMissing } from './skips.js';

export const TEST_DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? 'postgres://meshhub:meshhub@127.0.0.1:5432/meshhub_test';

let reachable: Promise<string | undefined> | undefined;

/** Why PostgreSQL cannot be used here, or undefined when it can. */
export function postgresUnavailable(): Promise<string | undefined> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (error) {
      return `${(error as Error).message} at TEST_DATABASE_URL=${TEST_DATABASE_URL.replace(/:[^:@/]*@/, ':***@')}`;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/**
 * For `describe.skipIf(...)`: true when the tests must skip (no server, not under CI). Under CI
 * a missing server throws, so the run fails instead of passing with nothing tested.
 */
export async function skipWithoutPostgres(): Promise<boolean> {
  const why = await postgresUnavailable();
  return why ? skipBecauseMissing('PostgreSQL', why) : false;
}

export interface TestSchema {
  /** A connection string whose connections use the fresh schema (search_path). */
  url: string;
  schema: string;
  drop(): Promise<void>;
}

/** Creates an empty schema and returns a URL whose connections use it. */
export async function createTestSchema(prefix = 't'): Promise<TestSchema> {
  const { name, url, drop } = await createScratchSchema(TEST_DATABASE_URL, prefix);
  return { url, schema: name, drop };
}
