import { type RecordBody, rollupBody } from '../../../sync/protocol.js';

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

type Rollup = RecordBody<'rollup'>;

/** Every sum and count of a rollup, 0 (the figures of a bucket with nothing in it). */
const ZERO_FIGURES = Object.fromEntries(
  Object.keys(rollupBody.shape)
    .filter((key) => /_(sum|count)$/.test(key))
    .map((key) => [key, 0]),
);

/** An hourly rollup record's body: every sum and count 0 but those `values` gives. */
export function hourRollupBody(nodeId: string, bucketStart: number, values: Partial<Rollup> = {}): Rollup {
  return {
    interval: '1h',
    node_id: nodeId,
    bucket_start: bucketStart,
    ...ZERO_FIGURES,
    ...values,
  } as Rollup;
}
