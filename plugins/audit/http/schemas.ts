/**
 * The audit routes' bodies and answers in zod (spec audit-event-search-service.md): the request
 * bodies the routes validate with, and the JSON they answer, for the OpenAPI document. The
 * search and export filters are in filters.ts.
 */
import { z } from 'zod';
import { SOURCE_NAMES, type SourceName } from '../sources.js';
import { MAX_TAGS_PER_EVENT } from '../store/annotations.js';
import { filterShape, refineWindow, tagSchema } from './filters.js';

export const BULK_TAG_CAP = 10_000;
export const MAX_COMMENT_LENGTH = 2_000;

// --- request bodies ---

export const tagsBodySchema = z
  .object({
    tags: z.array(tagSchema).max(MAX_TAGS_PER_EVENT, `at most ${MAX_TAGS_PER_EVENT} tags`),
  })
  .strict()
  .meta({ description: 'The event’s tags afterwards (an empty list removes them all).' });

export const commentBodySchema = z
  .object({
    text: z
      .string({ error: 'is required' })
      .trim()
      .min(1, 'must not be empty')
      .max(MAX_COMMENT_LENGTH, `must be at most ${MAX_COMMENT_LENGTH} characters`),
  })
  .strict();

export const bulkTagsBodySchema = z
  .object({
    filters: z
      .object(filterShape)
      .strict()
      .superRefine((v, ctx) => refineWindow(v, ctx))
      .default({})
      .meta({ description: 'The search filters; at least one.' }),
    tags: z.array(tagSchema).max(MAX_TAGS_PER_EVENT, `at most ${MAX_TAGS_PER_EVENT} tags`),
    mode: z.enum(['append', 'replace'], { error: 'must be append or replace' }).default('append'),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.mode === 'append' && v.tags.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['tags'], message: 'append needs at least one tag' });
    }
  });

export const fetchBodySchema = z
  .object({
    sources: z
      .array(
        z.enum(SOURCE_NAMES as [SourceName, ...SourceName[]], {
          error: `must be one of ${SOURCE_NAMES.join(', ')}`,
        }),
      )
      .min(1, 'name at least one source')
      .optional()
      .meta({ description: 'Default: every source collected here (AUDIT_SOURCES).' }),
  })
  .strict();

/** Microsoft Graph change notifications. */
export const notificationsBodySchema = z.object({
  value: z
    .array(
      z
        .object({
          clientState: z.string().optional(),
          changeType: z.string().optional(),
          lifecycleEvent: z.string().optional(),
        })
        .passthrough(),
    )
    .min(1, 'must hold at least one notification')
    .max(10_000, 'too many notifications'),
});

export const webhookQuerySchema = z.object({
  validationToken: z
    .string()
    .optional()
    .meta({ description: 'Subscription validation: answered as text/plain, decoded.' }),
});

export const eventIdPathSchema = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .meta({ description: 'The event id (a decimal number).' }),
});

// --- answers ---

const utc = z.iso.datetime();

export const commentSchema = z.object({
  id: z.string(),
  author: z.string(),
  text: z.string(),
  created_at: utc,
});

/** Spec "Event": id, timestamp, service, operation, result, actor, tags, comments; and where it came from. */
export const eventSchema = z.object({
  id: z.string(),
  timestamp: utc,
  service: z.string(),
  operation: z.string(),
  result: z.enum(['success', 'failure', 'unknown']),
  result_raw: z.string().meta({ description: 'What the source said.' }),
  actor: z.string(),
  target: z.string(),
  tags: z.array(z.string()),
  comments: z.array(commentSchema),
  source: z.enum(SOURCE_NAMES as [SourceName, ...SourceName[]]),
  source_id: z.string(),
  tenant: z.string().meta({
    description:
      'The Microsoft 365 tenant it was collected from, by the short name the operator gave it (AUDIT_TENANTS); `default` on a single-tenant hub.',
  }),
});

export const eventDetailSchema = eventSchema.extend({
  raw: z.unknown().meta({ description: 'The record as the source sent it; null when not kept.' }),
});

export const eventPageSchema = z.object({
  data: z.array(eventSchema).meta({ description: 'Newest first.' }),
  next_cursor: z.string().nullable().meta({ description: 'Older events; null at the end.' }),
  prev_cursor: z.string().nullable().meta({ description: 'Newer events; null on the first page.' }),
  limit: z.int(),
});

export const bulkTagsResultSchema = z.object({
  mode: z.enum(['append', 'replace']),
  tags: z.array(z.string()),
  matched: z.int(),
  updated: z.int(),
  unchanged: z.int(),
  truncated: z
    .boolean()
    .meta({ description: `More than ${BULK_TAG_CAP} events matched: only that many were tagged.` }),
  limit: z.int(),
});

