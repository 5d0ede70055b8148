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
