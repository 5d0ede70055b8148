/**
 * Plain-language asks and single-event explanations (spec "Ask behaviour" 1–9, explain; issue 13):
 * parse → merge with explicit filters → gather (≤1000 fetched, all counted) → sample (≤
 * LLM_MAX_EVENTS) → prompt → LLM, or the bullet-list fallback when the LLM is off or fails.
 *
 * Privacy: the caller's scope goes into the same query `/api/events` uses, and every event in an
 * answer is re-read and re-checked on the way out — also for cached answers, which keep only
 * event ids (so tags and comments are current, and a privacy change applies at once).
 *
 * Caching (spec "Ask behaviour" 9): only LLM answers (a fallback is cheap, and the next request
 * should try the LLM again); ask answers 1 h, explanations 24 h; keyed by the question, the
 * explicit filters, the caller's privacy view, the newest stored event, the UTC day (so "today"
 * does not outlive midnight), the model and LLM_MAX_EVENTS.
 */
import { createHash } from 'node:crypto';
import { ProblemError } from '../../../src/http/problem.js';
import type { Logger } from '../../../src/log.js';
import type { Database, Statement } from '../../../src/store/database.js';
import type { CacheStore } from '../cache/store.js';
import type { Caller } from '../http/context.js';
import { type ApiEvent, toApiEvent } from '../http/event-json.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import { type LanguageModel, LlmError } from '../llm/client.js';
import type { AuditRepositories, AuditStore } from '../store/audit-store.js';
import type { EventRow, PrivacyScope } from '../store/event-query.js';
import { storedServices } from '../store/filter-options.js';
import { fallbackAnswer } from './fallback.js';
import { type AskEvent, gatherEvents, toAskEvent } from './gather.js';
import { EmptyWindowError, type ExplicitFilters, mergeScope, type QueryInfo } from './merge.js';
import { askMessages, explainMessages } from './prompt.js';
import { parseQuestion } from './question-parser.js';
import { AGGREGATE_THRESHOLD, sampleEvents, shownEvents } from './sample.js';

export const ASK_CACHE_TTL_MS = 3_600_000;
export const EXPLAIN_CACHE_TTL_MS = 86_400_000;
const NAMES_TTL_MS = 30_000;
/** Services every hub knows, whether or not it has stored any of their events yet. */
const CANONICAL_SERVICES = ['directory', 'device_management', 'exchange', 'sharepoint', 'onedrive', 'teams'];

export interface AskInput {
  question: string;
  filters: ExplicitFilters;
}

export interface AskAnswer {
  answer: string;
  events: ApiEvent[];
  query_info: QueryInfo & {
    events_fetched: number;
    events_sampled: number;
    events_shown: number;
    /** What the counts by service, operation, result and actor cover (all matches, or the newest). */
    counts_cover: { events: number; all_matched: boolean; since: string | null };
  };
  total_matched: number;
  /** More matched than were counted (50,000): `total_matched` is a lower bound. */
  total_capped: boolean;
  llm_used: boolean;
  /** Why the answer is the fallback list (llm_used false). */
  fallback_reason?: string;
  cached: boolean;
}

export interface ExplainAnswer {
  event: ApiEvent;
  explanation: string;
  llm_used: boolean;
  fallback_reason?: string;
  cached: boolean;
}

interface CachedAsk {
  answer: string;
  event_ids: number[];
  query_info: AskAnswer['query_info'];
  total_matched: number;
  total_capped: boolean;
}

const REASONS: Record<string, string> = {
  not_configured: 'no language model is configured (LLM_BASE_URL)',
};

const sha = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

export class AskService {
  private names:
    | {
        at: number;
        operations: string[];
        tenants: string[];
        services: Set<string>;
        /** The operations a view may have recognised, by its hidden operations (one list each). */
        visible: Map<string, string[]>;
      }
    | undefined;

