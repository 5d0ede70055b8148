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

/** An hourly rollup record's body: every sum and count 0 but those `values` gives. */
export function hourRollupBody(
  nodeId: string,
  bucketStart: number,
  values: Partial<RecordBody<'rollup'>> = {},
): RecordBody<'rollup'> {
  return {
    interval: '1h',
    node_id: nodeId,
    bucket_start: bucketStart,
    temperature_c_sum: 0,
    temperature_c_count: 0,
    humidity_percent_sum: 0,
    humidity_percent_count: 0,
    pressure_pa_sum: 0,
    pressure_pa_count: 0,
    wind_speed_ms_sum: 0,
    wind_speed_ms_count: 0,
    pm25_ugm3_sum: 0,
    pm25_ugm3_count: 0,
    pm10_ugm3_sum: 0,
    pm10_ugm3_count: 0,
    gas_resistance_kohm_sum: 0,
    gas_resistance_kohm_count: 0,
    wind_direction_sin_sum: 0,
    wind_direction_cos_sum: 0,
    wind_direction_count: 0,
    ...values,
  };
}
