/**
 * The alert API's shared shapes: the lists a rule chooses from and rules and alerts as the API
 * shows them (and as MQTT and the webhook carry an alert): ids as strings, times ISO 8601 UTC,
 * the condition as written back by conditionJson (condition.ts). Shared by the server and the
 * web app (src/web imports server code only from schemas.ts: docs/architecture.md "Layers"), so
 * this file imports nothing but zod.
 */
import { z } from 'zod';

export const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];
export const RESULTS = ['success', 'failure', 'unknown'] as const;
export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Day = (typeof DAYS)[number];

const utc = z.iso.datetime();

export const ruleSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  severity: z.enum(SEVERITIES),
  enabled: z.boolean(),
  condition: z
    .record(z.string(), z.unknown())
    .meta({ description: 'As given, normalised (services folded).' }),
  created_at: utc,
  updated_at: utc,
  created_by: z.string().nullable(),
  updated_by: z.string().nullable(),
  sigma: z.object({ file: z.string(), id: z.string().nullable() }).optional().meta({
    description:
      'Present when the rule comes from a Sigma file (SIGMA_RULES_DIR): read-only here; change the file and restart.',
  }),
});

export const ruleListSchema = z.object({ data: z.array(ruleSchema) });

/** `GET /api/rules/sigma`: the Sigma rules read at start-up from SIGMA_RULES_DIR, and those refused. */
export const sigmaReportSchema = z.object({
  configured: z.boolean().meta({ description: 'SIGMA_RULES_DIR is set.' }),
  loaded: z.array(
    z.object({ rule_id: z.string(), file: z.string(), title: z.string(), id: z.string().nullable() }),
  ),
  refused: z
    .array(
      z.object({
        file: z.string(),
        title: z.string().nullable(),
        id: z.string().nullable(),
        reason: z.string(),
      }),
    )
    .meta({ description: 'Rules not loaded, each with the reason; nothing of them runs.' }),
});
export type ApiSigmaReport = z.infer<typeof sigmaReportSchema>;

export const alertSchema = z.object({
  id: z.string(),
  rule: z.object({
    id: z.string(),
    name: z.string().meta({ description: 'The rule’s name when it fired.' }),
  }),
  severity: z.enum(SEVERITIES),
  fired_at: utc,
  key: z.string().meta({ description: 'The actor, or `*` for a rule counted overall.' }),
  match_count: z.int().meta({ description: 'Matching events within the window when it fired.' }),
  window: z.string().meta({ description: 'The rule’s window, e.g. `1h`.' }),
  event: z
    .object({
      id: z.string(),
      timestamp: utc,
      service: z.string(),
      operation: z.string(),
      result: z.string(),
      actor: z.string(),
      target: z.string(),
      tenant: z.string().meta({ description: 'The tenant the event was collected from (issue 29).' }),
    })
    .meta({ description: 'The event that made the rule fire.' }),
  delivery: z.enum(['none', 'pending', 'delivered', 'failed']).meta({
    description:
      'Delivery to every configured destination (webhook, Teams, Slack): `pending` until each has an outcome, `failed` if one failed; `none` without any.',
  }),
});

export const alertPageSchema = z.object({
  data: z.array(alertSchema).meta({ description: 'Newest first.' }),
  next_cursor: z.string().nullable().meta({ description: 'Older alerts; null at the end.' }),
  prev_cursor: z.string().nullable().meta({ description: 'Newer alerts; null on the first page.' }),
  limit: z.int(),
});

export type ApiRule = z.infer<typeof ruleSchema>;
export type ApiAlert = z.infer<typeof alertSchema>;
