/**
 * The ask, explain and job bodies and answers in zod: validation and the OpenAPI document both
 * come from here. The question field is `question`, async mode is `"async": true` (the spec
 * leaves both names open).
 */
import { z } from 'zod';
import { CONTROL_CHAR_IN_PASTED_TEXT } from '../../../src/kernel/text.js';
import { filterShape, refineWindow } from '../http/filters.js';
import { eventSchema } from '../http/schemas.js';

export const MAX_QUESTION_LENGTH = 2_000;

export const askBodySchema = z
  .object({
    question: z
      .string({ error: 'is required (a string)' })
      .max(MAX_QUESTION_LENGTH, `must be at most ${MAX_QUESTION_LENGTH} characters`)
      .refine((q) => !CONTROL_CHAR_IN_PASTED_TEXT.test(q), 'must be text, without control characters')
      .transform((q) => q.trim())
      .refine((q) => q.length > 0, 'must not be empty')
      .meta({ description: 'The question, in plain language.' }),
    ...filterShape,
    async: z
      .boolean({ error: 'must be true or false' })
      .optional()
      .meta({ description: 'Run in the background: 202 with `job_id`; poll GET /api/jobs/{job_id}.' }),
  })
  .strict()
  .superRefine((v, ctx) => refineWindow(v, ctx));

const source = z.enum(['request', 'question']);

export const queryInfoSchema = z.object({
  time_range: z.object({
    start: z.string().nullable(),
    end: z.string().nullable(),
    source: z.enum(['request', 'question', 'mixed', 'none']),
    phrase: z.string().optional(),
  }),
  filters: z.array(
    z.object({
      field: z.string(),
      value: z.union([z.string(), z.array(z.string())]),
      source,
      because: z.string().optional(),
    }),
  ),
  overridden: z.array(
    z.object({
      field: z.string(),
      question_value: z.union([z.string(), z.array(z.string())]),
      request_value: z.union([z.string(), z.array(z.string())]),
    }),
  ),
  entities: z.object({
    actors: z.array(z.string()),
    devices: z.array(z.string()),
    ips: z.array(z.string()),
    operations: z.array(z.string()),
  }),
  matched_on_actor_or_target: z.array(z.string()),
  excluded_services: z.object({ services: z.array(z.string()), reason: z.string() }).nullable(),
  notes: z.array(z.string()),
  events_fetched: z.int(),
  events_sampled: z.int(),
  events_shown: z.int(),
  counts_cover: z
    .object({
      events: z.int(),
      all_matched: z.boolean(),
      since: z.string().nullable(),
    })
    .meta({
      description:
        'What the counts by service, operation, result and actor cover: every matched event, or (all_matched false) the newest `events` of them, those since `since`.',
    }),
});

export const askAnswerSchema = z.object({
  answer: z.string(),
  events: z
    .array(eventSchema)
    .meta({ description: 'The events the answer cites, privacy-gated like /api/events.' }),
  query_info: queryInfoSchema,
  total_matched: z.int(),
  total_capped: z.boolean(),
  llm_used: z.boolean(),
  fallback_reason: z.string().optional(),
  cached: z.boolean(),
});

export const askAcceptedSchema = z.object({
  job_id: z.string(),
  status: z.literal('queued'),
});

export const jobSchema = z.object({
  job_id: z.string(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed']),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  expires_at: z.iso.datetime(),
  result: askAnswerSchema.optional(),
  error: z.string().optional(),
});

export const jobIdPathSchema = z.object({
  job_id: z.string().meta({ description: 'The id from the 202 answer of an async ask.' }),
});

export const explainAnswerSchema = z.object({
  event: eventSchema,
  explanation: z.string(),
  llm_used: z.boolean(),
  fallback_reason: z.string().optional(),
  cached: z.boolean(),
});
