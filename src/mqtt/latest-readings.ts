/**
 * Each node's latest merged reading, from the writer's memory (src/store/open-buckets.ts: current
 * once `reading.stored` fires), or `readings_latest` where no writer runs, in the shape of an item of
 * `GET /api/v1/weather/latest`: snake_case fields, absent metrics left out, `timestamp` the
 * newest reading as ISO 8601 UTC, `wind_direction` whole degrees in [0, 360).
 */

import { READING_METRICS, type ReadingMetric } from '../domain/reading.js';
import type { Database, Statement } from '../store/database.js';
import { openBuckets } from '../store/open-buckets.js';
import { METRIC_COLUMNS, WIND_DIRECTION_SLOT } from '../store/rollups.js';

export interface LatestReading {
  nodeId: string;
  /** ms UTC of the newest reading of any metric. */
  timestamp: number;
  /** The metrics the node has a value for. */
  metrics: ReadingMetric[];
  /** The event payload: `{"node_id":…,"timestamp":…,"temperature_c":…}`. */
  json: string;
}

/** Bound on one scan; far beyond one site's mesh. */
export const MAX_LATEST_ROWS = 10_000;

type Row = unknown[];

export class LatestReadings {
  private readonly one: Statement<unknown[], Row>;
  private readonly all: Statement<unknown[], Row>;

  constructor(private readonly db: Database) {
    const cols = METRIC_COLUMNS.join(', ');
    this.one = db
      .prepare(`SELECT node_id, ts, ${cols} FROM readings_latest WHERE node_id = ?`)
      .raw(true) as Statement<unknown[], Row>;
    this.all = db
      .prepare(`SELECT node_id, ts, ${cols} FROM readings_latest ORDER BY node_id LIMIT ${MAX_LATEST_ROWS}`)
      .raw(true) as Statement<unknown[], Row>;
  }

  get(nodeId: string): LatestReading | undefined {
    const open = openBuckets(this.db);
    const row = open ? open.latestRow(nodeId) : this.one.get(nodeId);
    return row ? toLatest(row) : undefined;
  }

  list(): LatestReading[] {
    const open = openBuckets(this.db);
    return (open ? open.latestRows(MAX_LATEST_ROWS) : this.all.all()).map(toLatest);
  }
}

function toLatest(row: Row): LatestReading {
  const nodeId = row[0] as string;
  const timestamp = row[1] as number;
  const out: Record<string, unknown> = { node_id: nodeId, timestamp: new Date(timestamp).toISOString() };
  const metrics: ReadingMetric[] = [];
  for (let slot = 0; slot < METRIC_COLUMNS.length; slot++) {
    const value = row[2 + slot] as number | null;
    if (value === null) continue;
    metrics.push(READING_METRICS[slot]!);
    out[METRIC_COLUMNS[slot]!] =
      slot === WIND_DIRECTION_SLOT ? ((Math.round(value) % 360) + 360) % 360 : value;
  }
  return { nodeId, timestamp, metrics, json: JSON.stringify(out) };
}
