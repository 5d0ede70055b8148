/**
 * The events an ask is about (spec "Ask behaviour" 5–6): every match is counted (up to
 * COUNT_CAP) by service, operation, result and actor, and the newest FETCH_LIMIT (1000) are
 * kept for sampling. The walk reads the store newest first in chunks through the same query,
 * filters and privacy scope as `/api/events`, so a gated event can never enter.
 */

import type { AuditRepositories } from '../store/audit-store.js';
import type { NormalizedResult } from '../store/dictionaries.js';
import type { EventFilters, EventRow, PrivacyScope } from '../store/event-query.js';

export const FETCH_LIMIT = 1000;
/** Beyond this many matches the counts stop; `total_capped` says so. */
export const COUNT_CAP = 50_000;
const CHUNK = 2_000;

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

export interface Gathered {
  /** The newest matches, newest first (at most FETCH_LIMIT). */
  fetched: AskEvent[];
  total: number;
  totalCapped: boolean;
  counts: Counts;
}

const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));

export function gatherEvents(
  repos: AuditRepositories,
  filters: EventFilters,
  privacy: PrivacyScope | undefined,
  /** Each event's actor or target must contain one of these (lower case); empty: no condition. */
  terms: readonly string[],
): Gathered {
  const d = repos.dictionaries;
  const fetched: AskEvent[] = [];
  const byService = new Map<string, number>();
  const byOperation = new Map<number, number>();
  const byResult = new Map<number, number>();
  const byActor = new Map<number, number>();
  let total = 0;
  let capped = false;
  const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
  const matches = (row: EventRow) => {
    if (!terms.length) return true;
    const actor = d.actors.nameOf(row.actor_id).toLowerCase();
    const target = row.target.toLowerCase();
    return terms.some((t) => actor.includes(t) || target.includes(t));
  };
  outer: for (const chunk of repos.query.chunks(filters, privacy, CHUNK)) {
    for (const row of chunk) {
      if (!matches(row)) continue;
      if (total >= COUNT_CAP) {
        capped = true;
        break outer;
      }
      total++;
      bump(byService, row.service);
      bump(byOperation, row.operation_id);
      bump(byResult, row.result_id);
      bump(byActor, row.actor_id);
      if (fetched.length < FETCH_LIMIT) fetched.push(toAskEvent(row, repos));
    }
  }
  const named = (m: Map<number, number>, name: (id: number) => string) => {
    const out = new Map<string, number>();
    for (const [id, n] of m) out.set(name(id), (out.get(name(id)) ?? 0) + n);
    return sorted(out);
  };
  return {
    fetched,
    total,
    totalCapped: capped,
    counts: {
      service: sorted(byService),
      operation: named(byOperation, (id) => d.operations.nameOf(id)),
      result: named(byResult, (id) => d.results.entry(id).normalized),
      actor: named(byActor, (id) => d.actors.nameOf(id)),
    },
  };
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
