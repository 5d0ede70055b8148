/** Scratch PostgreSQL schemas: the sync bench's and the sync tests' (tests/helpers/postgres.ts). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface ScratchSchema {
  name: string;
  /** A URL whose connections use the schema (search_path). */
  url: string;
  /** Drops the schema and everything in it. */
  drop(): Promise<void>;
}

/** Creates an empty schema `<prefix>_<random hex>` in the database at `databaseUrl`. */
export async function createScratchSchema(databaseUrl: string, prefix: string): Promise<ScratchSchema> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE SCHEMA ${name}`);
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${name}`);
  return { name, url: url.toString(), drop: () => run(`DROP SCHEMA IF EXISTS ${name} CASCADE`) };
}
