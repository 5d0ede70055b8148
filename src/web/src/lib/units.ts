/**
 * The display settings a person picks once per browser: the units of temperature, pressure and
 * wind speed, and the colour scheme (the system's, light or dark), and the metric catalogue in
 * those units. The API always speaks its own units (°C, Pa, m/s). state/display.ts keeps the
 * choice in localStorage and applies the scheme.
 */

import { METRICS, type MetricInfo } from './metrics.js';

export type TemperatureUnit = 'c' | 'f';
export type PressureUnit = 'hpa' | 'inhg';
export type WindUnit = 'ms' | 'kmh' | 'mph' | 'kn';
export type ThemeChoice = 'auto' | 'light' | 'dark';

export interface DisplaySettings {
  temperature: TemperatureUnit;
  pressure: PressureUnit;
  wind: WindUnit;
  theme: ThemeChoice;
}

export const DEFAULT_DISPLAY: DisplaySettings = {
  temperature: 'c',
  pressure: 'hpa',
  wind: 'ms',
  theme: 'auto',
};

/** The choices, in the order the settings list them, with the words people read. */
export const DISPLAY_CHOICES = {
  temperature: [
    ['c', '°C'],
    ['f', '°F'],
  ],
  pressure: [
    ['hpa', 'hPa'],
    ['inhg', 'inHg'],
  ],
  wind: [
    ['ms', 'm/s'],
    ['kmh', 'km/h'],
    ['mph', 'mph'],
    ['kn', 'kn'],
  ],
  theme: [
    ['auto', 'System'],
    ['light', 'Light'],
    ['dark', 'Dark'],
  ],
} as const satisfies { [K in keyof DisplaySettings]: ReadonlyArray<readonly [DisplaySettings[K], string]> };

export const DISPLAY_STORAGE_KEY = 'meshhub.display';

/** Settings from what localStorage held: anything unknown or malformed falls back to the default. */
export function parseDisplay(text: string | null | undefined): DisplaySettings {
  let stored: Record<string, unknown> = {};
  try {
    const parsed: unknown = text ? JSON.parse(text) : {};
    if (parsed && typeof parsed === 'object') stored = parsed as Record<string, unknown>;
  } catch {
    // A hand-edited or foreign value: start from the defaults.
  }
  const pick = <K extends keyof DisplaySettings>(key: K): DisplaySettings[K] => {
    const value = stored[key];
    return DISPLAY_CHOICES[key].some(([v]) => v === value)
      ? (value as DisplaySettings[K])
      : DEFAULT_DISPLAY[key];
  };
  return {
    temperature: pick('temperature'),
    pressure: pick('pressure'),
    wind: pick('wind'),
    theme: pick('theme'),
  };
}

type Conversion = Pick<MetricInfo, 'unit' | 'digits' | 'csvColumn' | 'display'>;

const PA_PER_INHG = 3386.389;
const KNOT_MS = 1852 / 3600;
const MILE_HOUR_MS = 0.44704;

const TEMPERATURE: Record<TemperatureUnit, Conversion | undefined> = {
  c: undefined,
  f: { unit: '°F', digits: 1, csvColumn: 'temperature_f', display: (v) => (v * 9) / 5 + 32 },
};
const PRESSURE: Record<PressureUnit, Conversion | undefined> = {
  hpa: undefined,
  inhg: { unit: 'inHg', digits: 2, csvColumn: 'pressure_inhg', display: (v) => v / PA_PER_INHG },
};
const WIND: Record<WindUnit, Conversion | undefined> = {
  ms: undefined,
  kmh: { unit: 'km/h', digits: 1, csvColumn: 'wind_speed_kmh', display: (v) => v * 3.6 },
  mph: { unit: 'mph', digits: 1, csvColumn: 'wind_speed_mph', display: (v) => v / MILE_HOUR_MS },
  kn: { unit: 'kn', digits: 1, csvColumn: 'wind_speed_kn', display: (v) => v / KNOT_MS },
};

const catalogues = new Map<string, readonly MetricInfo[]>();

/** The metric catalogue in the chosen units (the same array for the same units, so views can memoise on it). */
export function displayMetrics(
  settings: Pick<DisplaySettings, 'temperature' | 'pressure' | 'wind'>,
): readonly MetricInfo[] {
  const key = `${settings.temperature}|${settings.pressure}|${settings.wind}`;
  let metrics = catalogues.get(key);
  if (!metrics) {
    const changes: Partial<Record<MetricInfo['key'], Conversion | undefined>> = {
      temperature_c: TEMPERATURE[settings.temperature],
      pressure_pa: PRESSURE[settings.pressure],
      wind_speed_ms: WIND[settings.wind],
    };
    metrics = METRICS.map((m) => {
      const change = changes[m.key];
      // Descriptors, not a spread: the label stays a getter that follows the language.
      if (!change) return m;
      const own = { ...Object.getOwnPropertyDescriptors(m), ...Object.getOwnPropertyDescriptors(change) };
      return Object.defineProperties({}, own) as MetricInfo;
    });
    catalogues.set(key, metrics);
  }
  return metrics;
}

/** `light` or `dark`: the choice, or for `auto` the system's. */
export function resolvedTheme(choice: ThemeChoice, systemDark: boolean): 'light' | 'dark' {
  return choice === 'auto' ? (systemDark ? 'dark' : 'light') : choice;
}
