/**
 * The events an ask is about (spec "Ask behaviour" 5–6), read through the same query, filters
 * and privacy scope as `/api/events`, so a gated event can never enter — nor be counted:
 * - `total`: every match counted, exactly up to COUNT_CAP (50,000), by a capped `count(*)` on a
 *   covering index; beyond, `totalCapped` (the answer says "more than 50000");
 * - `counts` by service, operation, result and actor: over every match when at most
 *   COUNTS_MAX (10,000) match, else over the newest slice of at most that many (every match
 *   from `countsCover.since` on), gathered by SQL — `countsCover` says which, and the prompt,
 *   the fallback list and `query_info.counts_cover` say so;
 * - `fetched`: the newest FETCH_LIMIT (1000), in one page query, for sampling.
 * No matching row is read into JavaScript except the 1000 fetched.
 */

import type { AuditRepositories } from '../store/audit-store.js';
import type { NormalizedResult } from '../store/dictionaries.js';
import type { EventFilters, EventRow, PrivacyScope } from '../store/event-query.js';

export const FETCH_LIMIT = 1000;
/** Beyond this many matches the count stops; `total_capped` says so. */
export const COUNT_CAP = 50_000;
/** The counts by service, operation, result and actor cover at most this many of the newest matches. */
export const COUNTS_MAX = 10_000;

export interface AskEvent {
  id: string;
  seq: number;
  ts: number;
  service: string;
  operation: string;
  result: NormalizedResult;
  resultRaw: string;
  actor: string;
  target: string;
}

export interface Counts {
  service: Array<[string, number]>;
  operation: Array<[string, number]>;
  result: Array<[string, number]>;
  actor: Array<[string, number]>;
}

/** What the counts by service, operation, result and actor cover. */
export interface CountsCover {
  /** How many events they count. */
  events: number;
  /** True when that is every matched event; false: the newest `events`, from `since` on. */
  allMatched: boolean;
  /** The time of the oldest event counted (ms UTC); undefined when nothing matched. */
  since?: number;
}

export interface Summary {
  total: number;
  totalCapped: boolean;
  counts: Counts;
  countsCover: CountsCover;
}

export interface Gathered extends Summary {
  /** The newest matches, newest first (at most FETCH_LIMIT). */
  fetched: AskEvent[];
}

// Intl.Collator: the order of localeCompare(), without its cost per call (thousands of actors).
const byName = new Intl.Collator().compare;
const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1] || byName(a[0], b[0]));

const withTerms = (filters: EventFilters, terms: readonly string[]): EventFilters =>
  terms.length ? { ...filters, actorOrTarget: terms } : filters;

/** The count and the counts by service, operation, result and actor (asks, MCP `get_summary`). */
export function summarizeEvents(
  repos: AuditRepositories,
  filters: EventFilters,
  privacy: PrivacyScope | undefined,
  /** Each event's actor or target must contain one of these (lower case); empty: no condition. */
  terms: readonly string[],
): Summary {
  const d = repos.dictionaries;
  const f = withTerms(filters, terms);
  const { count, capped } = repos.query.count(f, privacy, COUNT_CAP);
  const tally = count ? repos.query.tally(f, privacy, COUNTS_MAX) : undefined;
  const named = (m: Map<number, number> | undefined, name: (id: number) => string) => {
    const out = new Map<string, number>();
    for (const [id, n] of m ?? []) out.set(name(id), (out.get(name(id)) ?? 0) + n);
    return sorted(out);
  };
  const counted = tally?.events ?? 0;
  return {
    total: count,
    totalCapped: capped,
    counts: {
      service: sorted(tally?.service ?? new Map()),
      operation: named(tally?.operation, (id) => d.operations.nameOf(id)),
      result: named(tally?.result, (id) => d.results.entry(id).normalized),
      actor: named(tally?.actor, (id) => d.actors.nameOf(id)),
    },
    countsCover: {
      events: counted,
      // The slice is every match from a position on: when it holds as many as were counted in
      // all (and the count did not stop at the cap), it is all of them.
      allMatched: !capped && counted >= count,
      ...(tally?.since ? { since: tally.since.ts } : {}),
    },
  };
}

export function gatherEvents(
  repos: AuditRepositories,
  filters: EventFilters,
  privacy: PrivacyScope | undefined,
  /** Each event's actor or target must contain one of these (lower case); empty: no condition. */
  terms: readonly string[],
): Gathered {
  const summary = summarizeEvents(repos, filters, privacy, terms);
  const rows = summary.total
    ? repos.query.newest(withTerms(filters, terms), privacy, FETCH_LIMIT)
    : ([] as EventRow[]);
  return { ...summary, fetched: rows.map((row) => toAskEvent(row, repos)) };
}

export function toAskEvent(row: EventRow, repos: AuditRepositories): AskEvent {
  const d = repos.dictionaries;
  const result = d.results.entry(row.result_id);
  return {
    id: String(row.seq),
    seq: row.seq,
    ts: row.ts,
    service: row.service,
    operation: d.operations.nameOf(row.operation_id),
    result: result.normalized,
    resultRaw: result.raw,
    actor: d.actors.nameOf(row.actor_id),
    target: row.target,
  };
}
