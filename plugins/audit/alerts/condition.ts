/**
 * The alert rule body and its condition (spec "Other records": "a condition validated by a strict
 * AlertCondition model (unknown fields rejected)"; issue 14 "Alert rules"). Every object is
 * strict: an unknown field is a 400 that names it (`condition.actor.regex`), so a misspelt field
 * never silently widens a rule.
 *
 * Text matches are literal, case-insensitive: `equals` (one of the values) and `contains` (one of
 * the substrings). There is no pattern syntax at all, so nothing a rule author writes can
 * backtrack: `(a+)+$` in `contains` is those six characters.
 */
import { z } from 'zod';
import { isTimeZone, parseDuration } from '../../../src/config/fields.js';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import { tagSchema } from '../http/filters.js';
import { serviceKey } from '../store/service-names.js';
import { TENANT_NAME } from '../tenants/access.js';
import { DAYS, RESULTS, SEVERITIES } from './schemas.js';

/** A threshold window is at most this long (matches are kept that long). */
export const MAX_WINDOW_MS = 7 * 86_400_000;
export const MAX_THRESHOLD_COUNT = 100_000;
export const MAX_RULES = 500;
const MAX_TEXT = 256;
const MAX_VALUES = 50;

const needle = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_TEXT, `must be at most ${MAX_TEXT} characters`);
/** One value or a list (any of); a single value is taken as a list of one, so errors name `field.0`. */
const oneOrMany = <T extends z.ZodType>(item: T) =>
  z.preprocess(
    (v) => (Array.isArray(v) ? v : [v]),
    z.array(item).min(1, 'give at least one value').max(MAX_VALUES, `at most ${MAX_VALUES} values`),
  );

/** `{"equals": …}` and/or `{"contains": …}`: literal, case-insensitive; each a string or a list (any of). */
const textMatch = z
  .strictObject({ equals: oneOrMany(needle).optional(), contains: oneOrMany(needle).optional() })
  .refine((v) => v.equals !== undefined || v.contains !== undefined, 'give equals or contains');

const clock = z
  .string({ error: 'must be a time like 08:00' })
  .regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/, 'must be a time like 08:00 (00:00–24:00)')
  .transform((v) => Number(v.slice(0, 2)) * 60 + Number(v.slice(3)));

export { isTimeZone };

const timeZone = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .refine(isTimeZone, 'must be an IANA time zone such as UTC or Europe/Berlin');

/**
 * A weekly window (days, from–to in local time) and whether events must fall `inside` or
 * `outside` it. After hours is `{"days": ["mon",…,"fri"], "from": "08:00", "to": "18:00",
 * "when": "outside"}`. `to` before `from` spans midnight.
 */
const timeMatch = z
  .strictObject({
    days: z
      .array(z.enum(DAYS, { error: `must be one of ${DAYS.join(', ')}` }))
      .min(1, 'give at least one day')
      .max(7)
      .optional(),
    from: clock.optional(),
    to: clock.optional(),
    when: z.enum(['inside', 'outside'], { error: 'must be inside or outside' }).default('inside'),
    time_zone: timeZone.optional().meta({ description: 'Default: ALERT_TIME_ZONE (UTC).' }),
  })
  .refine((v) => v.days !== undefined || v.from !== undefined || v.to !== undefined, 'give days, from or to')
  .refine((v) => v.from === undefined || v.to === undefined || v.from !== v.to, {
    message: 'must differ from from',
    path: ['to'],
  });

const windowSchema = z.string({ error: 'must be a duration like 15m, 1h or 2d' }).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration like 15m, 1h or 2d' });
    return z.NEVER;
  }
  if (ms < 1_000 || ms > MAX_WINDOW_MS) {
    ctx.addIssue({ code: 'custom', message: 'must be between 1s and 7d' });
    return z.NEVER;
  }
  return ms;
});

const thresholdSchema = z.strictObject({
  count: z
    .int({ error: 'must be a whole number' })
    .min(1, 'must be at least 1')
    .max(MAX_THRESHOLD_COUNT, `must be at most ${MAX_THRESHOLD_COUNT}`),
  window: windowSchema,
  per: z.enum(['actor', 'overall'], { error: 'must be actor or overall' }).default('actor'),
});