  constructor(
    private readonly deps: {
      store: AuditStore;
      privacy: PrivacyPolicy;
      llm: LanguageModel;
      cache: CacheStore;
      maxEvents: number;
      log: Logger;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** The scope of a question, or a 400 naming what is wrong (used before an async job is queued). */
  scope(input: AskInput, caller: Caller) {
    const repos = this.deps.store.repos();
    const names = this.knownNames(repos);
    const unknown = (input.filters.services ?? []).filter((s) => !names.services.has(s.toLowerCase()));
    if (unknown.length) {
      throw new ProblemError(400, 'invalid services', {
        errors: [
          {
            field: 'services',
            message: `unknown service: ${unknown.join(', ')} (known: ${[...names.services].sort().join(', ')})`,
          },
        ],
      });
    }
    const privacy = this.deps.privacy.scopeFor(caller);
    // A caller who may not see an operation does not get it recognised either.
    const viewKey = JSON.stringify(privacy?.hiddenOperations ?? []);
    let knownOperations = names.visible.get(viewKey);
    if (!knownOperations) {
      const hiddenOps = new Set(privacy?.hiddenOperations.map((o) => o.toLowerCase()) ?? []);
      knownOperations = names.operations.filter((o) => !hiddenOps.has(o.toLowerCase()));
      names.visible.set(viewKey, knownOperations);
    }
    // Issue 29: only the tenants this caller sees are recognised in the question.
    const knownTenants = privacy?.tenants
      ? names.tenants.filter((t) => privacy.tenants!.includes(t))
      : names.tenants;
    const parsed = parseQuestion(input.question, { now: this.now(), knownOperations, knownTenants });
    try {
      return { scope: mergeScope(input.filters, parsed), privacy };
    } catch (error) {
      if (error instanceof EmptyWindowError) {
        throw new ProblemError(400, 'invalid time range', {
          errors: [{ field: 'end', message: error.message }],
        });
      }
      throw error;
    }
  }

  async ask(input: AskInput, caller: Caller): Promise<AskAnswer> {
    const { scope, privacy } = this.scope(input, caller);
    const repos = this.deps.store.repos();
    const key = `ask:${sha({
      v: 2,
      q: input.question.replace(/\s+/g, ' ').trim().toLowerCase(),
      f: input.filters,
      // The caller's view: full, or exactly what it hides (so a changed PRIVACY_* setting after
      // a restart never meets an answer written under the old one).
      p: privacy
        ? {
            s: privacy.hiddenServices,
            o: privacy.hiddenOperations,
            ...(privacy.tenants ? { t: privacy.tenants } : {}),
          }
        : 'full',
      n: newestSeq(repos),
      d: new Date(this.now()).toISOString().slice(0, 10),
      m: this.deps.llm.model ?? null,
      e: this.deps.maxEvents,
    })}`;
    const hit = await this.cacheGet(key);
    if (hit) {
      const cached = JSON.parse(hit) as CachedAsk;
      return {
        answer: cached.answer,
        events: this.visible(repos, caller, cached.event_ids),
        query_info: cached.query_info,
        total_matched: cached.total_matched,
        total_capped: cached.total_capped,
        llm_used: true,
        cached: true,
      };
    }

    const scopeWithExclusions: PrivacyScope | undefined = scope.excludedServices.length
      ? {
          hiddenOperations: privacy?.hiddenOperations ?? [],
          hiddenServices: [...(privacy?.hiddenServices ?? []), ...scope.excludedServices],
          ...(privacy?.tenants ? { tenants: privacy.tenants } : {}),
        }
      : privacy;
    const gathered = gatherEvents(repos, scope.filters, scopeWithExclusions, scope.terms);
    const sample = sampleEvents(gathered.fetched, this.deps.maxEvents);
    const shown = shownEvents(sample, gathered.total);
    const info = {
      ...scope.info,
      events_fetched: gathered.fetched.length,
      events_sampled: sample.length,
      events_shown: shown.length,
      counts_cover: {
        events: gathered.countsCover.events,
        all_matched: gathered.countsCover.allMatched,
        since:
          gathered.countsCover.since === undefined
            ? null
            : new Date(gathered.countsCover.since).toISOString(),
      },
    };
    const base = { query_info: info, total_matched: gathered.total, total_capped: gathered.totalCapped };

    if (gathered.total > 0) {
      try {
        const completion = await this.deps.llm.complete(
          askMessages({
            question: input.question,
            info: scope.info,
            total: gathered.total,
            totalCapped: gathered.totalCapped,
            shown,
            ...(gathered.total > AGGREGATE_THRESHOLD
              ? { counts: gathered.counts, countsCover: gathered.countsCover }
              : {}),
          }),
        );
        const cited = citedIds(completion.text, shown);
        const events = cited.length ? cited : highlights(sample);
        const value: CachedAsk = {
          answer: completion.text,
          event_ids: events.map((e) => e.seq),
          ...base,
        };
        await this.cacheSet(key, JSON.stringify(value), ASK_CACHE_TTL_MS);
        return {
          answer: completion.text,
          events: this.visible(repos, caller, value.event_ids),
          ...base,
          llm_used: true,
          cached: false,
        };
      } catch (error) {
        return this.fallback(repos, caller, base, gathered, sample, scope.info, error);
      }
    }
    return this.fallback(
      repos,
      caller,
      base,
      gathered,
      sample,
      scope.info,
      new LlmError('not_configured', ''),
      true,
    );
  }

  private fallback(
    repos: AuditRepositories,
    caller: Caller,
    base: Pick<AskAnswer, 'query_info' | 'total_matched' | 'total_capped'>,
    gathered: ReturnType<typeof gatherEvents>,
    sample: AskEvent[],
    info: QueryInfo,
    error: unknown,
    nothingMatched = false,
  ): AskAnswer {
    const reason = nothingMatched ? 'no_events' : this.reasonOf(error);
    const words = nothingMatched ? 'nothing matched, so there was nothing to ask it' : this.wordsOf(error);
    const fb = fallbackAnswer({
      info,
      total: gathered.total,
      totalCapped: gathered.totalCapped,
      counts: gathered.counts,
      countsCover: gathered.countsCover,
      sample,
      reason: words,
    });
    return {
      answer: fb.answer,
      events: this.visible(
        repos,
        caller,
        fb.events.map((e) => e.seq),
      ),
      ...base,
      llm_used: false,
      fallback_reason: reason,
      cached: false,
    };
  }

  async explain(seq: number, caller: Caller): Promise<ExplainAnswer> {
    const repos = this.deps.store.repos();
    const row = repos.annotations.event(seq);
    // Issue 29: a hidden tenant's event does not exist for this caller.
    if (!row || !this.deps.privacy.seesTenant(caller, repos.dictionaries.tenants.nameOf(row.tenant_id))) {
      throw new ProblemError(404, `no event with id ${seq}`);
    }
    const event = toAskEvent(row, repos);
    if (!this.deps.privacy.allows(caller, event)) {
      throw new ProblemError(403, 'this event is restricted; your role does not allow you to see it');
    }
    const [api] = this.visible(repos, caller, [seq]);
    if (!api) throw new ProblemError(404, `no event with id ${seq}`);
    const key = `explain:${sha({ v: 1, seq, m: this.deps.llm.model ?? null })}`;
    const hit = await this.cacheGet(key);
    if (hit) return { event: api, explanation: hit, llm_used: true, cached: true };
    const context = explainContext(repos, row, this.deps.privacy.scopeFor(caller));
    try {
      const completion = await this.deps.llm.complete(explainMessages(event, context));
      await this.cacheSet(key, completion.text, EXPLAIN_CACHE_TTL_MS);
      return { event: api, explanation: completion.text, llm_used: true, cached: false };
    } catch (error) {
      return {
        event: api,
        explanation: explainFallback(event, context, this.wordsOf(error)),
        llm_used: false,
        fallback_reason: this.reasonOf(error),
        cached: false,
      };
    }
  }

  private reasonOf(error: unknown): string {
    if (error instanceof LlmError) return error.reason;
    return 'error';
  }

  private wordsOf(error: unknown): string {
    if (error instanceof LlmError) {
      if (error.reason !== 'not_configured') {
        this.deps.log.warn(
          { reason: error.reason, status: error.status },
          'the language model failed; answering without it',
        );
      }
      return REASONS[error.reason] ?? error.message;
    }
    this.deps.log.error({ err: error }, 'the language model call failed unexpectedly; answering without it');
    return 'the language model call failed';
  }

  /**
   * Events by id as `/api/events` shows them, leaving out any the caller may not see — read
   * again every time (cached answers too), so tags, comments and privacy are current.
   */
  private visible(repos: AuditRepositories, caller: Caller, seqs: readonly number[]): ApiEvent[] {
    if (!seqs.length) return [];
    const bySeq = new Map(eventsBySeq(repos.db, seqs).map((r) => [r.seq, r]));
    const rows = seqs.map((s) => bySeq.get(s)).filter((r) => r !== undefined);
    const allowed = rows.filter((r) =>
      this.deps.privacy.allows(caller, {
        service: r.service,
        operation: repos.dictionaries.operations.nameOf(r.operation_id),
        tenant: repos.dictionaries.tenants.nameOf(r.tenant_id),
      }),
    );
    const comments = repos.annotations.comments(allowed.filter((r) => r.comment_count > 0).map((r) => r.seq));
    return allowed.map((r) => toApiEvent(r, repos.dictionaries, comments.get(r.seq)));
  }

  private knownNames(repos: AuditRepositories) {
    const now = this.now();
    if (!this.names || now - this.names.at > NAMES_TTL_MS) {
      const operations = repos.db.prepare('SELECT name FROM audit_operations').pluck().all() as string[];
      const stored = storedServices(repos.db);
      this.names = {
        at: now,
        operations,
        tenants: repos.db.prepare('SELECT name FROM audit_tenants ORDER BY name').pluck().all() as string[],
        services: new Set([...CANONICAL_SERVICES, ...stored.map((s) => s.toLowerCase())]),
        visible: new Map(),
      };
    }
    return this.names;
  }

  /** A cache that fails is no cache: the answer is computed, never refused. */
  private async cacheGet(key: string): Promise<string | undefined> {
    try {
      return await this.deps.cache.get(key);
    } catch (error) {
      this.deps.log.warn({ err: (error as Error).message }, 'the cache store failed; answering without it');
      return undefined;
    }
  }

  private async cacheSet(key: string, value: string, ttlMs: number): Promise<void> {
    try {
      await this.deps.cache.set(key, value, ttlMs);
    } catch (error) {
      this.deps.log.warn({ err: (error as Error).message }, 'the cache store failed; answer not cached');
    }
  }
}

/** Statements every ask runs, prepared once per connection (a cache hit should not compile SQL). */
const prepared = new WeakMap<Database, { newest: Statement; events: Statement }>();
function statements(db: Database) {
  let s = prepared.get(db);
  if (!s) {
    s = {
      newest: db.prepare('SELECT max(seq) FROM audit_events').pluck(),
      events: db.prepare(
        `SELECT seq, ts, source, source_key, service, operation_id, result_id, actor_id, target, tags, comment_count, tenant_id
         FROM audit_events WHERE seq IN (SELECT value FROM json_each(?))`,
      ),
    };
    prepared.set(db, s);
  }
  return s;
}

function newestSeq(repos: AuditRepositories): number {
  return (statements(repos.db).newest.get() as number | null) ?? 0;
}

/** The events with these ids, in one statement (any order; unknown ids left out). */
function eventsBySeq(db: Database, seqs: readonly number[]): EventRow[] {
  return statements(db).events.all(JSON.stringify(seqs)) as EventRow[];
}

/** Ids the answer cites (`[#123]`, `#123`), in order, among the events it was shown. */
export function citedIds(text: string, shown: readonly AskEvent[]): AskEvent[] {
  const bySeq = new Map(shown.map((e) => [e.id, e]));
  const out: AskEvent[] = [];
  for (const m of text.matchAll(/#(\d{1,16})\b/g)) {
    const e = bySeq.get(m[1]!);
    if (e && !out.includes(e)) out.push(e);
  }
  return out;
}

/** When an answer cites nothing: the failures and the most recent of the sample, as the fallback lists them. */
function highlights(sample: readonly AskEvent[]): AskEvent[] {
  const failures = sample.filter((e) => e.result === 'failure').slice(0, 10);
  const recent = sample.filter((e) => e.result !== 'failure').slice(0, 5);
  return [...failures, ...recent];
}

function explainContext(
  repos: AuditRepositories,
  row: { seq: number; ts: number; actor_id: number; operation_id: number },
  privacy: PrivacyScope | undefined,
) {
  const hidden = `
    AND lower(service) NOT IN (SELECT lower(value) FROM json_each(?))
    AND operation_id NOT IN (SELECT id FROM audit_operations WHERE folded IN (SELECT lower(value) FROM json_each(?)))`;
  const params = [
    JSON.stringify(privacy?.hiddenServices ?? []),
    JSON.stringify(privacy?.hiddenOperations ?? []),
  ];
  // Issue 29: a caller limited to some tenants counts only theirs.
  const tenants = privacy?.tenants
    ? ' AND tenant_id IN (SELECT id FROM audit_tenants WHERE name IN (SELECT value FROM json_each(?)))'
    : '';
  if (privacy?.tenants) params.push(JSON.stringify(privacy.tenants));
  const sameActorLast24h = repos.db
    .prepare(
      `SELECT count(*) FROM audit_events INDEXED BY audit_events_actor_cover WHERE actor_id = ? AND ts >= ? AND ts <= ? AND seq != ? ${hidden}${tenants}`,
    )
    .pluck()
    .get(row.actor_id, row.ts - 86_400_000, row.ts, row.seq, ...params) as number;
  const operationSeenBefore = repos.db
    .prepare(
      `SELECT count(*) FROM audit_events INDEXED BY audit_events_operation_ts WHERE operation_id = ? AND ts >= ? AND ts < ? ${hidden}${tenants}`,
    )
    .pluck()
    .get(row.operation_id, row.ts - 30 * 86_400_000, row.ts, ...params) as number;
  return { sameActorLast24h, operationSeenBefore };
}

function explainFallback(
  e: AskEvent,
  context: { sameActorLast24h: number; operationSeenBefore: number },
  reason: string,
): string {
  const unusual: string[] = [];
  if (context.operationSeenBefore === 0)
    unusual.push('this operation had not occurred in the 30 days before');
  if (e.result === 'failure') unusual.push('it failed');
  if (context.sameActorLast24h >= 100)
    unusual.push(`the actor had ${context.sameActorLast24h} other events in the 24 hours before`);
  return [
    `- What: ${e.operation} in ${e.service}${e.target ? ` on ${e.target}` : ''}, ${e.result}${e.resultRaw && e.resultRaw.toLowerCase() !== e.result ? ` (${e.resultRaw})` : ''}, at ${new Date(e.ts).toISOString()}.`,
    `- Who: ${e.actor || 'unknown actor'} (${context.sameActorLast24h} other events in the 24 hours before).`,
    `- Unusual: ${unusual.length ? unusual.join('; ') : `nothing stands out (the operation occurred ${context.operationSeenBefore} times in the 30 days before)`}.`,
    `- To check: whether ${e.actor || 'the actor'} meant to do this${e.result === 'failure' ? ', and why it failed (result and raw record)' : ''}; the event's raw record (GET /api/events/${e.id}).`,
    `- No language model was used: ${reason}.`,
  ].join('\n');
}
