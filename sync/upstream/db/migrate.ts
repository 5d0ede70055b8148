/**
 * Runs the upstream's schema migrations (schema.ts) at start (docs/sync.md "Upstream").
 *
 * Several stateless upstream processes may start at once against one database, so each
 * migration runs in its own transaction that first takes a transaction-scoped advisory lock:
 * the first process applies it and writes its ledger row (`upstream_migrations`), the others
 * wait on the lock, then find the row and move on. A database whose ledger is ahead of this
 * code (a newer meshhub migrated it) is refused rather than written with an older idea of it.
 */
import type pg from 'pg';
import { withTransaction } from './pool.js';
import { PG_MIGRATIONS, type PgMigration } from './schema.js';

/** First half of the advisory lock key (the second is the schema's hash): "mhub" in ASCII. */
const MIGRATION_LOCK = 0x6d687562;

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

function checkOrder(migrations: readonly PgMigration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new MigrationError(`migration ${i + 1} is missing (found version ${m.version} in its place)`);
    }
  });
}

/**
 * Brings the database up to the newest migration; returns the schema version it is at now.
 * Throws MigrationError when the database is newer than this code.
 */
export async function migrateUpstream(
  pool: pg.Pool,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
): Promise<number> {
  checkOrder(migrations);
  const latest = migrations.length;
  for (;;) {
    const step = await withTransaction(pool, async (client) => {
      // Keyed by schema too, so databases holding several schemas (tests) do not queue on one another.
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [MIGRATION_LOCK]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS upstream_migrations (
           version INTEGER PRIMARY KEY,
           name TEXT NOT NULL,
           applied_at BIGINT NOT NULL
         )`,
      );
      const { rows } = await client.query<{ version: number | null }>(
        'SELECT max(version) AS version FROM upstream_migrations',
      );
      const current = rows[0]?.version ?? 0;
      if (current > latest) {
        throw new MigrationError(
          `the upstream database is at schema version ${current}, newer than this meshhub knows (${latest}); upgrade meshhub`,
        );
      }
      const next = migrations[current];
      if (!next) return { version: current, done: true };
      await client.query(next.sql);
      await client.query('INSERT INTO upstream_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        next.version,
        next.name,
        Date.now(),
      ]);
      return { version: next.version, done: false };
    });
    if (step.done) return step.version;
  }
}
