/**
 * The SQL schema, as an ordered list of migrations (CONVENTIONS.md: one place per fact).
 *
 * `PRAGMA user_version` holds the number of the last migration applied. Each pending migration
 * runs in its own transaction together with the bump of `user_version`, so a crash leaves the
 * database at a whole version. A migration, once released, never changes: to change the schema,
 * APPEND a new entry with the next version number (users, messages, audit events, ...).
 * `migrate` refuses a database written by a newer meshhub rather than guess at its schema.
 */
import type { Database } from './database.js';

export interface Migration {
  /** 1, 2, 3, ...: the position in MIGRATIONS, also the `user_version` after it ran. */
  version: number;
  name: string;
  /** SQL run with `db.exec`, or a function for migrations that need to move data. */
  up: string | ((db: Database) => void);
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'readings, latest readings, hourly and daily rollups, nodes',
    up: `
      -- Raw readings: one row per node and receive time (ms UTC), one nullable column per metric.
      CREATE TABLE readings (
        node_id TEXT NOT NULL,
        ts INTEGER NOT NULL,
        temperature_c REAL,
        humidity_percent REAL,
        pressure_pa REAL,
        wind_speed_ms REAL,
        wind_direction REAL,
        pm25_ugm3 REAL,
        pm10_ugm3 REAL,
        gas_resistance_kohm REAL,
        PRIMARY KEY (node_id, ts)
      ) WITHOUT ROWID;

      -- Per node: each metric's newest value and the time of that value, merged field by field;
      -- ts is the newest reading of any metric.
      CREATE TABLE readings_latest (
        node_id TEXT NOT NULL PRIMARY KEY,
        ts INTEGER NOT NULL,
        temperature_c REAL, temperature_c_ts INTEGER,
        humidity_percent REAL, humidity_percent_ts INTEGER,
        pressure_pa REAL, pressure_pa_ts INTEGER,
        wind_speed_ms REAL, wind_speed_ms_ts INTEGER,
        wind_direction REAL, wind_direction_ts INTEGER,
        pm25_ugm3 REAL, pm25_ugm3_ts INTEGER,
        pm10_ugm3 REAL, pm10_ugm3_ts INTEGER,
        gas_resistance_kohm REAL, gas_resistance_kohm_ts INTEGER
      ) WITHOUT ROWID;

      -- Rollups per UTC hour / UTC day: sum and count per metric (mean = sum / count); wind
      -- direction as sums of sin and cos for a circular mean. Kept when raw rows expire.
      CREATE TABLE readings_hourly (
        node_id TEXT NOT NULL,
        bucket_start INTEGER NOT NULL,
        temperature_c_sum REAL NOT NULL DEFAULT 0, temperature_c_count INTEGER NOT NULL DEFAULT 0,
        humidity_percent_sum REAL NOT NULL DEFAULT 0, humidity_percent_count INTEGER NOT NULL DEFAULT 0,
        pressure_pa_sum REAL NOT NULL DEFAULT 0, pressure_pa_count INTEGER NOT NULL DEFAULT 0,
        wind_speed_ms_sum REAL NOT NULL DEFAULT 0, wind_speed_ms_count INTEGER NOT NULL DEFAULT 0,
        pm25_ugm3_sum REAL NOT NULL DEFAULT 0, pm25_ugm3_count INTEGER NOT NULL DEFAULT 0,
        pm10_ugm3_sum REAL NOT NULL DEFAULT 0, pm10_ugm3_count INTEGER NOT NULL DEFAULT 0,
        gas_resistance_kohm_sum REAL NOT NULL DEFAULT 0, gas_resistance_kohm_count INTEGER NOT NULL DEFAULT 0,
        wind_direction_sin_sum REAL NOT NULL DEFAULT 0,
        wind_direction_cos_sum REAL NOT NULL DEFAULT 0,
        wind_direction_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (node_id, bucket_start)
      ) WITHOUT ROWID;

      CREATE TABLE readings_daily (
        node_id TEXT NOT NULL,
        bucket_start INTEGER NOT NULL,
        temperature_c_sum REAL NOT NULL DEFAULT 0, temperature_c_count INTEGER NOT NULL DEFAULT 0,
        humidity_percent_sum REAL NOT NULL DEFAULT 0, humidity_percent_count INTEGER NOT NULL DEFAULT 0,
        pressure_pa_sum REAL NOT NULL DEFAULT 0, pressure_pa_count INTEGER NOT NULL DEFAULT 0,
        wind_speed_ms_sum REAL NOT NULL DEFAULT 0, wind_speed_ms_count INTEGER NOT NULL DEFAULT 0,
        pm25_ugm3_sum REAL NOT NULL DEFAULT 0, pm25_ugm3_count INTEGER NOT NULL DEFAULT 0,
        pm10_ugm3_sum REAL NOT NULL DEFAULT 0, pm10_ugm3_count INTEGER NOT NULL DEFAULT 0,
        gas_resistance_kohm_sum REAL NOT NULL DEFAULT 0, gas_resistance_kohm_count INTEGER NOT NULL DEFAULT 0,
        wind_direction_sin_sum REAL NOT NULL DEFAULT 0,
        wind_direction_cos_sum REAL NOT NULL DEFAULT 0,
        wind_direction_count INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (node_id, bucket_start)
      ) WITHOUT ROWID;

      -- Mesh nodes (NodeInfo, positions, device metrics); last_heard and updated_at in ms UTC.
      CREATE TABLE nodes (
        node_num INTEGER PRIMARY KEY,
        node_id TEXT NOT NULL UNIQUE,
        short_name TEXT,
        long_name TEXT,
        hw_model TEXT,
        latitude REAL,
        longitude REAL,
        altitude REAL,
        last_heard INTEGER,
        battery_level REAL,
        snr REAL,
        updated_at INTEGER NOT NULL
      );
    `,
  },
  // Append new migrations here: { version: 2, name: '...', up: `CREATE TABLE ...` },
];

export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
  constructor(
    readonly found: number,
    readonly known: number,
  ) {
    super(`database schema version ${found} is newer than this meshhub knows (${known}); upgrade meshhub`);
  }
}

export function schemaVersion(db: Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/** Applies every pending migration, each in its own transaction. Returns the resulting version. */
export function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new Error(`migration "${m.name}" has version ${m.version}, expected ${i + 1}`);
  });
  const current = schemaVersion(db);
  if (current > migrations.length) throw new SchemaTooNewError(current, migrations.length);
  for (const migration of migrations.slice(current)) {
    db.transaction(() => {
      if (typeof migration.up === 'string') db.exec(migration.up);
      else migration.up(db);
      // user_version lives in the database header and commits (or rolls back) with the transaction.
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
  return schemaVersion(db);
}
