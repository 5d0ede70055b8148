/**
 * The console's search as it lives in the URL (bookmarkable, shareable, Back works): the spec's
 * filters (services, tenants, actor, operation, result, start, end, include_tags, exclude_tags), a time
 * range that is either a quick choice relative to now (`range=24h`) or custom (`start`/`end`),
 * the page size, the cursor, and the event open in the drawer. Issue 29: the pivots' exact
 * filters (`client_ip=…`, `target=…`), as the event drawer's pivot links set them.
 */
import { t } from '../i18n/index.js';
import { andWords, orWords } from '../lib/format.js';

export const QUICK_RANGES = [
  { id: '1h', ms: 3_600_000 },
  { id: '24h', ms: 86_400_000 },
  { id: '7d', ms: 7 * 86_400_000 },
  { id: 'all', ms: 0 },
] as const;

/** `Last hour`, `Last 24 h`…, in the language in use. */
export const quickRangeLabel = (id: QuickRange) => t(`audit.range.${id}`);
export type QuickRange = (typeof QUICK_RANGES)[number]['id'];
export type RangeChoice = QuickRange | 'custom';

/** The spec's filters, by their API names (the query parameters a search sets besides paging). */
export const SEARCH_FILTER_FIELDS = [
  'services',
  'tenants',
  'actor',
  'operation',
  'result',
  'start',
  'end',
  'include_tags',
  'exclude_tags',
] as const;

/** Issue 29: the search's exact-match filters, by their API names. */
export const PIVOT_FILTERS = ['actor_exact', 'target', 'client_ip', 'correlation_id', 'session_id'] as const;
export type PivotFilter = (typeof PIVOT_FILTERS)[number];

export const PAGE_SIZES = [25, 50, 100, 200, 500] as const;
export const DEFAULT_PAGE_SIZE = 50;
export const DEFAULT_RANGE: QuickRange = '7d';

export interface AuditSearch {
  services: string[];
  /** Issue 29: tenants by short name (the filter shows only with more than one tenant). */
  tenants: string[];
  actor: string;
  operation: string;
  result: string;
  range: RangeChoice;
  /** Custom range only: ISO 8601 instants (UTC). */
  start?: string;
  end?: string;
  includeTags: string[];
  excludeTags: string[];
  /** Exact values to pivot on (issue 29); absent keys are no filter. */
  pivots?: Partial<Record<PivotFilter, string>>;
  limit: number;
  cursor?: string;
  /** The event shown in the drawer. */
  event?: string;
  /** A saved search's id (`?saved=3`): its filters are the search's (saved-searches.ts). */
  saved?: string;
}

const list = (value: string | null): string[] =>
  value
    ? [
        ...new Set(
          value
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
        ),
      ]
    : [];

const isQuick = (value: string | null): value is QuickRange => QUICK_RANGES.some((r) => r.id === value);

export function parseSearch(search: string): AuditSearch {
  const p = new URLSearchParams(search);
  const start = p.get('start') ?? undefined;
  const end = p.get('end') ?? undefined;
  const rangeParam = p.get('range');
  const range: RangeChoice = start || end ? 'custom' : isQuick(rangeParam) ? rangeParam : DEFAULT_RANGE;
  const limit = Number(p.get('limit'));
  const pivots: Partial<Record<PivotFilter, string>> = {};
  for (const key of PIVOT_FILTERS) {
    const value = p.get(key);
    if (value) pivots[key] = value;
  }
  return {
    services: list(p.get('services')),
    tenants: list(p.get('tenants')),
    actor: p.get('actor') ?? '',
    operation: p.get('operation') ?? '',
    result: p.get('result') ?? '',
    range,
    ...(range === 'custom' && start ? { start } : {}),
    ...(range === 'custom' && end ? { end } : {}),
    includeTags: list(p.get('include_tags')),
    excludeTags: list(p.get('exclude_tags')),
    ...(Object.keys(pivots).length ? { pivots } : {}),
    limit: (PAGE_SIZES as readonly number[]).includes(limit) ? limit : DEFAULT_PAGE_SIZE,
    ...(p.get('cursor') ? { cursor: p.get('cursor')! } : {}),
    ...(p.get('event') ? { event: p.get('event')! } : {}),
    ...(p.get('saved') ? { saved: p.get('saved')! } : {}),
  };
}

/** The page's own query string: only what differs from the defaults, in a stable order. */
export function searchQuery(s: AuditSearch): string {
  const p = new URLSearchParams();
  if (s.services.length) p.set('services', s.services.join(','));
  if (s.tenants.length) p.set('tenants', s.tenants.join(','));
  if (s.actor) p.set('actor', s.actor);
  if (s.operation) p.set('operation', s.operation);
  if (s.result) p.set('result', s.result);
  if (s.range === 'custom') {
    if (s.start) p.set('start', s.start);
    if (s.end) p.set('end', s.end);
  } else if (s.range !== DEFAULT_RANGE) p.set('range', s.range);
  if (s.includeTags.length) p.set('include_tags', s.includeTags.join(','));
  if (s.excludeTags.length) p.set('exclude_tags', s.excludeTags.join(','));
  for (const key of PIVOT_FILTERS) if (s.pivots?.[key]) p.set(key, s.pivots[key]);
  const limit = s.limit !== DEFAULT_PAGE_SIZE ? String(s.limit) : undefined;
  return queryText(p, [
    ['limit', limit],
    ['cursor', s.cursor],
    ['event', s.event],
    ['saved', s.saved],
  ]);
}

