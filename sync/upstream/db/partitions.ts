/**
 * Monthly partitions of the tables that grow without bound (`readings`, `audit_events`; schema.ts),
 * created ahead of the rows that need them (docs/sync.md "Upstream").
 *
 * A partition is created as a plain table and then attached, rather than with `CREATE TABLE …
 * PARTITION OF` (which locks the whole parent against readers): attaching takes only a SHARE
 * UPDATE EXCLUSIVE lock on the parent. Rows that landed in the DEFAULT partition for that month
 * before it existed (a creation that timed out on a lock, a time that was beyond the window
 * then) are moved into it in the same transaction, since PostgreSQL refuses to attach a range
 * the default partition still holds rows of.
 *
 * Only months in a window around now get partitions (PAST_MONTHS back, FUTURE_MONTHS ahead): a
 * site whose clock says 1970 or 2099 puts its rows in the default partition instead of creating
 * a partition per garbage month. Creation is serialised per schema by an advisory lock, and
 * finding the partition there already (another process made it) is success.
 */
import type pg from 'pg';
import { withTransaction } from './pool.js';

export const PARTITIONED_TABLES = ['readings', 'audit_events'] as const;
/** Months before now that still get partitions (older rows go to the default partition). */
export const PAST_MONTHS = 60;
/** Months after now that get partitions. */
export const FUTURE_MONTHS = 12;
/** How long partition DDL waits for a lock before giving up (rows then go to the default partition). */
export const PARTITION_LOCK_TIMEOUT_MS = 5_000;

/** Second half of the advisory lock key: "part". */
const PARTITION_LOCK = 0x70617274;

/** Partitions this process has seen exist, per pool: later batches of the same months cost nothing. */
const known = new WeakMap<pg.Pool, Set<string>>();

/** Index of the UTC month of `ms` (months since January 1970). */
function monthIndex(ms: number): number {
  const d = new Date(ms);
  return d.getUTCFullYear() * 12 + d.getUTCMonth() - 1970 * 12;
}

function monthStart(index: number): number {
  return Date.UTC(1970 + Math.floor(index / 12), ((index % 12) + 12) % 12, 1);
}

/** `readings_y2026m03`: the partition holding March 2026. */
export function partitionName(table: (typeof PARTITIONED_TABLES)[number], index: number): string {
  const year = 1970 + Math.floor(index / 12);
  const month = (((index % 12) + 12) % 12) + 1;
  return `${table}_y${year}m${String(month).padStart(2, '0')}`;
}

/**
 * Makes sure the monthly partitions of both tables exist for every month of `aroundMs`, and for
 * the month after each, within the window around `now`.
 */
export async function ensurePartitions(
  pool: pg.Pool,
  aroundMs: readonly number[],
  options: { now?: () => number } = {},
): Promise<void> {
  const nowIndex = monthIndex((options.now ?? Date.now)());
  const months = new Set<number>();
  for (const ms of [...aroundMs, (options.now ?? Date.now)()]) {
    if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) continue;
    const index = monthIndex(ms);
    for (const m of [index, index + 1]) {
      if (m >= nowIndex - PAST_MONTHS && m <= nowIndex + FUTURE_MONTHS) months.add(m);
    }
  }
  let seen = known.get(pool);
  if (!seen) {
    seen = new Set();
    known.set(pool, seen);
  }
  for (const index of [...months].sort((a, b) => a - b)) {
    for (const table of PARTITIONED_TABLES) {
      const name = partitionName(table, index);
      if (seen.has(name)) continue;
      await createPartition(pool, table, name, monthStart(index), monthStart(index + 1));
      seen.add(name);
    }
  }
}

async function createPartition(
  pool: pg.Pool,
  table: string,
  name: string,
  from: number,
  to: number,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL lock_timeout = ${PARTITION_LOCK_TIMEOUT_MS}`);
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))', [PARTITION_LOCK]);
    const { rows } = await client.query<{ exists: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relname = $1
       ) AS exists`,
      [name],
    );
    if (rows[0]?.exists) return;
    await client.query(`CREATE TABLE ${name} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
    await client.query(
      `WITH moved AS (DELETE FROM ${table}_default WHERE ts >= $1 AND ts < $2 RETURNING *)
       INSERT INTO ${name} SELECT * FROM moved`,
      [from, to],
    );
    // ATTACH builds the partition's copy of the parent's primary key index.
    await client.query(`ALTER TABLE ${table} ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${to})`);
  });
}
