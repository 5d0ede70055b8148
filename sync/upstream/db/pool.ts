/**
 * The upstream's PostgreSQL connections (docs/sync.md "Upstream"): one `pg` pool per process,
 * and the one way to run a transaction on it.
 *
 * Every connection is named (`application_name`, so an operator sees the upstream's sessions in
 * `pg_stat_activity`) and bounded (`statement_timeout`, so a stuck statement frees its
 * connection instead of holding a site's row lock forever). BIGINT (int8) columns come back as
 * JavaScript numbers rather than pg's default strings: every BIGINT here is ms since the epoch, a
 * sequence number or a counter, all far below 2^53.
 */
import pg from 'pg';

export const APPLICATION_NAME = 'meshhub-upstream';
/** Longest a single statement may run before PostgreSQL cancels it. */
export const STATEMENT_TIMEOUT_MS = 60_000;
export const DEFAULT_POOL_SIZE = 10;

const INT8_OID = 20;
const INT8_ARRAY_OID: number = 1016;

function parseInt8(value: string): number {
  return Number(value);
}

function parseInt8Array(value: string): (number | null)[] {
  const parseArray = pg.types.getTypeParser(INT8_ARRAY_OID, 'text') as (text: string) => (string | null)[];
  return parseArray(value).map((item) => (item === null ? null : Number(item)));
}

/** pg's own parsers, except int8 (and int8[]) as numbers; per pool, so other pg users keep the defaults. */
const upstreamTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format !== 'binary' && oid === INT8_OID) return parseInt8;
    if (format !== 'binary' && oid === INT8_ARRAY_OID) return parseInt8Array;
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
} as pg.CustomTypesConfig;

export interface PoolOptions {
  /** Most connections this process opens. */
  max?: number;
  /** Told about a connection that failed while idle (PostgreSQL restarted); the pool drops it. */
  onIdleError?: (error: Error) => void;
  applicationName?: string;
}

/** Opens the upstream's pool on `url` (a `postgres://` URL; its own parameters win). */
export function openPool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? DEFAULT_POOL_SIZE,
    application_name: options.applicationName ?? APPLICATION_NAME,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    types: upstreamTypes,
  });
  // Without a listener, an idle connection dropped by a PostgreSQL restart would crash the process.
  pool.on('error', (error) => options.onIdleError?.(error));
  return pool;
}

/**
 * Runs `fn` inside BEGIN … COMMIT on one pooled connection; any throw rolls back and rethrows.
 * A connection whose ROLLBACK fails too (the server went away) is destroyed, not pooled again.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // pg-pool stops listening for a client's errors while it is checked out: a connection cut
  // between two statements (PostgreSQL restarting) would otherwise be an uncaught exception.
  // The next statement fails with it instead, and the connection is destroyed, not pooled.
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** PostgreSQL SQLSTATEs meaning "the server is not there right now": worth a retry, not a bug. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '40001', '40P01']);

/** True for errors a client should retry later (connection refused or lost, shutdown, deadlock). */
export function isTransientDatabaseError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_STATES.has(code) || code.startsWith('08')) return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND'].includes(code)) return true;
  }
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    error.message,
  );
}