/**
 * A page's query string: `p` and then each of `entries` that has a value, in their order; `?`
 * before it, or '' when there are none.
 */
export function queryText(
  p: URLSearchParams,
  entries: readonly (readonly [string, string | undefined])[],
): string {
  for (const [key, value] of entries) if (value) p.set(key, value);
  const text = p.toString();
  return text ? `?${text}` : '';
}

/** The filters as the API takes them (`/api/events`, export, bulk tags, ask): a relative range becomes `start`. */
export interface ApiFilters {
  services?: string[];
  tenants?: string[];
  actor?: string;
  operation?: string;
  result?: string;
  start?: string;
  end?: string;
  include_tags?: string[];
  exclude_tags?: string[];
  actor_exact?: string;
  target?: string;
  client_ip?: string;
  correlation_id?: string;
  session_id?: string;
}

export function apiFilters(s: AuditSearch, nowMs: number): ApiFilters {
  const quick = QUICK_RANGES.find((r) => r.id === s.range);
  const start =
    s.range === 'custom' ? s.start : quick?.ms ? new Date(nowMs - quick.ms).toISOString() : undefined;
  const end = s.range === 'custom' ? s.end : undefined;
  return {
    ...(s.services.length ? { services: s.services } : {}),
    ...(s.tenants.length ? { tenants: s.tenants } : {}),
    ...(s.actor.trim() ? { actor: s.actor.trim() } : {}),
    ...(s.operation.trim() ? { operation: s.operation.trim() } : {}),
    ...(s.result.trim() ? { result: s.result.trim() } : {}),
    ...(start ? { start } : {}),
    ...(end ? { end } : {}),
    ...(s.includeTags.length ? { include_tags: s.includeTags } : {}),
    ...(s.excludeTags.length ? { exclude_tags: s.excludeTags } : {}),
    ...s.pivots,
  };
}

/** Query parameters for the API (lists comma-separated, as it accepts them). */
export function filterParams(f: ApiFilters): URLSearchParams {
  const p = new URLSearchParams();
  for (const [key, value] of Object.entries(f)) {
    if (value === undefined) continue;
    p.set(key, Array.isArray(value) ? value.join(',') : String(value));
  }
  return p;
}

export const hasFilters = (f: ApiFilters): boolean => Object.keys(f).length > 0;

/** What a filter says, in words: "exchange · result failure · last 24 h". */
export function describeSearch(s: AuditSearch): string {
  const parts: string[] = [];
  if (s.services.length) parts.push(s.services.join(', '));
  if (s.tenants.length) parts.push(t('audit.phrase.tenant', { value: s.tenants.join(', ') }));
  if (s.actor) parts.push(t('audit.phrase.actor', { value: s.actor }));
  if (s.operation) parts.push(t('audit.phrase.operation', { value: s.operation }));
  if (s.result) parts.push(t('audit.phrase.result', { value: s.result }));
  if (s.includeTags.length) parts.push(t('audit.phrase.tagged', { tags: andWords(s.includeTags) }));
  if (s.excludeTags.length) parts.push(t('audit.phrase.notTagged', { tags: orWords(s.excludeTags) }));
  for (const key of PIVOT_FILTERS) {
    const value = s.pivots?.[key];
    if (value) parts.push(t(`audit.timeline.phrase.${key}`, { value }));
  }
  const quick = QUICK_RANGES.find((r) => r.id === s.range);
  if (quick) parts.push(quickRangeLabel(quick.id).toLowerCase());
  else
    parts.push(t('audit.rangeTo', { start: s.start ?? t('audit.beginning'), end: s.end ?? t('audit.now') }));
  return parts.join(' · ');
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9@._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);

/** ISO instant as a file-name-safe stamp: 2026-05-01T10-00Z. */
const stamp = (iso: string) => iso.replace(/:\d\d(\.\d+)?Z$/, 'Z').replace(/:/g, '-');

/**
 * An export's file name: the filters and the time window it covers, e.g.
 * `audit-events_exchange_result-failure_2026-05-01T10-00Z_to_2026-05-02T10-00Z.csv`.
 */
export function exportFileName(f: ApiFilters, nowMs: number, format: 'csv' | 'json'): string {
  const parts = ['audit-events'];
  if (f.services?.length) parts.push(slug(f.services.join('+')));
  for (const key of ['actor', 'operation', 'result'] as const) {
    const value = f[key];
    if (value) parts.push(`${key}-${slug(value)}`);
  }
  if (f.include_tags?.length) parts.push(`tags-${slug(f.include_tags.join('+'))}`);
  if (f.exclude_tags?.length) parts.push(`not-${slug(f.exclude_tags.join('+'))}`);
  parts.push(`${f.start ? stamp(f.start) : 'all'}_to_${stamp(f.end ?? new Date(nowMs).toISOString())}`);
  return `${parts.join('_')}.${format}`;
}

/** datetime-local value (browser time zone) ⇄ ISO instant. */
export function toLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
