/**
 * Saved searches in the console (issue 29): the API's records, and the two ways between a saved
 * search's filters (the search API's parameters, a relative range as `last`) and the console's
 * search (audit-filters.ts). A quick range (last hour, 24 h, 7 days) is saved as `last`, so the
 * saved search keeps meaning "the last 24 hours" whenever it is opened; a custom range is saved
 * as it stands.
 */
import {
  type AuditSearch,
  apiFilters,
  PIVOT_FILTERS,
  type PivotFilter,
  QUICK_RANGES,
} from './audit-filters.js';

export interface SavedSearch {
  id: string;
  name: string;
  owner: string;
  mine: boolean;
  can_change: boolean;
  shared_with: string | null;
  filters: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface SavedSearchList {
  data: SavedSearch[];
  share_roles: string[];
}

/** The filters of `s` as a saved search keeps them. */
export function savedFiltersOf(s: AuditSearch): Record<string, unknown> {
  const quick = QUICK_RANGES.find((r) => r.id === s.range);
  const filters: Record<string, unknown> = { ...apiFilters(quick ? { ...s, range: 'all' } : s, Date.now()) };
  if (quick?.ms) filters.last = quick.id;
  return filters;
}

const list = (v: unknown): string[] =>
  Array.isArray(v)
    ? v.map(String)
    : typeof v === 'string'
      ? v
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : [];
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The console's search for a saved search's filters (a relative range of another length as a custom one from now). */
export function searchOfSaved(
  filters: Record<string, unknown>,
  nowMs: number,
): Omit<AuditSearch, 'limit' | 'cursor' | 'event' | 'saved'> {
  const pivots: Partial<Record<PivotFilter, string>> = {};
  for (const key of PIVOT_FILTERS) if (text(filters[key])) pivots[key] = text(filters[key]);
  const base = {
    services: list(filters.services),
    tenants: list(filters.tenants),
    actor: text(filters.actor),
    operation: text(filters.operation),
    result: text(filters.result),
    includeTags: list(filters.include_tags),
    excludeTags: list(filters.exclude_tags),
    ...(Object.keys(pivots).length ? { pivots } : {}),
  };
  const last = text(filters.last);
  if (last) {
    const quick = QUICK_RANGES.find((r) => r.id === last);
    if (quick) return { ...base, range: quick.id };
    const m = /^(\d+)([smhd])$/.exec(last);
    const ms = m ? Number(m[1]) * UNIT_MS[m[2]!]! : 0;
    return { ...base, range: 'custom', start: new Date(nowMs - ms).toISOString() };
  }
  const start = text(filters.start);
  const end = text(filters.end);
  if (start || end) return { ...base, range: 'custom', ...(start ? { start } : {}), ...(end ? { end } : {}) };
  return { ...base, range: 'all' };
}