export const conditionSchema = z
  .strictObject({
    services: oneOrMany(needle)
      .transform((v) => [...new Set(v.map(serviceKey))])
      .optional()
      .meta({ description: 'Any of these services, as typed (`Exchange`, `Entra ID`).' }),
    // Issue 29: any of these tenants (short names, AUDIT_TENANTS).
    tenants: oneOrMany(
      z
        .string({ error: 'must be a tenant name' })
        .trim()
        .toLowerCase()
        .regex(TENANT_NAME, 'must be a tenant short name: lower-case letters, digits and "-"'),
    )
      .transform((v) => [...new Set(v)])
      .optional()
      .meta({ description: 'Any of these tenants (`default` on a single-tenant hub).' }),
    operation: textMatch.optional(),
    result: oneOrMany(z.enum(RESULTS, { error: `must be one of ${RESULTS.join(', ')}` })).optional(),
    actor: textMatch.optional(),
    tags: z
      .strictObject({
        all_of: z.array(tagSchema).min(1).max(MAX_VALUES).optional(),
        none_of: z.array(tagSchema).min(1).max(MAX_VALUES).optional(),
      })
      .optional()
      .meta({ description: 'The tags the event carries when it is stored.' }),
    time: timeMatch.optional(),
    threshold: thresholdSchema
      .optional()
      .meta({ description: 'Default: every matching event, at most one alert per hour per actor.' }),
    saved_search: z
      .int({ error: 'must be a saved search id (a whole number)' })
      .positive('must be a saved search id (a whole number)')
      .optional()
      .meta({
        description:
          'A saved search (`/api/saved-searches`) the rule’s author may see: the event must match its filters (its time range is ignored: a rule looks at each new event). Editing the saved search changes what the rule matches.',
      }),
  })
  .meta({ description: 'Every given part must match (and). An empty condition matches every event.' });

export const ruleBodySchema = z.strictObject({
  name: z
    .string({ error: 'is required' })
    .trim()
    .min(1, 'must not be empty')
    .max(120, 'must be at most 120 characters')
    .refine((v) => !CONTROL_CHAR.test(v), 'must not contain control characters'),
  description: z.string().trim().max(2_000, 'must be at most 2000 characters').default(''),
  severity: z.enum(SEVERITIES, { error: `must be one of ${SEVERITIES.join(', ')}` }).default('medium'),
  enabled: z.boolean({ error: 'must be true or false' }).default(true),
  condition: conditionSchema,
});

export type Condition = z.output<typeof conditionSchema>;
export type RuleBody = z.output<typeof ruleBodySchema>;

/** Where the default threshold comes from: every matching event, once per hour per actor. */
export const DEFAULT_THRESHOLD = { count: 1, window: 3_600_000, per: 'actor' as const };

const DURATION_UNITS: Array<[number, string]> = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'm'],
  [1_000, 's'],
];
const hhmm = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

export function formatDuration(ms: number): string {
  for (const [unit, suffix] of DURATION_UNITS) if (ms % unit === 0) return `${ms / unit}${suffix}`;
  return `${Math.round(ms / 1000)}s`;
}

/** The condition as the API shows it (and as it is stored): parsing it again gives the same condition. */
export function conditionJson(c: Condition): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (c.services) out.services = c.services;
  if (c.tenants) out.tenants = c.tenants;
  if (c.operation) out.operation = c.operation;
  if (c.result) out.result = c.result;
  if (c.actor) out.actor = c.actor;
  if (c.tags) out.tags = c.tags;
  if (c.saved_search !== undefined) out.saved_search = c.saved_search;
  if (c.time) {
    out.time = {
      ...(c.time.days ? { days: c.time.days } : {}),
      ...(c.time.from !== undefined ? { from: hhmm(c.time.from) } : {}),
      ...(c.time.to !== undefined ? { to: hhmm(c.time.to) } : {}),
      when: c.time.when,
      ...(c.time.time_zone ? { time_zone: c.time.time_zone } : {}),
    };
  }
  if (c.threshold) {
    out.threshold = {
      count: c.threshold.count,
      window: formatDuration(c.threshold.window),
      per: c.threshold.per,
    };
  }
  return out;
}
