/**
 * Validation of readings sent as JSON by plain sensors: the MQTT topic `meshhub/ingest/readings`
 * and `POST /api/v1/ingest/readings` share it, so both accept and refuse exactly the same things.
 *
 * A payload is one Reading object or an array of them, with the spec's snake_case fields
 * (spec "Reading"). Each item is judged on its own: a bad item is rejected with every problem
 * it has, named by field and reason, and never takes the good items of the same batch down.
 *
 * Rules (README "Ingesting readings"):
 * - `node_id` is required: 1–64 characters of letters, digits and `! . _ : -` (it becomes an MQTT
 *   topic level and a Home Assistant id, so `/`, `+`, `#` and spaces are out);
 * - `timestamp` is optional (the hub's receive time when absent), an ISO 8601 date-time with `Z`
 *   or an offset, not before 2000-01-01 and not more than 5 minutes ahead of the hub's clock;
 * - every metric is a JSON number within a physically plausible range (LIMITS);
 *   `wind_direction` is an integer; at least one metric is present;
 * - any other field is refused, so a typo (`temprature_c`) is never silently dropped.
 */
import { METRIC_API_NAMES, READING_METRICS, type Reading, type ReadingMetric } from '../domain/reading.js';

export const READING_REJECT_REASONS = [
  'not_an_object',
  'unknown_field',
  'missing_node_id',
  'invalid_node_id',
  'invalid_timestamp',
  'timestamp_in_future',
  'timestamp_too_old',
  'not_a_number',
  'not_an_integer',
  'out_of_range',
  'no_metrics',
] as const;

export type ReadingRejectReason = (typeof READING_REJECT_REASONS)[number];

export interface ReadingProblem {
  /** Position of the item in the payload (0 for a single object). */
  index: number;
  /** `temperature_c` for a single object, `[3].temperature_c` for the fourth item of an array. */
  field: string;
  reason: ReadingRejectReason;
  message: string;
}

export interface ValidatedReadings {
  readings: Reading[];
  accepted: number;
  /** Items rejected; each counts once, under the reason of its first problem. */
  rejected: number;
  rejectedByReason: Partial<Record<ReadingRejectReason, number>>;
  /** Every problem of every rejected item, up to `maxProblems`. */
  problems: ReadingProblem[];
  /** True when more problems existed than `problems` lists. */
  problemsTruncated: boolean;
}

interface MetricLimit {
  min: number;
  max: number;
  unit: string;
  integer?: boolean;
  hint?: string;
}

/** Plausible values on Earth, with room for sensors in odd places (greenhouses, mountain tops). */
export const LIMITS: Record<ReadingMetric, MetricLimit> = {
  temperatureC: { min: -100, max: 100, unit: '°C' },
  humidityPercent: { min: 0, max: 100, unit: '%' },
  pressurePa: { min: 30_000, max: 110_000, unit: 'Pa', hint: ' (a value in hPa must be multiplied by 100)' },
  windSpeedMs: { min: 0, max: 120, unit: 'm/s' },
  windDirection: { min: 0, max: 360, unit: 'degrees', integer: true },
  pm25Ugm3: { min: 0, max: 2_000, unit: 'µg/m³' },
  pm10Ugm3: { min: 0, max: 2_000, unit: 'µg/m³' },
  gasResistanceKohm: { min: 0, max: 100_000, unit: 'kΩ' },
};

const METRIC_BY_API_NAME = new Map<string, ReadingMetric>(
  READING_METRICS.map((m) => [METRIC_API_NAMES[m], m]),
);
export const READING_NODE_ID = /^[A-Za-z0-9!._:-]{1,64}$/;
/** 2000-01-01T00:00:00Z: anything earlier is a sensor whose clock was never set. */
export const OLDEST_TIMESTAMP_MS = 946_684_800_000;
/** Clock skew allowed between a sensor and the hub. */
export const FUTURE_TOLERANCE_MS = 5 * 60_000;
const DEFAULT_MAX_PROBLEMS = 1_000;
/** Most readings in one HTTP request or one MQTT message. */
export const MAX_READINGS_PER_BATCH = 10_000;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return DAYS_IN_MONTH[month - 1]!;
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

