/** How values, ages, times and places are written in the UI. */
import { type DurationUnit, roundedDuration } from '../../../domain/duration.js';
import { currentLocale, t } from '../i18n/index.js';
import type { MetricInfo } from './metrics.js';

export function formatNumber(value: number, digits: number): string {
  return value.toLocaleString(currentLocale(), {
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

/**
 * `just now`, `3 min ago`, `2 h ago`, `5 days ago` (in the language in use, with its plurals); a
 * future time (clock skew) reads as just now.
 */
export function formatAge(thenMs: number, nowMs: number): string {
  const seconds = Math.max(0, Math.round((nowMs - thenMs) / 1000));
  if (seconds < 45) return t('common.justNow');
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return t('common.minutesAgo', { count: minutes });
  const hours = Math.round(minutes / 60);
  if (hours < 36) return t('common.hoursAgo', { count: hours });
  return t('common.daysAgo', { count: Math.round(hours / 24) });
}

/** `47.37690° N, 8.54170° E` (`47,37690° N` in German: the locale's decimal sign). */
export function formatCoordinates(latitude: number, longitude: number): string {
  const lat = `${formatNumber(Math.abs(latitude), 5)}° ${t(latitude < 0 ? 'common.south' : 'common.north')}`;
  const lon = `${formatNumber(Math.abs(longitude), 5)}° ${t(longitude < 0 ? 'common.west' : 'common.east')}`;
  return `${lat}, ${lon}`;
}

/** `A`, `A and B`, `A, B and C`, in the language in use. */
export function joinWords(items: readonly string[]): string {
  if (items.length <= 1) return items[0] ?? '';
  return t('common.andList', { first: items.slice(0, -1).join(', '), last: items[items.length - 1]! });
}

const DURATION_KEYS = {
  second: 'common.duration.seconds',
  minute: 'common.duration.minutes',
  hour: 'common.duration.hours',
  day: 'common.duration.days',
} as const satisfies Record<DurationUnit, string>;

/**
 * `45 s`, `25 min`, `3 h`, `2 days` (`3 Std.`, `2 Tage`…) in the language in use: the hub's
 * rounding (src/domain/duration.ts, whose English words the hub keeps for its own reasons).
 */
export function durationWords(ms: number): string {
  const { value, unit } = roundedDuration(ms);
  return t(DURATION_KEYS[unit], { count: value });
}

/** `a or b or c` (`a oder b`…): alternatives, each joined with the language's “or”. */
export const orWords = (items: readonly string[]): string => items.join(` ${t('common.or')} `);

/** `a and b and c` (`a und b`…): every one of them, each joined with the language's “and”. */
export const andWords = (items: readonly string[]): string => items.join(` ${t('common.and')} `);

/** A number in the language in use, grouped as it writes thousands: `12,345` / `12.345`. */
export function formatCount(value: number): string {
  return value.toLocaleString(currentLocale());
}

export function formatDateTime(ms: number): string {
  return new Date(ms).toLocaleString(currentLocale(), {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });
}

/** The time of day to the second, as a packet log is read; the date goes in the cell's title. */
export function formatSeconds(ms: number): string {
  return new Date(ms).toLocaleTimeString(currentLocale(), {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

export function formatTime(ms: number, nowMs: number): string {
  const date = new Date(ms);
  const today = new Date(nowMs).toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString(currentLocale(), { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleString(currentLocale(), {
        month: 'short',
        day: 'numeric',
        hour: '2-digit',
        minute: '2-digit',
      });
}
