/**
 * `/api/v1/weather` in zod (spec "Reading", "Endpoints"; docs/architecture.md "Decisions"): the query
 * parameters the routes validate with, and the Reading they answer. Plain zod: the web UI takes
 * its types from here.
 */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam } from '../http/schemas.js';

export type HistoryInterval = 'raw' | '1h' | '1d';
export const HISTORY_INTERVALS: readonly HistoryInterval[] = ['raw', '1h', '1d'];
export const MAX_HISTORY_LIMIT = 10_000;
export const DEFAULT_HISTORY_LIMIT = 1_000;

const required = (what: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? 'is required' : `must be ${what}`;

const nodeIdParam = z
  .string({ error: required('a node id') })
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters');

export const dateTimeParam = z.iso
  .datetime({
    offset: true,
    error: (issue) =>
      issue.input === undefined
        ? 'is required'
        : 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z',
  })
  .transform((value) => Date.parse(value));

export const historyIntervalSchema = z.enum(HISTORY_INTERVALS as [HistoryInterval, ...HistoryInterval[]], {
  error: `must be one of ${HISTORY_INTERVALS.join(', ')}`,
});

export const latestQuerySchema = z.object({
  node_id: nodeIdParam.optional().meta({ description: 'Only this node.' }),
});

/** Unknown parameters are ignored (stripped), as a browser's extra parameters should be. */
export const historyQuerySchema = z.object({
  node_id: nodeIdParam,
  start: dateTimeParam.meta({ description: 'Inclusive; any ISO 8601 offset.' }),
  end: dateTimeParam.meta({ description: 'Exclusive; after start.' }),
  interval: historyIntervalSchema.default('raw').meta({
    description: 'raw: every reading; 1h / 1d: means per UTC hour / day (wind direction a circular mean).',
  }),
  limit: limitParam({ default: DEFAULT_HISTORY_LIMIT, max: MAX_HISTORY_LIMIT }).optional(),
  cursor: z.string().optional().meta({ description: CURSOR_DESCRIPTION }),
});

const utc = z.iso.datetime().meta({ description: 'ISO 8601 UTC with Z.' });

/** A Reading as every route writes it (spec "Reading"): units in the names; absent metrics omitted. */
export const readingSchema = z.object({
  node_id: z.string(),
  timestamp: utc,
  temperature_c: z.number().optional(),
  humidity_percent: z.number().optional(),
  pressure_pa: z.number().optional(),
  wind_speed_ms: z.number().optional(),
  wind_direction: z.int().min(0).max(359).optional().meta({ description: 'Whole degrees in [0, 360).' }),
  pm25_ugm3: z.number().optional(),
  pm10_ugm3: z.number().optional(),
  gas_resistance_kohm: z.number().optional(),
});

export const readingListSchema = z.object({ data: z.array(readingSchema) });

export type ReadingJson = z.output<typeof readingSchema>;
