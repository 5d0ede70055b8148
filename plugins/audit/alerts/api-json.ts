/**
 * Rules and alerts as the API shows them (and as MQTT and the webhook carry an alert): ids as
 * strings, times ISO 8601 UTC, the condition as written back by conditionJson.
 */
import { z } from 'zod';
import type { AlertRow, Rule } from './alert-store.js';
import { conditionJson, formatDuration, SEVERITIES } from './condition.js';

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
});

export const ruleListSchema = z.object({ data: z.array(ruleSchema) });

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
    })
    .meta({ description: 'The event that made the rule fire.' }),
  delivery: z
    .enum(['none', 'pending', 'delivered', 'failed'])
    .meta({ description: 'The webhook delivery (`none` without ALERT_WEBHOOK_URL).' }),
});

export const alertPageSchema = z.object({
  data: z.array(alertSchema).meta({ description: 'Newest first.' }),
  next_cursor: z.string().nullable().meta({ description: 'Older alerts; null at the end.' }),
  prev_cursor: z.string().nullable().meta({ description: 'Newer alerts; null on the first page.' }),
  limit: z.int(),
});

export type ApiRule = z.infer<typeof ruleSchema>;
export type ApiAlert = z.infer<typeof alertSchema>;

const iso = (ms: number) => new Date(ms).toISOString();

export function toApiRule(rule: Rule): ApiRule {
  return {
    id: String(rule.id),
    name: rule.name,
    description: rule.description,
    severity: rule.severity as ApiRule['severity'],
    enabled: rule.enabled,
    condition: conditionJson(rule.condition),
    created_at: iso(rule.createdAt),
    updated_at: iso(rule.updatedAt),
    created_by: rule.createdBy,
    updated_by: rule.updatedBy,
  };
}

export function toApiAlert(row: AlertRow): ApiAlert {
  return {
    id: String(row.id),
    rule: { id: String(row.rule_id), name: row.rule_name },
    severity: row.severity as ApiAlert['severity'],
    fired_at: iso(row.fired_at),
    key: row.alert_key,
    match_count: row.match_count,
    window: formatDuration(row.window_ms),
    event: JSON.parse(row.detail) as ApiAlert['event'],
    delivery: row.delivery as ApiAlert['delivery'],
  };
}
