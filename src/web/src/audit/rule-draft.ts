/**
 * An alert rule as the rule form edits it, and the body it sends (plugins/audit/alerts/
 * condition.ts is the contract: strict objects, literal case-insensitive text matches, a weekly
 * time window, a threshold of at most 100,000 events in at most 7 days). The form offers only
 * valid choices; what a person can still type (a name, a count, a window) is checked here with
 * the hub's own limits, so Save stays disabled, with the reason beside the field, until the
 * body is one the hub accepts. The hub's 400 field errors are still shown beside their fields.
 */
import type {
  DAYS as HUB_DAYS,
  RESULTS as HUB_RESULTS,
  SEVERITIES as HUB_SEVERITIES,
} from '../../../../plugins/audit/alerts/schemas.js';
import { currentLocale, t } from '../i18n/index.js';
import { andWords, formatCount, orWords } from '../lib/format.js';
import type { AlertRule } from './audit-types.js';

export const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];
export const RESULTS = ['success', 'failure', 'unknown'] as const;
export type Result = (typeof RESULTS)[number];
export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Day = (typeof DAYS)[number];
/** `Mon`, `Di.`, `mié`, `pt.`: the weekday's short name in the language in use (Intl). */
export function dayName(day: Day): string {
  // 2024-01-01 was a Monday.
  const date = new Date(Date.UTC(2024, 0, 1 + DAYS.indexOf(day), 12));
  return new Intl.DateTimeFormat(currentLocale(), { weekday: 'short', timeZone: 'UTC' }).format(date);
}
// The lists are the hub's (type-only import: schemas.ts brings zod, which stays out of the
// browser); a list that drifts from the hub's fails to compile here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameLists: Same<Severity, (typeof HUB_SEVERITIES)[number]> &
  Same<Result, (typeof HUB_RESULTS)[number]> &
  Same<Day, (typeof HUB_DAYS)[number]> = true;
void _sameLists;

export const WINDOW_UNITS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export type WindowUnit = keyof typeof WINDOW_UNITS;

/** The hub's limits (condition.ts). */
export const LIMITS = {
  name: 120,
  description: 2_000,
  text: 256,
  values: 50,
  count: 100_000,
  windowMs: 7 * 86_400_000,
} as const;

export interface TextMatchDraft {
  mode: 'contains' | 'equals';
  values: string[];
}

export interface RuleDraft {
  name: string;
  description: string;
  severity: Severity;
  enabled: boolean;
  services: string[];
  operation: TextMatchDraft;
  actor: TextMatchDraft;
  results: Result[];
  timeOn: boolean;
  days: Day[];
  /** `HH:MM` from an `<input type="time">`, or '' (no bound). */
  from: string;
  to: string;
  when: 'inside' | 'outside';
  /** '' is the hub's ALERT_TIME_ZONE. */
  timeZone: string;
  thresholdOn: boolean;
  /** As typed in a number field (it can hold anything while typing). */
  count: string;
  windowValue: string;
  windowUnit: WindowUnit;
  per: 'actor' | 'overall';
  /** Parts of a rule's condition the form does not edit (tags): kept as they were. */
  kept: Record<string, unknown>;
}

export const emptyDraft = (): RuleDraft => ({
  name: '',
  description: '',
  severity: 'medium',
  enabled: true,
  services: [],
  operation: { mode: 'contains', values: [] },
  actor: { mode: 'contains', values: [] },
  results: [],
  timeOn: false,
  days: ['mon', 'tue', 'wed', 'thu', 'fri'],
  from: '08:00',
  to: '18:00',
  when: 'outside',
  timeZone: '',
  thresholdOn: false,
  count: '5',
  windowValue: '10',
  windowUnit: 'm',
  per: 'actor',
  kept: {},
});

/** Problems keyed by the hub's field names (`name`, `condition.time.to`…); empty: ready to save. */
export function draftProblems(d: RuleDraft): Record<string, string> {
  const problems: Record<string, string> = {};
  const name = d.name.trim();
  if (!name) problems.name = t('audit.draft.name');
  else if (name.length > LIMITS.name) problems.name = t('audit.draft.atMost', { max: LIMITS.name });
  if (d.description.trim().length > LIMITS.description)
    problems.description = t('audit.draft.atMost', { max: LIMITS.description });
  if (d.timeOn) {
    if (!d.days.length && !d.from && !d.to) problems['condition.time'] = t('audit.draft.time');
    if (d.from && d.to && d.from === d.to) problems['condition.time.to'] = t('audit.draft.differ');
  }
  if (d.thresholdOn) {
    const count = Number(d.count);
    if (!/^\d+$/.test(d.count.trim()) || count < 1 || count > LIMITS.count)
      problems['condition.threshold.count'] = t('audit.draft.count', { max: formatCount(LIMITS.count) });
    const value = Number(d.windowValue);
    const ms = value * WINDOW_UNITS[d.windowUnit];
    if (!/^\d+$/.test(d.windowValue.trim()) || ms < 1_000 || ms > LIMITS.windowMs)
      problems['condition.threshold.window'] = t('audit.draft.window');
  }
  return problems;
}