export const filterOptionsSchema = z.object({
  services: z.array(z.string()),
  service_labels: z
    .record(z.string(), z.string())
    .meta({ description: 'How the UI shows each service, e.g. `{ "exchange": "Exchange" }`.' }),
  operations: z.array(z.string()),
  results: z.array(z.string()),
  tags: z.array(z.string()),
});

const nullableTime = utc.nullable();

export const sourceHealthSchema = z.object({
  collection: z.enum(['on', 'not_configured']),
  fetch_allowed: z.boolean().meta({
    description:
      'Whether this caller may POST /api/fetch (the console shows "Fetch now" only then): with AUTH_ENABLED a role in AUDIT_ADMIN_ROLES (default `admin`); with auth off, anyone.',
  }),
  siem: z
    .object({
      endpoint: z.string().meta({ description: 'The SIEM_WEBHOOK_URL host (no path, no secret).' }),
      format: z.enum(['meshhub-json', 'splunk-hec']),
      status: z.string().meta({
        description: '`idle`, `delivering`, `retrying` (backing off) or `held` (refused; nothing skipped).',
      }),
      checkpoint: z
        .string()
        .nullable()
        .meta({ description: 'The last event sequence number the SIEM accepted.' }),
      lag_events: z.int().nullable(),
      delivered: z.int(),
      rejected: z.int(),
      failures: z.int(),
      consecutive_failures: z.int(),
      last_error: z.string().nullable(),
      last_success_time: nullableTime,
      next_attempt_time: nullableTime,
    })
    .nullable()
    .meta({ description: 'SIEM forwarding (issue 14): null when SIEM_ENABLED is off.' }),
  data: z.array(
    z.object({
      source: z.enum(SOURCE_NAMES as [SourceName, ...SourceName[]]),
      status: z.enum(['pending', 'running', 'ok', 'error', 'throttled', 'not_configured']),
      last_attempt_time: nullableTime,
      last_success_time: nullableTime,
      error: z.string().nullable(),
      consecutive_failures: z.int(),
      watermark: nullableTime,
      events_fetched: z.int(),
      events_stored: z.int(),
      duplicates: z.int(),
      malformed: z.int(),
      throttled: z.int(),
      failed_runs: z.int(),
      pending_blobs: z.int(),
    }),
  ),
});

export const fetchAcceptedSchema = z.object({
  status: z.enum(['queued', 'already_queued']),
  sources: z.array(z.enum(SOURCE_NAMES as [SourceName, ...SourceName[]])),
});

const authState = z.enum(['off', 'on', 'misconfigured']);

export const featuresSchema = z.object({
  version: z.string(),
  ai_features_enabled: z.boolean(),
  ai: z
    .object({
      ask: z.boolean(),
      explain: z.boolean(),
      async_jobs: z.boolean(),
      llm: z.enum(['configured', 'not_configured']),
      model: z.string().nullable(),
      private_network_model: z.boolean(),
      max_events: z.int(),
      cache_store: z.enum(['sqlite', 'redis']),
    })
    .nullable()
    .meta({ description: 'The AI features as they run; null when AI_FEATURES_ENABLED is false.' }),
  alerts_enabled: z.boolean(),
  alerts: z
    .object({
      evaluating: z.boolean(),
      webhook: z.enum(['configured', 'not_configured']),
      teams: z.enum(['configured', 'not_configured']),
      slack: z.enum(['configured', 'not_configured']),
      time_zone: z.string(),
    })
    .nullable()
    .meta({
      description: 'Alert rules as they run; null when ALERTS_ENABLED is false (rules can still be edited).',
    }),
  siem_enabled: z.boolean(),
  siem: z
    .object({
      format: z.enum(['meshhub-json', 'splunk-hec']),
      endpoint: z.string().meta({ description: 'The receiver’s host (never its path, token or secret).' }),
      status: z.enum(['idle', 'delivering', 'retrying', 'held']),
      lag_events: z.int().min(0).nullable(),
    })
    .nullable()
    .meta({ description: 'SIEM forwarding as it runs; null when SIEM_ENABLED is false.' }),
  export_formats: z.array(z.enum(['csv', 'json'])),
  bulk_tag_limit: z.int(),
  collection: z.enum(['on', 'not_configured']),
  sources: z.array(z.enum(SOURCE_NAMES as [SourceName, ...SourceName[]])),
  directory_webhook: z.boolean(),
  auth: authState,
});

export const authConfigSchema = z.object({
  enabled: z.boolean(),
  status: authState.meta({ description: 'The frontend’s “Auth: OFF” / “Auth: misconfigured” button.' }),
  missing: z.array(z.string()).optional().meta({ description: 'When misconfigured: the missing settings.' }),
  issuer: z.string().nullable(),
  audience: z.string().nullable(),
  client_id: z.string().nullable(),
  roles_claim: z.string(),
});
