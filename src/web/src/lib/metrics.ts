/**
 * The metrics a Reading can carry (spec "Reading"), with how people read them: pressure in hPa
 * (the API says Pa, weather reports say hPa), each with its unit and a sensible precision.
 */

import type { ReadingJson } from '../api/types.js';
import { t } from '../i18n/index.js';

export type MetricKey =
  | 'temperature_c'
  | 'humidity_percent'
  | 'pressure_pa'
  | 'wind_speed_ms'
  | 'wind_direction'
  | 'pm25_ugm3'
  | 'pm10_ugm3'
  | 'gas_resistance_kohm';

export interface MetricInfo {
  key: MetricKey;
  /** In the language in use (read it when rendering). */
  readonly label: string;
  unit: string;
  /** Decimal places shown. */
  digits: number;
  /** The CSV column: the API's name, with the unit changed where the display changes it. */
  csvColumn: string;
  /** Lines join readings; points suit a direction, which has no meaningful in-between. */
  chart: 'line' | 'points';
  /** The API value in display units. */
  display(value: number): number;
}

const same = (v: number) => v;

export const METRICS: readonly MetricInfo[] = [
  {
    key: 'temperature_c',
    get label() {
      return t('mesh.metric.temperature_c');
    },
    unit: '°C',
    digits: 1,
    csvColumn: 'temperature_c',
    chart: 'line',
    display: same,
  },
  {
    key: 'humidity_percent',
    get label() {
      return t('mesh.metric.humidity_percent');
    },
    unit: '%',
    digits: 0,
    csvColumn: 'humidity_percent',
    chart: 'line',
    display: same,
  },
  {
    key: 'pressure_pa',
    get label() {
      return t('mesh.metric.pressure_pa');
    },
    unit: 'hPa',
    digits: 1,
    csvColumn: 'pressure_hpa',
    chart: 'line',
    display: (v) => v / 100,
  },
  {
    key: 'wind_speed_ms',
    get label() {
      return t('mesh.metric.wind_speed_ms');
    },
    unit: 'm/s',
    digits: 1,
    csvColumn: 'wind_speed_ms',
    chart: 'line',
    display: same,
  },
  {
    key: 'wind_direction',
    get label() {
      return t('mesh.metric.wind_direction');
    },
    unit: '°',
    digits: 0,
    csvColumn: 'wind_direction',
    chart: 'points',
    display: same,
  },
  {
    key: 'pm25_ugm3',
    get label() {
      return t('mesh.metric.pm25_ugm3');
    },
    unit: 'µg/m³',
    digits: 0,
    csvColumn: 'pm25_ugm3',
    chart: 'line',
    display: same,
  },
  {
    key: 'pm10_ugm3',
    get label() {
      return t('mesh.metric.pm10_ugm3');
    },
    unit: 'µg/m³',
    digits: 0,
    csvColumn: 'pm10_ugm3',
    chart: 'line',
    display: same,
  },
  {
    key: 'gas_resistance_kohm',
    get label() {
      return t('mesh.metric.gas_resistance_kohm');
    },
    unit: 'kΩ',
    digits: 0,
    csvColumn: 'gas_resistance_kohm',
    chart: 'line',
    display: same,
  },
];

export const METRIC_KEYS: readonly MetricKey[] = METRICS.map((m) => m.key);

export function metricInfo(key: MetricKey): MetricInfo {
  return METRICS.find((m) => m.key === key)!;
}

/** A reading as the API sends it: metrics it did not carry are absent. */
export type { ReadingJson };
