/**
 * A database of about `bytes` with a year of 5-minute readings per node (500 nodes at most), as
 * the start and migrate benches use it: raw rows by SQL in the version-6 layout (REAL metrics,
 * text node ids), their hourly and daily rollups and latest rows. `version` 6 keeps it there (the
 * migration bench's input, `version6`); otherwise it is migrated to the current schema, as an upgraded hub's
 * database is.
 */
import { renameSync, rmSync, statSync } from 'node:fs';
import { closeDatabase, openDatabase } from '../../../src/store/database.js';
import { MIGRATIONS, migrate } from '../../../src/store/migrations.js';

const NODES = 500;
const PER_NODE = 105_408; // a year at 5 minutes

export function generateYearDatabase(file: string, options: { bytes: number; version6?: boolean }): void {
  const partial = `${file}.partial`;
  rmSync(partial, { force: true });
  // The migration's own backup goes to a folder removed at the end: this is a bench's input.
  const backups = `${partial}-backups`;
  const db = openDatabase(partial, { migrate: false, backupDir: backups });
  try {
    migrate(db, MIGRATIONS.slice(0, 6));
    const start = Date.UTC(2024, 0, 1);
    // One node at a time: 5-minute readings, every metric, a few decimals, as sensors send them.
    const insert = db.prepare(`
      WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1)
      INSERT INTO readings (node_id, ts, temperature_c, humidity_percent, pressure_pa, wind_speed_ms,
        wind_direction, pm25_ugm3, pm10_ugm3, gas_resistance_kohm)
      SELECT ?, ? + i * 300000, round(5 + (abs(random()) % 2000) / 100.0, 2), round(30 + (abs(random()) % 600) / 10.0, 1),
        95000 + abs(random()) % 8000, (abs(random()) % 150) / 10.0, abs(random()) % 360, abs(random()) % 40,
        abs(random()) % 60, (abs(random()) % 5000) / 10.0
      FROM k`);
    for (let n = 0; n < NODES; n++) {
      const node = `!${(0x3000_0000 + n).toString(16)}`;
      db.transaction(() => insert.run(PER_NODE, node, start + n * 1000))();
      if (statSync(partial).size >= options.bytes * 0.85) break;
    }
    const sums = (bucket: number) => `
      SELECT node_id, (ts / ${bucket}) * ${bucket},
        coalesce(sum(temperature_c), 0), count(temperature_c), coalesce(sum(humidity_percent), 0), count(humidity_percent),
        coalesce(sum(pressure_pa), 0), count(pressure_pa), coalesce(sum(wind_speed_ms), 0), count(wind_speed_ms),
        coalesce(sum(pm25_ugm3), 0), count(pm25_ugm3), coalesce(sum(pm10_ugm3), 0), count(pm10_ugm3),
        coalesce(sum(gas_resistance_kohm), 0), count(gas_resistance_kohm),
        coalesce(sum(sin(radians(wind_direction))), 0), coalesce(sum(cos(radians(wind_direction))), 0), count(wind_direction)
      FROM readings GROUP BY node_id, ts / ${bucket}`;
    const cols = `node_id, bucket_start, temperature_c_sum, temperature_c_count, humidity_percent_sum, humidity_percent_count,
      pressure_pa_sum, pressure_pa_count, wind_speed_ms_sum, wind_speed_ms_count, pm25_ugm3_sum, pm25_ugm3_count,
      pm10_ugm3_sum, pm10_ugm3_count, gas_resistance_kohm_sum, gas_resistance_kohm_count,
      wind_direction_sin_sum, wind_direction_cos_sum, wind_direction_count`;
    db.exec(`INSERT INTO readings_hourly (${cols}) ${sums(3_600_000)}`);
    db.exec(`INSERT INTO readings_daily (${cols}) ${sums(86_400_000)}`);
    db.exec(`INSERT INTO readings_latest (node_id, ts, temperature_c, temperature_c_ts)
      SELECT node_id, max(ts), 20, max(ts) FROM readings GROUP BY node_id`);
    if (!options.version6) migrate(db);
  } finally {
    closeDatabase(db);
  }
  rmSync(backups, { recursive: true, force: true });
  rmSync(`${partial}-wal`, { force: true });
  rmSync(`${partial}-shm`, { force: true });
  renameSync(partial, file);
}
