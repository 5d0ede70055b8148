/**
 * What the live stream says, in the API's JSON shapes (spec "Reading"; README "/api/v1/nodes"),
 * so the dashboard merges live events into what it fetched with the same code.
 */

import type { NodeUpdate } from '../domain/node.js';
import type { RadioStatus } from '../domain/radio.js';
import { METRIC_API_NAMES, READING_METRICS, type Reading } from '../domain/reading.js';
import { nodeJson } from '../nodes/routes.js';

/** One Reading as `/weather/latest` and `/weather/history` write it: absent metrics left out. */
export function readingJson(reading: Reading): Record<string, string | number> {
  const out: Record<string, string | number> = {
    node_id: reading.nodeId,
    timestamp: new Date(reading.timestamp).toISOString(),
  };
  for (const metric of READING_METRICS) {
    const value = reading[metric];
    if (value === undefined || !Number.isFinite(value)) continue;
    // wind_direction is an integer in the spec, in [0, 360) as the weather routes write it.
    out[METRIC_API_NAMES[metric]] =
      metric === 'windDirection' ? ((Math.round(value) % 360) + 360) % 360 : value;
  }
  return out;
}

/** `{"data":[…]}`: the readings one commit stored, in the order they were stored. */
export function readingsEventData(readings: readonly Reading[]): string {
  return JSON.stringify({ data: readings.map(readingJson) });
}

/** The fields one packet told about a node (a partial `/api/v1/nodes` item): merge, do not replace. */
export function nodeEventData(update: NodeUpdate): string {
  return JSON.stringify(nodeJson(update));
}

/** The radio link as `/health` reports it. */
export function radioEventData(status: RadioStatus): string {
  return JSON.stringify(status);
}
