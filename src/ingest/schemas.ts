/**
 * `POST /api/v1/ingest/readings` in zod. The route validates with reading-input.ts — written by
 * hand for speed (10 000 readings per request) and shared with the MQTT topic — and this schema
 * states the same contract for the API document; a test keeps the two in agreement.
 */
import { z } from 'zod';
import { METRIC_API_NAMES, READING_METRICS, type ReadingMetric } from '../domain/reading.js';
import { problemSchema } from '../http/schemas.js';
import {
  FUTURE_TOLERANCE_MS,
  LIMITS,
  MAX_READINGS_PER_BATCH,
  OLDEST_TIMESTAMP_MS,
  parseIsoDateTime,
  READING_NODE_ID,
  READING_REJECT_REASONS,
} from './reading-input.js';

function metricSchema(metric: ReadingMetric) {
  const { min, max, unit, integer, hint } = LIMITS[metric];
  return (integer ? z.int() : z.number())
    .min(min)
    .max(max)
    .optional()
    .meta({ description: `${unit}${hint ?? ''}` });
}

const timestamp = z
  .string()
  .refine((value) => {
    const ms = parseIsoDateTime(value);
    return ms !== undefined && ms >= OLDEST_TIMESTAMP_MS && ms <= Date.now() + FUTURE_TOLERANCE_MS;
  }, 'must be an ISO 8601 date-time with Z or an offset, from 2000 to 5 minutes ahead of the hub clock')
  .optional()
  .meta({
    format: 'date-time',
    description:
      'ISO 8601 with Z or an offset; not before 2000-01-01, not more than 5 minutes ahead of the hub clock. Absent: the time the hub received it.',
  });

/** One reading as a sensor sends it: any other field is refused, so a typo is never dropped silently. */
export const ingestReadingSchema = z
  .strictObject({
    node_id: z.string().regex(READING_NODE_ID),
    timestamp,
    ...(Object.fromEntries(READING_METRICS.map((m) => [METRIC_API_NAMES[m], metricSchema(m)])) as Record<
      string,
      ReturnType<typeof metricSchema>
    >),
  })
  .refine(
    (reading) =>
      READING_METRICS.some((m) => (reading as Record<string, unknown>)[METRIC_API_NAMES[m]] !== undefined),
    'a reading needs at least one metric',
  )
  .meta({ description: 'At least one metric; units as the names say.' });

export const ingestBodySchema = z
  .union([ingestReadingSchema, z.array(ingestReadingSchema).min(1).max(MAX_READINGS_PER_BATCH)])
  .meta({
    description: `One reading or an array of up to ${MAX_READINGS_PER_BATCH}. Each is judged on its own: bad ones are rejected and listed, good ones stored.`,
  });

const rejectReasonSchema = z.enum(READING_REJECT_REASONS);

const readingProblemSchema = z.object({
  field: z.string().meta({ description: '`temperature_c`, or `[3].temperature_c` in an array.' }),
  message: z.string(),
  reason: rejectReasonSchema,
  index: z.int().min(0),
});

const counts = {
  accepted: z.int().min(0),
  rejected: z.int().min(0),
  rejected_by_reason: z
    .partialRecord(rejectReasonSchema, z.int().min(1))
    .meta({ description: `Rejected readings per reason: ${READING_REJECT_REASONS.join(', ')}.` }),
  errors_truncated: z.literal(true).optional(),
};

/** 202: the accepted readings are committed. */
export const ingestResultSchema = z.object({ ...counts, errors: z.array(readingProblemSchema) });

/** 422: every reading was rejected; nothing was stored. */
export const ingestRejectedSchema = problemSchema.extend({
  ...counts,
  errors: z.array(readingProblemSchema),
});
