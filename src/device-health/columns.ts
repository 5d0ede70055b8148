/**
 * Device health's series (docs/architecture.md "Decisions"): one row of plain metrics per
 * sample, in this slot order, stored with the readings' rollup rule (src/store/rollups.ts: raw
 * rows, hourly and daily sums and counts, UTC buckets, means on read) and each metric's newest
 * value. The SQL column names are the API's field names.
 */
import type { DeviceHealthSample } from '../domain/mesh.js';
import { finite } from '../mesh/packet-decoder.js';
import { COLUMN_SEPARATOR as SEP, SQL_TYPES } from '../store/ddl.js';
import {
  latestColumnsDdl,
  linearAccSize,
  linearRollupColumns,
  readingColumnsDdl,
  rollupColumnsDdl,
} from '../store/rollups.js';

export const HEALTH_COLUMNS = [
  'battery_level',
  'voltage',
  'channel_utilization',
  'air_util_tx',
  'uptime_seconds',
  'snr',
  'rssi',
  'noise_floor',
  'packets_tx',
  'packets_rx',
  'packets_rx_bad',
] as const;

export type HealthColumn = (typeof HEALTH_COLUMNS)[number];
export const HEALTH_SLOTS = HEALTH_COLUMNS.length;
export const HEALTH_ACC_SIZE = linearAccSize(HEALTH_SLOTS);
export const HEALTH_ROLLUP_COLUMNS: readonly string[] = linearRollupColumns(HEALTH_COLUMNS);

export const HEALTH_TABLE = 'device_health';
export const HEALTH_ROLLUP_TABLE = { '1h': 'device_health_hourly', '1d': 'device_health_daily' } as const;
export const HEALTH_LATEST_TABLE = 'device_health_latest';

/** One sample as stored: a node, a time and values in slot order (null: not sent). */
export interface HealthRow {
  nodeId: string;
  ts: number;
  values: (number | null)[];
}

/** A `device.metrics` sample's values in slot order. */
export function sampleValues(s: DeviceHealthSample): (number | null)[] {
  const values: (number | null)[] = new Array<number | null>(HEALTH_SLOTS).fill(null);
  values[0] = finite(s.batteryLevel) ?? null;
  values[1] = finite(s.voltage) ?? null;
  values[2] = finite(s.channelUtilization) ?? null;
  values[3] = finite(s.airUtilTx) ?? null;
  values[4] = finite(s.uptimeSeconds) ?? null;
  if (s.localStats) {
    values[7] = finite(s.localStats.noiseFloor) ?? null;
    values[8] = finite(s.localStats.packetsTx) ?? null;
    values[9] = finite(s.localStats.packetsRx) ?? null;
    values[10] = finite(s.localStats.packetsRxBad) ?? null;
  }
  return values;
}

/** A link-quality sample's values: SNR (dB) and RSSI (dBm) of a packet the hub's radio heard directly. */
export function linkValues(snr: number | undefined, rssi: number | undefined): (number | null)[] {
  const values: (number | null)[] = new Array<number | null>(HEALTH_SLOTS).fill(null);
  values[5] = finite(snr) ?? null;
  values[6] = finite(rssi) ?? null;
  return values;
}

const T = SQL_TYPES.sqlite;

function rollupTableDdl(table: string): string {
  return `CREATE TABLE ${table} (
        node_id TEXT NOT NULL,
        bucket_start INTEGER NOT NULL,
        ${rollupColumnsDdl(T, HEALTH_ROLLUP_COLUMNS).join(SEP)},
        PRIMARY KEY (node_id, bucket_start)
      ) WITHOUT ROWID;`;
}

/** The feature's tables (migrateComponent 'device-health'): the readings' layout over these columns. */
export const HEALTH_MIGRATIONS = [
  {
    version: 1,
    name: 'device health samples, hourly and daily rollups, latest',
    up: `
      CREATE TABLE ${HEALTH_TABLE} (
        node_id TEXT NOT NULL,
        ts INTEGER NOT NULL,
        ${readingColumnsDdl(T, HEALTH_COLUMNS).join(SEP)},
        PRIMARY KEY (node_id, ts)
      ) WITHOUT ROWID;
      ${rollupTableDdl(HEALTH_ROLLUP_TABLE['1h'])}
      ${rollupTableDdl(HEALTH_ROLLUP_TABLE['1d'])}
      CREATE TABLE ${HEALTH_LATEST_TABLE} (
        node_id TEXT PRIMARY KEY,
        ts INTEGER NOT NULL,
        ${latestColumnsDdl(T, HEALTH_COLUMNS).join(SEP)}
      ) WITHOUT ROWID;
    `,
  },
] as const;
