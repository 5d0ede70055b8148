/**
 * An environmental reading, as the domain sees it (spec "Reading"). Units live in the names
 * (docs/architecture.md "Decisions": °C, %, Pa, m/s, degrees, µg/m³, kΩ). Every metric is optional:
 * a sensor sends what it has; absence is `undefined`, never 0.
 */
export interface Reading {
  /** `!` + 8 lower-case hex digits for Meshtastic nodes; any short id for plain sensors. */
  nodeId: string;
  /** Milliseconds since the epoch (UTC): the receive time, not the sender's clock. */
  timestamp: number;
  temperatureC?: number;
  humidityPercent?: number;
  pressurePa?: number;
  windSpeedMs?: number;
  windDirection?: number;
  pm25Ugm3?: number;
  pm10Ugm3?: number;
  gasResistanceKohm?: number;
}

/** The metric fields of a Reading, in the order the API lists them. */
export const READING_METRICS = [
  'temperatureC',
  'humidityPercent',
  'pressurePa',
  'windSpeedMs',
  'windDirection',
  'pm25Ugm3',
  'pm10Ugm3',
  'gasResistanceKohm',
] as const;

export type ReadingMetric = (typeof READING_METRICS)[number];

/** API (snake_case) name of each metric, as in the spec's Reading table. */
export const METRIC_API_NAMES: Record<ReadingMetric, string> = {
  temperatureC: 'temperature_c',
  humidityPercent: 'humidity_percent',
  pressurePa: 'pressure_pa',
  windSpeedMs: 'wind_speed_ms',
  windDirection: 'wind_direction',
  pm25Ugm3: 'pm25_ugm3',
  pm10Ugm3: 'pm10_ugm3',
  gasResistanceKohm: 'gas_resistance_kohm',
};
