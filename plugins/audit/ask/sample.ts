/**
 * The curated sample an LLM sees (spec "Ask behaviour" 5–6): at most LLM_MAX_EVENTS, failures
 * always in, high-value services preferred, stratified by service and operation.
 *
 * - Failures first (newest first), up to the budget.
 * - Then rounds over the (service, operation) strata — high-value services (directory, device
 *   management) first, then the others, the noisy ones (mail, file sharing, chat) last — each
 *   round taking the newest event not yet taken from every stratum, until the budget is spent.
 *   A rare operation thus gets in before the thousandth copy of a common one.
 *
 * When more than AGGREGATE_THRESHOLD match, the prompt shows counts, up to 10 failures and the
 * 50 most recent events of the sample instead of the whole sample.
 */
import type { AskEvent } from './gather.js';
import { NOISY_SERVICES } from './question-parser.js';

export const AGGREGATE_THRESHOLD = 50;
export const FAILURES_SHOWN = 10;
export const RECENT_SHOWN = 50;

const HIGH_VALUE = new Set(['directory', 'device_management']);
const NOISY = new Set<string>(NOISY_SERVICES);
const rank = (service: string) => (HIGH_VALUE.has(service) ? 0 : NOISY.has(service) ? 2 : 1);
const newestFirst = (a: AskEvent, b: AskEvent) => b.ts - a.ts || b.seq - a.seq;

export function sampleEvents(events: readonly AskEvent[], max: number): AskEvent[] {
  const ordered = [...events].sort(newestFirst);
  const taken = new Set<number>();
  const out: AskEvent[] = [];
  for (const e of ordered) {
    if (out.length >= max) break;
    if (e.result === 'failure') {
      out.push(e);
      taken.add(e.seq);
    }
  }
  const strata = new Map<string, AskEvent[]>();
  for (const e of ordered) {
    if (taken.has(e.seq)) continue;
    const key = `${e.service}\u0000${e.operation}`;
    const list = strata.get(key);
    if (list) list.push(e);
    else strata.set(key, [e]);
  }
  const queues = [...strata.values()].sort(
    (a, b) => rank(a[0]!.service) - rank(b[0]!.service) || newestFirst(a[0]!, b[0]!),
  );
  for (let round = 0; out.length < max; round++) {
    let any = false;
    for (const q of queues) {
      const e = q[round];
      if (!e) continue;
      any = true;
      out.push(e);
      if (out.length >= max) break;
    }
    if (!any) break;
  }
  return out.sort(newestFirst);
}

/** What the prompt shows of the sample: all of it up to the threshold, else failures and the most recent. */
export function shownEvents(sample: readonly AskEvent[], totalMatched: number): AskEvent[] {
  if (totalMatched <= AGGREGATE_THRESHOLD) return [...sample];
  const failures = sample.filter((e) => e.result === 'failure').slice(0, FAILURES_SHOWN);
  const recent = sample.slice(0, RECENT_SHOWN);
  const seen = new Set<number>();
  return [...failures, ...recent].filter((e) => !seen.has(e.seq) && seen.add(e.seq)).sort(newestFirst);
}