/** The body of `POST /api/rules` / `PUT /api/rules/{id}`; only for a draft without problems. */
export function ruleBody(d: RuleDraft): Record<string, unknown> {
  const condition: Record<string, unknown> = { ...d.kept };
  if (d.services.length) condition.services = d.services;
  if (d.operation.values.length) condition.operation = { [d.operation.mode]: d.operation.values };
  if (d.results.length) condition.result = d.results;
  if (d.actor.values.length) condition.actor = { [d.actor.mode]: d.actor.values };
  if (d.timeOn) {
    condition.time = {
      // Mon…Sun in order, whatever order they were ticked in.
      ...(d.days.length ? { days: DAYS.filter((day) => d.days.includes(day)) } : {}),
      ...(d.from ? { from: d.from } : {}),
      ...(d.to ? { to: d.to } : {}),
      when: d.when,
      ...(d.timeZone ? { time_zone: d.timeZone } : {}),
    };
  }
  if (d.thresholdOn) {
    condition.threshold = {
      count: Number(d.count),
      window: `${Number(d.windowValue)}${d.windowUnit}`,
      per: d.per,
    };
  }
  return {
    name: d.name.trim(),
    description: d.description.trim(),
    severity: d.severity,
    enabled: d.enabled,
    condition,
  };
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : typeof v === 'string' ? [v] : [];

function textMatch(v: unknown): TextMatchDraft {
  const m = (v ?? {}) as { equals?: unknown; contains?: unknown };
  // The form edits one of the two; a rule with both (from the API) keeps `contains` in the form.
  if (m.contains !== undefined) return { mode: 'contains', values: strings(m.contains) };
  return { mode: 'equals', values: strings(m.equals) };
}

/** A stored rule back into the form (its condition as the API writes it back). */
export function draftOf(rule: AlertRule): RuleDraft {
  const c = rule.condition as Record<string, unknown>;
  const { services, operation, result, actor, time, threshold, ...kept } = c;
  const d = emptyDraft();
  const t = time as {
    days?: Day[];
    from?: string;
    to?: string;
    when?: 'inside' | 'outside';
    time_zone?: string;
  };
  const th = threshold as { count?: number; window?: string; per?: 'actor' | 'overall' } | undefined;
  const win = /^(\d+)([smhd])$/.exec(th?.window ?? '');
  return {
    ...d,
    name: rule.name,
    description: rule.description,
    severity: rule.severity,
    enabled: rule.enabled,
    services: strings(services),
    operation: operation ? textMatch(operation) : d.operation,
    actor: actor ? textMatch(actor) : d.actor,
    results: strings(result).filter((r): r is Result => (RESULTS as readonly string[]).includes(r)),
    timeOn: !!time,
    ...(time
      ? {
          days: t.days ?? [],
          from: t.from ?? '',
          to: t.to ?? '',
          when: t.when ?? 'inside',
          timeZone: t.time_zone ?? '',
        }
      : {}),
    thresholdOn: !!th,
    ...(th
      ? {
          count: String(th.count ?? 1),
          windowValue: win?.[1] ?? '1',
          windowUnit: (win?.[2] as WindowUnit | undefined) ?? 'h',
          per: th.per ?? 'actor',
        }
      : {}),
    kept,
  };
}

const quoted = (values: string[]) => orWords(values.map((value) => t('audit.cond.quoted', { value })));

/** A rule's condition in words, for the list, in the language in use. */
export function conditionWords(condition: Record<string, unknown>, label: (s: string) => string): string {
  const parts: string[] = [];
  const services = strings(condition.services);
  if (services.length) parts.push(orWords(services.map(label)));
  for (const key of ['operation', 'actor'] as const) {
    const m = condition[key] as { equals?: unknown; contains?: unknown } | undefined;
    if (!m) continue;
    const words: string[] = [];
    if (m.equals !== undefined) words.push(t('audit.cond.is', { values: quoted(strings(m.equals)) }));
    if (m.contains !== undefined)
      words.push(t('audit.cond.contains', { values: quoted(strings(m.contains)) }));
    parts.push(t(`audit.cond.${key}`, { match: andWords(words) }));
  }
  const results = strings(condition.result);
  if (results.length) parts.push(t('audit.cond.result', { results: orWords(results) }));
  const tags = condition.tags as { all_of?: string[]; none_of?: string[] } | undefined;
  if (tags?.all_of) parts.push(t('audit.phrase.tagged', { tags: andWords(tags.all_of) }));
  if (tags?.none_of) parts.push(t('audit.phrase.notTagged', { tags: orWords(tags.none_of) }));
  if (!parts.length) parts.push(t('audit.anyEvent'));
  const time = condition.time as
    | { days?: Day[]; from?: string; to?: string; when?: string; time_zone?: string }
    | undefined;
  if (time) {
    const days = time.days?.length ? time.days.map((d) => dayName(d)).join(', ') : t('audit.anyDay');
    const hours = time.from || time.to ? ` ${time.from ?? '00:00'}–${time.to ?? '24:00'}` : '';
    const span = `${days}${hours}${time.time_zone ? ` (${time.time_zone})` : ''}`;
    parts.push(t(time.when === 'outside' ? 'audit.cond.outside' : 'audit.cond.inside', { span }));
  }
  const th = condition.threshold as { count?: number; window?: string; per?: string } | undefined;
  parts.push(
    th
      ? t(th.per === 'overall' ? 'audit.cond.overall' : 'audit.cond.perActor', {
          count: th.count ?? 0,
          window: th.window ?? '',
        })
      : t('audit.cond.every'),
  );
  return parts.join('; ');
}
