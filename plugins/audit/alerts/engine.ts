/**
 * Evaluates every newly stored audit event against the enabled rules (issue 14 "Alert rules").
 *
 * - Runs on the writer's stored-events hook (AuditStore.onStored), which reports only events
 *   that were new: an event fetched again by the overlap is never evaluated twice.
 * - The compiled rules are cached and rebuilt when a rule was written (AlertRepository.revision):
 *   a change applies to the next event, without a restart.
 * - A batch is evaluated in timestamp order, in one transaction: threshold matches and alerts
 *   commit together. Counting and "once per window" use the events' own timestamps, so a
 *   fetch that brings a day of events at once alerts as if they had come one by one.
 * - A rule fires when its key (the actor, or `*` overall) has `count` matches within the
 *   window ending at the event, and not if it already fired for that key at an event less than
 *   a window away.
 *
 * Delivery (MQTT, the destinations) happens after the commit, outside ingest's path (sender.ts).
 */
import type { KernelLogger } from '../../../src/kernel/actor.js';
import type { StoredEvent } from '../store/event-writer.js';
import { type AlertRepository, type AlertRow, type Delivery, isFileRuleRow } from './alert-repository.js';
import { CandidateIndex, type RuleScope } from './candidates.js';
import {
  type AlertableEvent,
  type CompiledRule,
  compileRule,
  EventMemo,
  type SavedSearchTest,
} from './matcher.js';

export interface AlertEngineOptions {
  store: () => AlertRepository;
  timeZone: string;
  /** A destination configured (webhook, Teams, Slack): new alerts start as `pending`. */
  webhook: boolean;
  log: KernelLogger;
  now?: () => number;
  onFired?: (alerts: AlertRow[]) => void;
  onError?: () => void;
  /** Saved searches as conditions (saved/run.ts); their revision recompiles the rules when one changed. */
  savedSearches?: { test: SavedSearchTest; revision: () => number };
}

export class AlertEngine {
  private compiled: CompiledRule[] = [];
  private index = new CandidateIndex([]);
  private compiledFor: { store: AlertRepository; revision: number; saved: number } | undefined;
  evaluated = 0;
  fired = 0;

  constructor(private readonly options: AlertEngineOptions) {}

  /** The enabled rules, compiled; recompiled after any rule write. */
  rules(): CompiledRule[] {
    const store = this.options.store();
    const saved = this.options.savedSearches?.revision() ?? 0;
    if (
      this.compiledFor?.store !== store ||
      this.compiledFor.revision !== store.revision ||
      this.compiledFor.saved !== saved
    ) {
      const revision = store.revision;
      // A rule from a file (a Sigma rule, sigma/) matches with its own predicate; its row alone never runs.
      const scopes: Array<RuleScope | undefined> = [];
      this.compiled = store.enabledRules().flatMap((r) => {
        const compiled = compileRule(r, this.options.timeZone, this.options.savedSearches?.test);
        const file = store.fileRules.get(r.id);
        if (file) {
          scopes.push(file.scope);
          return [{ ...compiled, matches: file.matches }];
        }
        if (isFileRuleRow(r)) return [];
        scopes.push(undefined);
        return [compiled];
      });
      this.index = new CandidateIndex(scopes);
      this.compiledFor = { store, revision, saved };
    }
    return this.compiled;
  }

  /** The stored-events hook: never throws into the writer (the events are committed already). */
  readonly onStored = (stored: StoredEvent[]): void => {
    try {
      this.evaluate(stored.map(toAlertable));
    } catch (err) {
      this.options.onError?.();
      this.options.log.error({ err }, 'alert rules could not be evaluated for a stored batch');
    }
  };

  /** Evaluates events (any order); returns the alerts it stored. */
  evaluate(events: AlertableEvent[]): AlertRow[] {
    const rules = this.rules();
    this.evaluated += events.length;
    if (!rules.length || !events.length) return [];
    const store = this.options.store();
    const ordered =
      events.length > 1 ? [...events].sort((a, b) => a.timestamp - b.timestamp || a.seq - b.seq) : events;
    const now = (this.options.now ?? Date.now)();
    const delivery: Delivery = this.options.webhook ? 'pending' : 'none';
    const fired: AlertRow[] = [];
    // Matching is plain JavaScript, each event against its candidate rules only (candidates.ts);
    // SQLite is touched only for the events that matched.
    const matched: Array<{ e: AlertableEvent; rule: CompiledRule }> = [];
    for (const e of ordered) {
      const memo = new EventMemo(e);
      for (const i of this.index.candidates(e, memo)) {
        const rule = rules[i]!;
        if (rule.matches(e, memo)) matched.push({ e, rule });
      }
    }
    if (!matched.length) return [];
    const counted = new Set<CompiledRule>();
    const run = () => {
      for (const { e, rule } of matched) {
        const key = rule.per === 'actor' ? e.actor : '*';
        let count = 1;
        if (rule.count > 1) {
          count = store.countMatch(rule.id, key, e.timestamp, e.seq, rule.windowMs);
          counted.add(rule);
        }
        if (count < rule.count) continue;
        if (store.firedWithin(rule.id, key, e.timestamp, rule.windowMs)) continue;
        fired.push(
          store.insertAlert({
            rule_id: rule.id,
            rule_name: rule.name,
            severity: rule.severity,
            fired_at: now,
            alert_key: key,
            event_seq: e.seq,
            event_ts: e.timestamp,
            match_count: count,
            window_ms: rule.windowMs,
            detail: JSON.stringify(eventDetail(e)),
            delivery,
          }),
        );
      }
      // Matches two windows behind the batch's newest event can no longer count (late events aside).
      const newest = ordered[ordered.length - 1]!.timestamp;
      for (const rule of counted) store.pruneMatches(rule.id, newest - 2 * rule.windowMs);
    };
    store.db.transaction(run)();
    if (fired.length) {
      this.fired += fired.length;
      this.options.onFired?.(fired);
    }
    return fired;
  }
}

/** What an alert keeps of its event (the event itself may be deleted by retention later). */
export interface AlertEventDetail {
  id: string;
  timestamp: string;
  service: string;
  operation: string;
  result: string;
  actor: string;
  target: string;
  /** Issue 29: the tenant the event was collected from. */
  tenant: string;
}

function eventDetail(e: AlertableEvent): AlertEventDetail {
  return {
    id: String(e.seq),
    timestamp: new Date(e.timestamp).toISOString(),
    service: e.service,
    operation: e.operation,
    result: e.result,
    actor: e.actor,
    target: e.target,
    tenant: e.tenant ?? 'default',
  };
}

const NO_TAGS: readonly string[] = [];

/** New events carry no tags yet: tags are added by people after an event is stored. */
export function toAlertable({ seq, event }: StoredEvent): AlertableEvent {
  return {
    source: event.source,
    raw: event.raw,
    ...(event.record !== undefined ? { record: event.record } : {}),
    seq,
    timestamp: event.timestamp,
    service: event.service,
    operation: event.operation,
    result: event.result,
    actor: event.actor,
    target: event.target,
    tags: NO_TAGS,
    tenant: event.tenant,
  };
}