/** The number of `count` ASCII digits at `at`, or -1. */
function digits(value: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * ms since the epoch of an ISO 8601 date-time with Z or an offset,
 * `YYYY-MM-DDTHH:MM[:SS[.fraction]](Z|±HH:MM)`; undefined when it is not one (no date-only, no
 * local time, no 24:00, no 30 February). Read field by field: on a batch of 10 000 readings,
 * a regular expression and Date.parse were most of the cost of validation.
 */
export function parseIsoDateTime(value: string): number | undefined {
  const n = value.length;
  if (n < 17 || n > 40) return undefined;
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 2);
  const day = digits(value, 8, 2);
  const hour = digits(value, 11, 2);
  const minute = digits(value, 14, 2);
  if (value[4] !== '-' || value[7] !== '-' || value[10] !== 'T' || value[13] !== ':') return undefined;
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return undefined;
  let at = 16;
  let second = 0;
  let ms = 0;
  if (value[at] === ':') {
    second = digits(value, at + 1, 2);
    if (second < 0 || second > 59) return undefined;
    at += 3;
    if (value[at] === '.') {
      const start = ++at;
      while (at < n && at - start < 9 && value.charCodeAt(at) >= 48 && value.charCodeAt(at) <= 57) at++;
      if (at === start) return undefined;
      ms = digits(`${value.slice(start, at)}000`, 0, 3);
    }
  }
  let offsetMinutes = 0;
  const zone = value[at];
  if ((zone === 'Z' || zone === 'z') && at + 1 === n) {
    // UTC
  } else if ((zone === '+' || zone === '-') && at + 6 === n && value[at + 3] === ':') {
    const oh = digits(value, at + 1, 2);
    const om = digits(value, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMinutes = (zone === '-' ? -1 : 1) * (oh * 60 + om);
  } else {
    return undefined;
  }
  let time = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC reads years 0–99 as 1900–1999.
  if (year < 100) time = new Date(time).setUTCFullYear(year);
  return time - offsetMinutes * 60_000;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return 'a string';
  return typeof value === 'object' ? 'an object' : String(value);
}

/**
 * The items of a payload: an array as it is, a single object as a batch of one. Anything else
 * (a number, a string, null) is one item that will be rejected as not an object.
 */
export function payloadItems(payload: unknown): { items: unknown[]; array: boolean } {
  return Array.isArray(payload) ? { items: payload, array: true } : { items: [payload], array: false };
}

export function validateReadings(
  items: readonly unknown[],
  options: { nowMs: number; array: boolean; maxProblems?: number },
): ValidatedReadings {
  const { nowMs, array } = options;
  const maxProblems = options.maxProblems ?? DEFAULT_MAX_PROBLEMS;
  const result: ValidatedReadings = {
    readings: [],
    accepted: 0,
    rejected: 0,
    rejectedByReason: {},
    problems: [],
    problemsTruncated: false,
  };
  const itemProblems: ReadingProblem[] = [];
  for (let index = 0; index < items.length; index++) {
    itemProblems.length = 0;
    const reading = validateOne(items[index], index, array, nowMs, itemProblems);
    if (reading) {
      result.readings.push(reading);
      result.accepted++;
      continue;
    }
    result.rejected++;
    const first = itemProblems[0]!.reason;
    result.rejectedByReason[first] = (result.rejectedByReason[first] ?? 0) + 1;
    for (const problem of itemProblems) {
      if (result.problems.length < maxProblems) result.problems.push(problem);
      else result.problemsTruncated = true;
    }
  }
  return result;
}

function fieldName(name: string, index: number, array: boolean): string {
  if (!array) return name || '(body)';
  return name ? `[${index}].${name}` : `[${index}]`;
}

function validateOne(
  item: unknown,
  index: number,
  array: boolean,
  nowMs: number,
  problems: ReadingProblem[],
): Reading | undefined {
  const fail = (name: string, reason: ReadingRejectReason, message: string) =>
    problems.push({ index, field: fieldName(name, index, array), reason, message });

  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    fail('', 'not_an_object', `a reading must be a JSON object, got ${describe(item)}`);
    return undefined;
  }
  const input = item as Record<string, unknown>;
  let nodeId: string | undefined;
  let timestamp = nowMs;
  const reading = { nodeId: '', timestamp: nowMs } as Reading;
  let metrics = 0;

  for (const key of Object.keys(input)) {
    const value = input[key];
    if (key === 'node_id') {
      if (typeof value === 'string' && READING_NODE_ID.test(value)) nodeId = value;
      else
        fail(key, 'invalid_node_id', 'node_id must be 1 to 64 characters of letters, digits and ! . _ : -');
      continue;
    }
    if (key === 'timestamp') {
      const ms = typeof value === 'string' ? parseIsoDateTime(value) : undefined;
      if (ms === undefined) {
        fail(
          key,
          'invalid_timestamp',
          'timestamp must be an ISO 8601 date-time with Z or an offset, e.g. 2026-11-21T10:00:00Z',
        );
      } else if (ms > nowMs + FUTURE_TOLERANCE_MS) {
        fail(key, 'timestamp_in_future', 'timestamp is more than 5 minutes ahead of the hub clock');
      } else if (ms < OLDEST_TIMESTAMP_MS) {
        fail(key, 'timestamp_too_old', 'timestamp is before 2000-01-01: is the sensor clock set?');
      } else {
        timestamp = ms;
      }
      continue;
    }
    const metric = METRIC_BY_API_NAME.get(key);
    if (metric === undefined) {
      fail(key, 'unknown_field', `unknown field "${key.slice(0, 64)}"`);
      continue;
    }
    const limit = LIMITS[metric];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      fail(key, 'not_a_number', `${key} must be a number in ${limit.unit}, got ${describe(value)}`);
    } else if (limit.integer && !Number.isInteger(value)) {
      fail(key, 'not_an_integer', `${key} must be a whole number of ${limit.unit}`);
    } else if (value < limit.min || value > limit.max) {
      fail(
        key,
        'out_of_range',
        `${key} must be between ${limit.min} and ${limit.max} ${limit.unit}${limit.hint ?? ''}`,
      );
    } else {
      reading[metric] = value;
      metrics++;
    }
  }

  if (nodeId === undefined && !('node_id' in input))
    fail('node_id', 'missing_node_id', 'node_id is required');
  if (metrics === 0 && problems.length === 0) {
    fail(
      '',
      'no_metrics',
      `a reading needs at least one of ${READING_METRICS.map((m) => METRIC_API_NAMES[m]).join(', ')}`,
    );
  }
  if (problems.length > 0 || nodeId === undefined) return undefined;
  reading.nodeId = nodeId;
  reading.timestamp = timestamp;
  return reading;
}
