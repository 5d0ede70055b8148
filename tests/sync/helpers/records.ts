import type { RecordBody } from '../../../sync/protocol.js';

type Metrics = Omit<RecordBody<'reading'>, 'node_id' | 'ts'>;

/** A per-reading record's body: every metric null but those given (keys in protocol order). */
export function readingBody(
  nodeId: string,
  ts: number,
  values: Partial<Metrics> = {},
): RecordBody<'reading'> {
  return {
    node_id: nodeId,
    ts,
    temperature_c: null,
    humidity_percent: null,
    pressure_pa: null,
    wind_speed_ms: null,
    wind_direction: null,
    pm25_ugm3: null,
    pm10_ugm3: null,
    gas_resistance_kohm: null,
    ...values,
  };
}

/**
 * A node record's body: the node heard and updated at `at`, nothing else known but what `values`
 * gives (keys in protocol order).
 */
export function nodeBody(
  nodeId: string,
  at: number,
  values: Partial<RecordBody<'node'>> = {},
): RecordBody<'node'> {
  return {
    node_num: Number.parseInt(nodeId.slice(1), 16),
    node_id: nodeId,
    short_name: null,
    long_name: null,
    hw_model: null,
    latitude: null,
    longitude: null,
    altitude: null,
    last_heard: at,
    battery_level: null,
    snr: null,
    updated_at: at,
    ...values,
  };
}
