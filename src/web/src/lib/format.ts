/** How values, ages, times and places are written in the UI. */
import type { MetricInfo } from './metrics.js';

export function formatNumber(value: number, digits: number): string {
  return value.toLocaleString('en', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
    useGrouping: false,
  });
}

/** `21.4 °C`, `63 %`, `270°`: a bare degree sign takes no space. */
export function withUnit(number: string, unit: string): string {
  return unit === '°' ? `${number}°` : `${number} ${unit}`;
}

/** An API value in display units: `1013.2 hPa`. */
export function formatMetric(metric: MetricInfo, apiValue: number): string {
  return withUnit(formatNumber(metric.display(apiValue), metric.digits), metric.unit);
}

const CARDINALS = [
  'N',
  'NNE',
  'NE',
  'ENE',
  'E',
  'ESE',
  'SE',
  'SSE',
  'S',
  'SSW',
  'SW',
  'WSW',
  'W',
  'WNW',
  'NW',
  'NNW',
];

/** The 16-point compass direction a wind comes from: 225 → SW. */
export function cardinal(degrees: number): string {
  const index = Math.round((((degrees % 360) + 360) % 360) / 22.5) % 16;
  return CARDINALS[index]!;
}

/** `just now`, `3 min ago`, `2 h ago`, `5 days ago`; a future time (clock skew) reads as just now. */
export function formatAge(thenMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.round((nowMs - thenMs) / 1000));
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 36) return `${hours} h ago`;
  const days = Math.round(hours / 24);
  return `${days} day${days === 1 ? '' : 's'} ago`;
}

/** `47.37690° N, 8.54170° E`. */
export function formatCoordinates(latitude: number, longitude: number): string {
  const lat = `${Math.abs(latitude).toFixed(5)}° ${latitude < 0 ? 'S' : 'N'}`;
  const lon = `${Math.abs(longitude).toFixed(5)}° ${longitude < 0 ? 'W' : 'E'}`;
  return `${lat}, ${lon}`;
}

export function formatDateTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}

export function formatTime(ms: number, nowMs: number): string {
  const date = new Date(ms);
  const today = new Date(nowMs).toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}
