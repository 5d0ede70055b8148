/**
 * Durations in the words people use, one copy for the hub's reasons and the web's labels
 * (the browser may import src/domain).
 */

export type DurationUnit = 'second' | 'minute' | 'hour' | 'day';
const SHORT: Record<DurationUnit, string> = { second: 's', minute: 'min', hour: 'h', day: 'day' };

/**
 * The whole number and unit a person would round `ms` to: under a minute in seconds, under
 * 2 h in minutes (a whole hour as `1 h`), under 36 h in hours, else days. The web UI words the
 * same rounding in the language in use (src/web/src/lib/format.ts).
 */
export function roundedDuration(ms: number): { value: number; unit: DurationUnit } {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return { value: seconds, unit: 'second' };
  const minutes = Math.round(seconds / 60);
  if (minutes < 60 || (minutes < 120 && minutes % 60 !== 0)) return { value: minutes, unit: 'minute' };
  const hours = Math.round(minutes / 60);
  if (hours < 36) return { value: hours, unit: 'hour' };
  return { value: Math.round(hours / 24), unit: 'day' };
}

/** `45 s`, `25 min`, `3 h`, `2 days`. */
export function durationWords(ms: number): string {
  const { value, unit } = roundedDuration(ms);
  if (unit === 'day') return `${value} day${value === 1 ? '' : 's'}`;
  return `${value} ${SHORT[unit]}`;
}

/** `1-minute`, `90-minute`, `6-hour`, `2-day`: a duration before a noun ("its 6-hour hold"). */
export function durationAdjective(ms: number): string {
  const { value, unit } = roundedDuration(ms);
  return `${value}-${unit}`;
}
