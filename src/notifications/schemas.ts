/**
 * `/api/v1/notifications` in zod: rules, firings, Web Push. Every object is strict: an unknown
 * field is a 400 naming it, so a misspelt field never silently widens a rule. The web app reads
 * these types too (it may import schemas.ts files only).
 */
import { z } from 'zod';
import { METRIC_API_NAMES } from '../domain/reading.js';

export const RULE_KINDS = [
  'node_offline',
  'node_online',
  'battery_low',
  'battery_falling',
  'rebooted',
  'new_node',
  'reading_out_of_range',
  'link_lost',
] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export const WEBHOOK_FORMATS = ['json', 'ntfy', 'apprise'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

export const METRIC_NAMES = Object.values(METRIC_API_NAMES) as [string, ...string[]];

/** The fields each kind needs (and the only optional condition fields it takes). */
export const KIND_FIELDS: Record<RuleKind, { required: readonly string[]; optional: readonly string[] }> = {
  node_offline: { required: ['minutes'], optional: [] },
  node_online: { required: ['minutes'], optional: [] },
  battery_low: { required: ['threshold'], optional: [] },
  battery_falling: { required: ['threshold', 'minutes'], optional: [] },
  rebooted: { required: [], optional: [] },
  new_node: { required: [], optional: [] },
  reading_out_of_range: { required: ['metric'], optional: ['min', 'max'] },
  link_lost: { required: ['minutes'], optional: [] },
};
const CONDITION_FIELDS = ['minutes', 'threshold', 'metric', 'min', 'max'] as const;

const nodeIdSchema = z
  .string({ error: 'must be a node id like !a1b2c3d4' })
  .regex(/^![0-9a-f]{8}$/, 'must be a node id like !a1b2c3d4');

export const quietHoursSchema = z
  .string({ error: 'must be a time window like 22:00-07:00' })
  .regex(/^([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-3]):[0-5]\d$/, 'must be a time window like 22:00-07:00')
  .refine((v) => v.slice(0, 5) !== v.slice(6), 'from and to must differ');

export const ruleWebhookSchema = z.strictObject({
  url: z.string({ error: 'must be a URL' }).min(1).max(2_000),
  format: z.enum(WEBHOOK_FORMATS, { error: 'must be json, ntfy or apprise' }).default('json'),
  secret: z.string().min(16, 'must be at least 16 characters').max(256).optional().meta({
    description: 'Signs `json` bodies (X-Meshhub-Signature: sha256=<hex HMAC>); never shown again.',
  }),
});

const ruleFields = {
  name: z
    .string({ error: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(100, 'must be at most 100 characters'),
  kind: z.enum(RULE_KINDS, { error: `must be one of ${RULE_KINDS.join(', ')}` }),
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  nodes: z
    .array(nodeIdSchema)
    .max(1_000, 'at most 1000 nodes')
    .default([])
    .meta({ description: 'The nodes it watches; empty: every node.' }),
  minutes: z
    .int({ error: 'must be a whole number of minutes' })
    .min(1, 'must be at least 1')
    .max(10_080, 'must be at most 10080 (a week)')
    .optional()
    .meta({
      description:
        'node_offline, link_lost: silence before it fires; node_online: how long away counts; battery_falling: the window.',
    }),
  threshold: z
    .number({ error: 'must be a number' })
    .min(0, 'must be from 0 to 100')
    .max(100, 'must be from 0 to 100')
    .optional()
    .meta({ description: 'battery_low: fires below this %; battery_falling: a drop of this many points.' }),
  metric: z.enum(METRIC_NAMES, { error: `must be one of ${METRIC_NAMES.join(', ')}` }).optional(),
  min: z.number({ error: 'must be a number' }).optional(),
  max: z.number({ error: 'must be a number' }).optional(),
  repeat_minutes: z
    .int({ error: 'must be a whole number of minutes' })
    .min(0, 'must be from 0 to 10080')
    .max(10_080, 'must be from 0 to 10080')
    .default(60)
    .meta({ description: 'At most one firing per node per this many minutes (0: no limit).' }),
  quiet_hours: quietHoursSchema
    .nullable()
    .default(null)
    .meta({ description: 'No push or webhook in this window (NOTIFY_TIME_ZONE); still stored and on MQTT.' }),
  webhook: ruleWebhookSchema.nullable().default(null),
  push: z.boolean({ error: 'must be true or false' }).default(true),
};

function checkKind(v: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const kind = v.kind as RuleKind | undefined;
  if (!kind || !KIND_FIELDS[kind]) return;
  const { required, optional } = KIND_FIELDS[kind];
  for (const field of required)
    if (v[field] === undefined)
      ctx.addIssue({ code: 'custom', path: [field], message: `is required for kind ${kind}` });
  for (const field of CONDITION_FIELDS)
    if (v[field] !== undefined && !required.includes(field) && !optional.includes(field))
      ctx.addIssue({ code: 'custom', path: [field], message: `is not used by kind ${kind}` });
  if (kind === 'reading_out_of_range') {
    if (v.min === undefined && v.max === undefined)
      ctx.addIssue({ code: 'custom', path: ['min'], message: 'give min, max or both' });
    if (typeof v.min === 'number' && typeof v.max === 'number' && v.min >= v.max)
      ctx.addIssue({ code: 'custom', path: ['max'], message: 'must be greater than min' });
  }
}

/** A rule as created (POST) and as stored. */
export const ruleSpecSchema = z.strictObject(ruleFields).superRefine(checkKind);
export type RuleSpec = z.output<typeof ruleSpecSchema>;

/** PATCH: any of the fields; the result is checked as a whole. */
export const rulePatchSchema = z.strictObject({
  name: ruleFields.name.optional(),
  kind: ruleFields.kind.optional(),
  enabled: z.boolean({ error: 'must be true or false' }).optional(),
  nodes: z.array(nodeIdSchema).max(1_000, 'at most 1000 nodes').optional(),
  minutes: ruleFields.minutes.nullable(),
  threshold: ruleFields.threshold.nullable(),
  metric: ruleFields.metric.nullable(),
  min: ruleFields.min.nullable(),
  max: ruleFields.max.nullable(),
  repeat_minutes: ruleFields.repeat_minutes.unwrap().optional(),
  quiet_hours: quietHoursSchema.nullable().optional(),
  webhook: ruleWebhookSchema.nullable().optional(),
  push: z.boolean({ error: 'must be true or false' }).optional(),
});

export const ruleSchema = z.object({
  id: z.int(),
  name: z.string(),
  kind: z.enum(RULE_KINDS),
  enabled: z.boolean(),
  nodes: z.array(z.string()),
  minutes: z.int().optional(),
  threshold: z.number().optional(),
  metric: z.string().optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  repeat_minutes: z.int(),
  quiet_hours: z.string().nullable(),
  webhook: z.object({ url: z.string(), format: z.enum(WEBHOOK_FORMATS), signed: z.boolean() }).nullable(),
  push: z.boolean(),
  mqtt_topic: z
    .string()
    .meta({ description: 'Retained state per node: meshhub/alerts/<rule id>/<node_id>.' }),
});
export type RuleJson = z.output<typeof ruleSchema>;
export const ruleListSchema = z.object({ data: z.array(ruleSchema) });

export const firingSchema = z.object({
  id: z.int(),
  rule_id: z.int().nullable(),
  kind: z.string(),
  node_id: z.string(),
  subject: z.string().meta({ description: 'The node, or `from>to` for a link.' }),
  at: z.iso.datetime(),
  message: z.string(),
  quiet: z.boolean().meta({ description: 'Fired in quiet hours: stored and on MQTT, not pushed.' }),
});
export type FiringJson = z.output<typeof firingSchema>;
export const firingListSchema = z.object({ data: z.array(firingSchema) });

export const firingsQuerySchema = z.object({
  limit: z.string().optional().meta({ description: '1–200, default 50.' }),
  cursor: z.string().optional(),
});

export const ruleIdPathSchema = z.object({ id: z.string().regex(/^[1-9][0-9]{0,9}$/) });

/** The browser's PushSubscription.toJSON(). */
export const pushSubscriptionSchema = z.object({
  endpoint: z.string({ error: 'must be the push service URL' }).min(1).max(2_000),
  expirationTime: z.number().nullable().optional(),
  keys: z.object({
    p256dh: z.string().regex(/^[A-Za-z0-9_-]{80,100}={0,2}$/, 'must be the base64url P-256 public key'),
    auth: z.string().regex(/^[A-Za-z0-9_-]{16,32}={0,2}$/, 'must be the base64url auth secret'),
  }),
});
export const pushUnsubscribeSchema = z.strictObject({
  endpoint: z.string({ error: 'must be the push service URL' }).min(1).max(2_000),
});
export const pushKeySchema = z.object({
  public_key: z.string().meta({ description: 'VAPID public key, base64url.' }),
});

/** What a push message carries (the service worker shows it). */
export interface PushMessage {
  title: string;
  body: string;
  tag: string;
  url: string;
}

/** A firing on the live stream (`event: notification`). */
export const liveNotificationSchema = firingSchema;
