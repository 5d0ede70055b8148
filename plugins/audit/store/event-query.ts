/**
 * Event search: filters, privacy scope and keyset pages on (timestamp, seq), newest first, in
 * both directions (spec "Events query parameters": a cursor from a timestamp and an id instead
 * of skip-based paging).
 *
 * Every page costs O(page size) whatever its depth, because it is read from an index already in
 * (ts, seq) order and starts at the cursor. One filter value drives the scan:
 * - a single value (one service, one actor…) walks that filter's (value, ts) index; given a
 *   service, a result and a tenant filter, the rarest of them drives (`driver`);
 * - a few values (several services, the actors whose name contains "smith") walk one stream per
 *   value and merge them — SQLite would otherwise sort every match of an `IN` list;
 * - otherwise the (ts) index is walked and the filters are checked row by row.
 * The other filters, the privacy scope and the time range are checked on the rows the driver
 * yields. All user text reaches SQL as bound parameters only.
 *
 * Counting (asks, MCP summaries) uses the same WHERE clauses, so privacy and filters hold alike,
 * but never reads rows into JavaScript: `count` is a capped `count(*)` per driver stream, and
 * `tally` gathers the service, operation, result and actor of a bounded newest slice in one row
 * per stream (group_concat). The time, service, result, tenant and actor drivers walk covering
 * indexes (audit migrations 8 and 13: `(ts, seq, service, operation_id, result_id, actor_id,
 * tenant_id)`, `(service, ts, seq, …)` and the like), so a count touches no table row; and a scope that only hides services (a broad ask
 * leaves out mail, file sharing and chat) is counted over the services it keeps, one stream
 * each, instead of stepping over every hidden row in time order.
 */
import type { Database, Statement } from '../../../src/store/database.js';
import { type Dictionaries, fold, MAX_MATCHED_IDS } from './dictionaries.js';
import { serviceKey } from './service-names.js';

export interface EventFilters {
  /** Service names, folded as typed (`Exchange` is `exchange`); several allowed. */
  services?: readonly string[];
  /** Tenant names (audit_tenants); an unknown name matches nothing. */
  tenants?: readonly string[];
  /** Case-insensitive, literal substrings. */
  actor?: string;
  operation?: string;
  result?: string;
  /** [start, end) in ms UTC. */
  start?: number;
  end?: number;
  /** Every one of these tags… */
  includeTags?: readonly string[];
  /** …and none of these. */
  excludeTags?: readonly string[];
  /**
   * Each event's actor or target contains one of these (case-insensitive, literal); empty or
   * absent: no condition. Asks match devices, addresses and further people this way.
   */
  actorOrTarget?: readonly string[];
  /** Issue 29: the actor's exact name (case-insensitive), as the timeline asks for it. */
  actorExact?: string;
  /**
   * Issue 29, pivots: events carrying every one of these exact keys ([kind, value], kinds in
   * timeline/keys.ts: client IP, correlation id, session id, target).
   */
  keys?: ReadonlyArray<readonly [number, string]>;
}

/** What a caller may not see (spec "Privacy gating"); undefined: everything. */
export interface PrivacyScope {
  hiddenOperations: readonly string[];
  hiddenServices: readonly string[];
  /** Issue 29: the only tenants (names) the caller sees; absent: every tenant. */
  tenants?: readonly string[];
}

export interface Position {
  ts: number;
  seq: number;
}

export type Direction = 'next' | 'prev';

export interface EventRow {
  seq: number;
  ts: number;
  source: string;
  source_key: string;
  service: string;
  operation_id: number;
  result_id: number;
  actor_id: number;
  target: string;
  tags: string;
  comment_count: number;
  /** audit_tenants.id: the tenant it was collected from (Dictionaries.tenants). */
  tenant_id: number;
}

export interface PageRequest {
  filters: EventFilters;
  privacy?: PrivacyScope;
  limit: number;
  /** Continue after (`next`: older) or before (`prev`: newer) this position. */
  cursor?: { direction: Direction; position: Position };
}

export interface Page {
  rows: EventRow[];
  /** Position to continue with for older rows, when there are more. */
  next?: Position;
  /** Position to continue with for newer rows, when there are more. */
  prev?: Position;
}

/** Up to this many values are merged stream by stream; more go through the (ts) index. */
const MERGE_MAX = 32;
const STATEMENT_CACHE = 256;
/**
 * The driver's estimate of how common a service, result or tenant is: their shares among this
 * many newest events (one pass over the covering time index, a few milliseconds), kept this long.
 */
const SAMPLE_EVENTS = 10_000;
const SAMPLE_TTL_MS = 10 * 60_000;
const SAMPLE = `
  SELECT service, result_id, tenant_id, count(*) FROM (
    SELECT service, result_id, tenant_id FROM audit_events INDEXED BY audit_events_ts_cover
    ORDER BY ts DESC, seq DESC LIMIT ${SAMPLE_EVENTS}
  ) GROUP BY 1, 2, 3`;

/** Events per value among the sampled newest events (see SAMPLE). */
interface Shares {
  takenAt: number;
  service: Map<string, number>;
  result: Map<number, number>;
  tenant: Map<number, number>;
}
/** The distinct stored services, one index step each (a skip scan); filter-options.ts reads it too. */
export const STORED_SERVICES = `
  WITH RECURSIVE s(v) AS (
    SELECT (SELECT min(service) FROM audit_events INDEXED BY audit_events_service_cover)
    UNION ALL
    SELECT (SELECT min(service) FROM audit_events INDEXED BY audit_events_service_cover WHERE service > s.v)
    FROM s WHERE s.v IS NOT NULL
  )
  SELECT v FROM s WHERE v IS NOT NULL`;

type Dimension = 'service' | 'actor' | 'operation' | 'result' | 'tenant' | 'tag' | 'key' | 'time';

interface Resolved {
  empty: boolean;
  services?: string[];
  hiddenServices: string[];
  actorIds?: number[];
  /** Too many actors matched to list: filter with the dictionary subquery instead. */
  actorNeedle?: string;
  operationIds?: number[];
  operationNeedle?: string;
  hiddenOperationIds: number[];
  resultIds?: number[];
  /** The tenants asked for and visible (audit_tenants ids); absent: every tenant. */
  tenantIds?: number[];
  start?: number;
  end?: number;
  includeTags: string[];
  excludeTags: string[];
  /** Pivot keys; the first drives the scan when present (a key is the most selective filter). */
  keys: Array<readonly [number, string]>;
  /** actorOrTarget: actors whose name contains a term (or, when too many, the terms themselves)… */
  termActorIds?: number[];
  termActorNeedles?: string[];
  /** …or a target containing a term (folded). */
  termTargets?: string[];
}

/** One UTC day's matches of one service (`daily`); `day` counts days since the epoch. */
export interface DailyCount {
  day: number;
  service: string;
  events: number;
  failures: number;
}

const DAY_MS = 86_400_000;
/** The filters `daily` answers from the per-day rollup (the timeline's); any other reads the events. */
const ROLLUP_FILTERS = new Set<string>(['actorExact', 'start', 'end']);

/** What `tally` counted: each column's values with their counts, over `events` events. */
export interface Tally {
  /** How many events the counts cover: the newest of the matches, from `since` on. */
  events: number;
  /** The oldest position counted; undefined when nothing was. */
  since?: Position;
  service: Map<string, number>;
  operation: Map<number, number>;
  result: Map<number, number>;
  actor: Map<number, number>;
}

const COLUMNS =
  'e.seq, e.ts, e.source, e.source_key, e.service, e.operation_id, e.result_id, e.actor_id, e.target, e.tags, e.comment_count, e.tenant_id';

/**
 * The time, service, result, tenant and actor drivers walk covering indexes (audit migrations 8
 * and 13): (ts, seq, …), (service, ts, seq, …) and the like keep the keyset order, and a filter
 * on operation, result, actor or tenant (or a hidden service) is checked on the index entry, so
 * only matching rows are read from the table — and a count reads none.
 */
const INDEX: Record<Exclude<Dimension, 'tag' | 'key'>, string> = {
  time: 'audit_events_ts_cover',
  service: 'audit_events_service_cover',
  actor: 'audit_events_actor_cover',
  operation: 'audit_events_operation_ts',
  result: 'audit_events_result_cover',
  tenant: 'audit_events_tenant_cover',
};

const COLUMN: Record<Exclude<Dimension, 'tag' | 'key' | 'time'>, string> = {
  service: 'e.service',
  actor: 'e.actor_id',
  operation: 'e.operation_id',
  result: 'e.result_id',
  tenant: 'e.tenant_id',
};

const json = (values: readonly unknown[]) => JSON.stringify(values);

type RawRow = [
  number,
  number,
  string,
  string,
  string,
  number,
  number,
  number,
  string,
  string,
  number,
  number,
];

const toRow = (r: RawRow): EventRow => ({
  seq: r[0],
  ts: r[1],
  source: r[2],
  source_key: r[3],
  service: r[4],
  operation_id: r[5],
  result_id: r[6],
  actor_id: r[7],
  target: r[8],
  tags: r[9],
  comment_count: r[10],
  tenant_id: r[11],
});

export class EventQuery {
  private readonly statements = new Map<string, Statement>();
  private sampled: Shares | undefined;

  constructor(
    private readonly db: Database,
    private readonly dictionaries: Dictionaries,
  ) {}

  /** Turns text filters into dictionary ids; `empty` when a filter can match nothing. */
  resolve(filters: EventFilters, privacy?: PrivacyScope): Resolved {
    const r: Resolved = {
      empty: false,
      hiddenServices: privacy ? [...privacy.hiddenServices] : [],
      hiddenOperationIds: privacy?.hiddenOperations.length
        ? this.dictionaries.operations.exactly(privacy.hiddenOperations)
        : [],
      includeTags: [...new Set(filters.includeTags ?? [])],
      excludeTags: [...new Set(filters.excludeTags ?? [])],
      keys: [...(filters.keys ?? [])],
    };
    if (filters.start !== undefined) r.start = filters.start;
    if (filters.end !== undefined) r.end = filters.end;
    if (r.start !== undefined && r.end !== undefined && r.end <= r.start) r.empty = true;
    if (filters.services?.length) {
      const hidden = new Set(r.hiddenServices.map((s) => s.toLowerCase()));
      r.services = [...new Set(filters.services.map(serviceKey))].filter((s) => !hidden.has(s));
      if (!r.services.length) r.empty = true;
    }
    if (filters.actor !== undefined) {
      const ids = this.dictionaries.actors.matching(filters.actor);
      if (ids.length > MAX_MATCHED_IDS) r.actorNeedle = filters.actor;
      else r.actorIds = ids;
      if (!ids.length) r.empty = true;
    }
    if (filters.actorExact !== undefined) {
      const exact = this.dictionaries.actors.exactly([filters.actorExact]);
      const within = r.actorIds ? new Set(r.actorIds) : undefined;
      r.actorIds = within ? exact.filter((id) => within.has(id)) : exact;
      if (!r.actorIds.length) r.empty = true;
    }
    if (filters.operation !== undefined) {
      const ids = this.dictionaries.operations.matching(filters.operation);
      if (ids.length > MAX_MATCHED_IDS) r.operationNeedle = filters.operation;
      else {
        const hidden = new Set(r.hiddenOperationIds);
        r.operationIds = ids.filter((id) => !hidden.has(id));
        if (!r.operationIds.length) r.empty = true;
      }
      if (!ids.length) r.empty = true;
    }
    if (filters.result !== undefined) {
      r.resultIds = this.dictionaries.results.matching(filters.result);
      if (!r.resultIds.length) r.empty = true;
    }
    if (r.excludeTags.some((t) => r.includeTags.includes(t))) r.empty = true;
    if (filters.tenants?.length || privacy?.tenants) {
      // The tenants asked for, within those the caller sees; none left matches nothing.
      let ids = filters.tenants?.length ? this.dictionaries.tenants.exactly(filters.tenants) : undefined;
      if (privacy?.tenants) {
        const visible = new Set(this.dictionaries.tenants.exactly(privacy.tenants));
        ids = (ids ?? [...visible]).filter((id) => visible.has(id));
      }
      r.tenantIds = [...new Set(ids)];
      if (!r.tenantIds.length) r.empty = true;
    }
    const terms = [...new Set((filters.actorOrTarget ?? []).map(fold))];
    if (terms.length) {
      const ids = new Set<number>();
      for (const term of terms) for (const id of this.dictionaries.actors.matching(term)) ids.add(id);
      if (ids.size > MAX_MATCHED_IDS) r.termActorNeedles = terms;
      else r.termActorIds = [...ids];
      r.termTargets = terms;
    }
    return r;
  }

  /**
   * How many events match, counting at most `cap`: `capped` when more do. One capped
   * `count(*)` per driver stream (the streams are disjoint), each on a covering index where
   * the driver has one.
   */
  count(
    filters: EventFilters,
    privacy: PrivacyScope | undefined,
    cap: number,
  ): { count: number; capped: boolean } {
    const r = this.resolve(filters, privacy);
    if (r.empty) return { count: 0, capped: false };
    const { dimension, values } = this.countDriver(r);
    let count = 0;
    for (const value of values) {
      const { sql, params } = this.select(r, dimension, value, 'count');
      params.push(cap + 1 - count);
      count += (this.statement(`SELECT count(*) FROM (${sql} LIMIT ?)`).get(...params) as [number])[0];
      if (count > cap) return { count: cap, capped: true };
    }
    return { count, capped: false };
  }

  /**
   * Service, operation, result and actor counts over the newest matches: all of them when at
   * most `max` match, else the newest slice — every match from a position on, at most `max`
   * events (with several driver streams, at least `max` divided by their number). SQL gathers
   * each stream's slice in one row (group_concat over the covering index); only the tally is
   * JavaScript.
   */
  tally(filters: EventFilters, privacy: PrivacyScope | undefined, max: number): Tally {
    const out: Tally = {
      events: 0,
      service: new Map(),
      operation: new Map(),
      result: new Map(),
      actor: new Map(),
    };
    const r = this.resolve(filters, privacy);
    if (r.empty) return out;
    const { dimension, values } = this.countDriver(r);
    // Each stream's d-th newest match; the newest of those is where the slice starts, so no
    // stream gives more than d events (and the one that set it gives exactly d).
    const depth = Math.max(1, Math.ceil(max / values.length));
    let from: Position | undefined;
    for (const value of values) {
      const { sql, params } = this.select(r, dimension, value, 'position');
      params.push(depth - 1);
      const at = this.statement(`${sql} LIMIT 1 OFFSET ?`).get(...params) as [number, number] | undefined;
      if (at && (!from || at[0] > from.ts || (at[0] === from.ts && at[1] > from.seq))) {
        from = { ts: at[0], seq: at[1] };
      }
    }
    const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);
    for (const value of values) {
      const { sql, params } = this.select(r, dimension, value, 'tally', from);
      const row = this.statement(
        `SELECT count(*), group_concat(s, char(1)), group_concat(o), group_concat(r), group_concat(a) FROM (${sql})`,
      ).get(...params) as [number, string | null, string | null, string | null, string | null];
      const n = row[0];
      if (!n) continue;
      out.events += n;
      for (const s of row[1]!.split('\u0001')) bump(out.service, s);
      for (const o of row[2]!.split(',')) bump(out.operation, Number(o));
      for (const v of row[3]!.split(',')) bump(out.result, Number(v));
      for (const a of row[4]!.split(',')) bump(out.actor, Number(a));
    }
    if (out.events) out.since = from ?? this.oldest(r, dimension, values);
    return out;
  }

  /**
   * Issue 29, the timeline's chart: matches per UTC day (days since the epoch) and service,
   * failures apart. The timeline's own filters (an exact actor over whole days) read the per-day
   * rollup (actor-days.ts: rows per day, tenant, service and operation, not per event) with the
   * privacy scope on the same columns; any other filters count over the same streams and WHERE
   * clauses as `count`. Either way the privacy scope and the filters hold as for the list. The
   * caller bounds the window (`start`).
   */
  daily(filters: EventFilters, privacy: PrivacyScope | undefined): DailyCount[] {
    const r = this.resolve(filters, privacy);
    if (r.empty) return [];
    const out = new Map<string, DailyCount>();
    const add = (rows: Array<[number, string, number, number]>) => {
      for (const [day, service, events, failures] of rows) {
        const key = `${day}\u0001${service}`;
        const seen = out.get(key);
        if (seen) {
          seen.events += events;
          seen.failures += failures;
        } else out.set(key, { day, service, events, failures });
      }
    };
    if (this.rolledUp(filters, r)) {
      const { sql, params } = this.dailyRollup(r);
      add(this.statement(sql).all(...params) as Array<[number, string, number, number]>);
    } else {
      const { dimension, values } = this.countDriver(r);
      for (const value of values) {
        const { sql, params } = this.select(r, dimension, value, 'daily');
        add(
          this.statement(
            `SELECT d, s, count(*), sum(r IN (SELECT id FROM audit_results WHERE normalized = 'failure')) FROM (${sql}) GROUP BY d, s`,
          ).all(...params) as Array<[number, string, number, number]>,
        );
      }
    }
    return [...out.values()].sort((a, b) => a.day - b.day || a.service.localeCompare(b.service));
  }

  /**
   * Whether `daily` can read the per-day rollup (actor-days.ts): the filters are the timeline's —
   * an exact actor, a window of whole UTC days (`start`, and `end` when given) — with any privacy
   * scope. A day-aligned bound after the epoch holds exactly the events whose day is within it.
   */
  private rolledUp(filters: EventFilters, r: Resolved): boolean {
    const wholeDay = (ms: number | undefined) => ms === undefined || (ms > 0 && ms % DAY_MS === 0);
    const others = Object.entries(filters).some(
      ([name, v]) => !ROLLUP_FILTERS.has(name) && v !== undefined && !(Array.isArray(v) && v.length === 0),
    );
    return (
      !others && r.actorIds !== undefined && r.start !== undefined && wholeDay(r.start) && wholeDay(r.end)
    );
  }

  /**
   * The actor's (day, service, events, failures) from the rollup, within the window and the
   * privacy scope — the conditions the event streams check (`residuals`), on the same columns.
   * The rollup's key starts with the day: the stored days of the window are found one index step
   * each (a skip scan), and each is one (day, actor) seek.
   */
  private dailyRollup(r: Resolved): { sql: string; params: unknown[] } {
    const first = r.start! / DAY_MS;
    const end = r.end === undefined ? Number.MAX_SAFE_INTEGER : r.end / DAY_MS;
    const where = ['a.actor_id IN (SELECT value FROM json_each(?))'];
    const params: unknown[] = [first, end, end, json(r.actorIds!)];
    if (r.hiddenServices.length) {
      where.push('lower(a.service) NOT IN (SELECT lower(value) FROM json_each(?))');
      params.push(json(r.hiddenServices));
    }
    if (r.hiddenOperationIds.length) {
      where.push('a.operation_id NOT IN (SELECT value FROM json_each(?))');
      params.push(json(r.hiddenOperationIds));
    }
    if (r.tenantIds) {
      where.push('a.tenant_id IN (SELECT value FROM json_each(?))');
      params.push(json(r.tenantIds));
    }
    return {
      sql: `WITH RECURSIVE days(d) AS (
          SELECT (SELECT min(day) FROM audit_actor_days WHERE day >= ? AND day < ?)
          UNION ALL
          SELECT (SELECT min(day) FROM audit_actor_days WHERE day > days.d AND day < ?) FROM days WHERE days.d IS NOT NULL
        )
        SELECT a.day, a.service, sum(a.events), sum(a.failures)
        FROM days CROSS JOIN audit_actor_days a ON a.day = days.d
        WHERE ${where.join(' AND ')}
        GROUP BY a.day, a.service`,
      params,
    };
  }

  /** Up to `n` of the newest matches, newest first (one keyset page without its cursor). */
  newest(filters: EventFilters, privacy: PrivacyScope | undefined, n: number): EventRow[] {
    const r = this.resolve(filters, privacy);
    if (r.empty) return [];
    return this.fetch(r, 'next', undefined, Math.max(1, Math.trunc(n)));
  }

  page(request: PageRequest): Page {
    const limit = Math.max(1, Math.trunc(request.limit));
    const resolved = this.resolve(request.filters, request.privacy);
    if (resolved.empty) return this.emptyPage(request);
    const direction = request.cursor?.direction ?? 'next';
    const fetched = this.fetch(resolved, direction, request.cursor?.position, limit + 1);
    const more = fetched.length > limit;
    const rows = more ? fetched.slice(0, limit) : fetched;
    if (direction === 'prev') rows.reverse();
    const first = rows[0];
    const last = rows[rows.length - 1];
    const page: Page = { rows };
    if (!first || !last) return this.emptyPage(request);
    if (direction === 'next') {
      if (more) page.next = { ts: last.ts, seq: last.seq };
      if (request.cursor) page.prev = { ts: first.ts, seq: first.seq };
    } else {
      if (more) page.prev = { ts: first.ts, seq: first.seq };
      page.next = { ts: last.ts, seq: last.seq };
    }
    return page;
  }

  /**
   * Walks every matching row newest first, `chunk` rows per synchronous query, handing each
   * chunk to `consume`; stops when `consume` returns false. For exports and bulk updates.
   */
  *chunks(filters: EventFilters, privacy: PrivacyScope | undefined, chunk: number): Generator<EventRow[]> {
    const resolved = this.resolve(filters, privacy);
    if (resolved.empty) return;
    let position: Position | undefined;
    for (;;) {
      const rows = this.fetch(resolved, 'next', position, chunk);
      if (rows.length) yield rows;
      if (rows.length < chunk) return;
      const last = rows[rows.length - 1]!;
      position = { ts: last.ts, seq: last.seq };
    }
  }

  private emptyPage(request: PageRequest): Page {
    // Nothing here: offer the way back to where the caller came from.
    const c = request.cursor;
    if (!c) return { rows: [] };
    return c.direction === 'next' ? { rows: [], prev: c.position } : { rows: [], next: c.position };
  }

  private driver(r: Resolved): { dimension: Dimension; values: Array<string | number> } {
    if (r.keys.length) return { dimension: 'key', values: [0] };
    if (r.actorIds && r.actorIds.length <= MERGE_MAX) return { dimension: 'actor', values: r.actorIds };
    if (r.operationIds && r.operationIds.length <= MERGE_MAX) {
      return { dimension: 'operation', values: r.operationIds };
    }
    if (r.includeTags.length) return { dimension: 'tag', values: [r.includeTags[0]!] };
    // Service, result and tenant each walk a covering index that checks the others on its
    // entries, so the rarest of those given drives: exchange failures walk the failures (5% of
    // events) rather than Exchange's 40%. Ties keep this order.
    const candidates: Array<{ dimension: 'service' | 'result' | 'tenant'; values: Array<string | number> }> =
      [];
    if (r.services && r.services.length <= MERGE_MAX)
      candidates.push({ dimension: 'service', values: r.services });
    if (r.resultIds && r.resultIds.length <= MERGE_MAX)
      candidates.push({ dimension: 'result', values: r.resultIds });
    if (r.tenantIds && r.tenantIds.length <= MERGE_MAX)
      candidates.push({ dimension: 'tenant', values: r.tenantIds });
    if (candidates.length > 1) {
      const shares = this.shares();
      const weight = (c: (typeof candidates)[number]) => {
        const counts = shares[c.dimension] as Map<string | number, number>;
        return c.values.reduce<number>((sum, v) => sum + (counts.get(v) ?? 0), 0);
      };
      let best = candidates[0]!;
      let least = weight(best);
      for (const c of candidates.slice(1)) {
        const w = weight(c);
        if (w < least) [best, least] = [c, w];
      }
      return best;
    }
    return candidates[0] ?? { dimension: 'time', values: [0] };
  }

  /** The sampled shares (SAMPLE), taken again once older than SAMPLE_TTL_MS. */
  private shares(): Shares {
    const now = Date.now();
    if (this.sampled && now - this.sampled.takenAt < SAMPLE_TTL_MS) return this.sampled;
    const out: Shares = { takenAt: now, service: new Map(), result: new Map(), tenant: new Map() };
    const add = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n);
    for (const [service, result, tenant, n] of this.statement(SAMPLE).all() as Array<
      [string, number, number, number]
    >) {
      add(out.service, service, n);
      add(out.result, result, n);
      add(out.tenant, tenant, n);
    }
    this.sampled = out;
    return out;
  }

  /**
   * The driver for counting: the page driver, except that a scope hiding services with no
   * services filter (a broad ask) counts over the stored services it keeps, one stream each —
   * the hidden rows are never stepped over. Same rows: a row of a kept service is exactly a row
   * the hidden-services condition lets through.
   */
  private countDriver(r: Resolved): { dimension: Dimension; values: Array<string | number> } {
    const d = this.driver(r);
    if (d.dimension !== 'time' || !r.hiddenServices.length) return d;
    const hidden = new Set(r.hiddenServices.map((s) => s.toLowerCase()));
    const kept = (this.statement(STORED_SERVICES).all() as Array<[string]>)
      .map((row) => row[0])
      .filter((s) => !hidden.has(s.toLowerCase()));
    if (kept.length > MERGE_MAX) return d;
    if (!kept.length) return { dimension: 'service', values: [] };
    return { dimension: 'service', values: kept };
  }

  /** The oldest matching position over the streams (a slice that holds every match starts there). */
  private oldest(r: Resolved, dimension: Dimension, values: Array<string | number>): Position | undefined {
    let out: Position | undefined;
    for (const value of values) {
      const { sql, params } = this.select(r, dimension, value, 'oldest');
      const at = this.statement(`${sql} LIMIT 1`).get(...params) as [number, number] | undefined;
      if (at && (!out || at[0] < out.ts || (at[0] === out.ts && at[1] < out.seq)))
        out = { ts: at[0], seq: at[1] };
    }
    return out;
  }

  /**
   * One counting stream's SELECT over the covering index where there is one: `count` selects
   * nothing in particular, `position` the (ts, seq) newest first, `oldest` the same oldest
   * first, `tally` the four counted columns of every match at or after `from`, `daily` the
   * day, service and result of every match.
   */
  private select(
    r: Resolved,
    dimension: Dimension,
    value: string | number,
    shape: 'count' | 'position' | 'oldest' | 'tally' | 'daily',
    from?: Position,
  ): { sql: string; params: unknown[] } {
    const { source, k, where, params } = this.driven(r, dimension, value);
    if (from) {
      where.push(`${k}.ts >= ? AND (${k}.ts > ? OR ${k}.seq >= ?)`);
      params.push(from.ts, from.ts, from.seq);
    }
    // A service stream's services were chosen among the visible ones (resolve, countDriver):
    // checking each of its rows against the hidden services again would change nothing.
    this.residuals(r, dimension, where, params, dimension === 'service');
    const columns =
      shape === 'count'
        ? '1'
        : shape === 'tally'
          ? 'e.service AS s, e.operation_id AS o, e.result_id AS r, e.actor_id AS a'
          : shape === 'daily'
            ? `${k}.ts / ${DAY_MS} AS d, e.service AS s, e.result_id AS r`
            : `${k}.ts, ${k}.seq`;
    const order =
      shape === 'position'
        ? ` ORDER BY ${k}.ts DESC, ${k}.seq DESC`
        : shape === 'oldest'
          ? ` ORDER BY ${k}.ts ASC, ${k}.seq ASC`
          : '';
    return {
      sql: `SELECT ${columns} FROM ${source} WHERE ${where.length ? where.join(' AND ') : '1'}${order}`,
      params,
    };
  }

  /** Up to `n` rows after `position` in `direction`, ordered in that direction. */
  private fetch(r: Resolved, direction: Direction, position: Position | undefined, n: number): EventRow[] {
    const { dimension, values } = this.driver(r);
    const streams = values.map((value) => this.stream(r, dimension, value, direction, position, n));
    if (streams.length === 1) return streams[0]!;
    const all = streams.flat();
    const sign = direction === 'next' ? -1 : 1;
    all.sort((a, b) => sign * (a.ts - b.ts || a.seq - b.seq));
    return all.slice(0, n);
  }

  private stream(
    r: Resolved,
    dimension: Dimension,
    value: string | number,
    direction: Direction,
    position: Position | undefined,
    n: number,
  ): EventRow[] {
    const { source: from, k, where, params } = this.driven(r, dimension, value);
    if (position) {
      // (ts, seq) < (?, ?) written so that the ts bound is an index range.
      const [cmp, strict] = direction === 'next' ? ['<=', '<'] : ['>=', '>'];
      where.push(`${k}.ts ${cmp} ? AND (${k}.ts ${strict} ? OR ${k}.seq ${strict} ?)`);
      params.push(position.ts, position.ts, position.seq);
    }
    this.residuals(r, dimension, where, params);
    const order = direction === 'next' ? 'DESC' : 'ASC';
    const sql = `SELECT ${COLUMNS} FROM ${from} WHERE ${where.length ? where.join(' AND ') : '1'} ORDER BY ${k}.ts ${order}, ${k}.seq ${order} LIMIT ?`;
    params.push(n);
    return (this.statement(sql).all(...params) as RawRow[]).map(toRow);
  }

  /**
   * What every stream of the driver (`dimension` = `value`) starts from: its source, the alias
   * carrying ts and seq for the range (t for tags, e otherwise), and the WHERE parts so far (the
   * driver's value and the time range).
   */
  private driven(
    r: Resolved,
    dimension: Dimension,
    value: string | number,
  ): { source: string; k: 't' | 'e'; where: string[]; params: unknown[] } {
    const where: string[] = [];
    const params: unknown[] = [];
    const k = dimension === 'tag' || dimension === 'key' ? 't' : 'e';
    let source: string;
    if (dimension === 'key') {
      // The first key (value is its index in r.keys) walks (kind, value, ts, seq).
      const [kind, keyValue] = r.keys[Number(value)]!;
      source = 'audit_event_keys t CROSS JOIN audit_events e ON e.seq = t.seq';
      where.push('t.kind = ? AND t.value = ?');
      params.push(kind, keyValue);
    } else if (dimension === 'tag') {
      source = 'audit_event_tags t CROSS JOIN audit_events e ON e.seq = t.seq';
      where.push('t.tag = ?');
      params.push(value);
    } else {
      source = `audit_events e INDEXED BY ${INDEX[dimension]}`;
      if (dimension !== 'time') {
        where.push(`${COLUMN[dimension]} = ?`);
        params.push(value);
      }
    }
    if (r.start !== undefined) {
      where.push(`${k}.ts >= ?`);
      params.push(r.start);
    }
    if (r.end !== undefined) {
      where.push(`${k}.ts < ?`);
      params.push(r.end);
    }
    return { source, k, where, params };
  }

  private residuals(
    r: Resolved,
    driver: Dimension,
    where: string[],
    params: unknown[],
    servicesVisible = false,
  ): void {
    const inList = (column: string, values: readonly unknown[], negate = false) => {
      if (values.length === 1) {
        where.push(`${column} ${negate ? '!=' : '='} ?`);
        params.push(values[0]);
      } else {
        where.push(`${column} ${negate ? 'NOT IN' : 'IN'} (SELECT value FROM json_each(?))`);
        params.push(json(values));
      }
    };
    if (r.services && driver !== 'service') inList('e.service', r.services);
    if (r.hiddenServices.length && !servicesVisible) {
      where.push('lower(e.service) NOT IN (SELECT lower(value) FROM json_each(?))');
      params.push(json(r.hiddenServices));
    }
    if (r.actorIds && driver !== 'actor') inList('e.actor_id', r.actorIds);
    if (r.actorNeedle !== undefined) {
      where.push('e.actor_id IN (SELECT id FROM audit_actors WHERE instr(folded, ?) > 0)');
      params.push(r.actorNeedle.toLowerCase());
    }
    if (r.operationIds && driver !== 'operation') inList('e.operation_id', r.operationIds);
    if (r.operationNeedle !== undefined) {
      where.push('e.operation_id IN (SELECT id FROM audit_operations WHERE instr(folded, ?) > 0)');
      params.push(r.operationNeedle.toLowerCase());
    }
    if (r.hiddenOperationIds.length) inList('e.operation_id', r.hiddenOperationIds, true);
    if (r.resultIds && driver !== 'result') inList('e.result_id', r.resultIds);
    if (r.tenantIds && driver !== 'tenant') inList('e.tenant_id', r.tenantIds);
    const tags = driver === 'tag' ? r.includeTags.slice(1) : r.includeTags;
    for (const tag of tags) {
      where.push('EXISTS (SELECT 1 FROM audit_event_tags x WHERE x.seq = e.seq AND x.tag = ?)');
      params.push(tag);
    }
    for (const [kind, keyValue] of driver === 'key' ? r.keys.slice(1) : r.keys) {
      where.push(
        'EXISTS (SELECT 1 FROM audit_event_keys x WHERE x.seq = e.seq AND x.kind = ? AND x.value = ?)',
      );
      params.push(kind, keyValue);
    }
    if (r.excludeTags.length) {
      where.push(
        'NOT EXISTS (SELECT 1 FROM audit_event_tags x WHERE x.seq = e.seq AND x.tag IN (SELECT value FROM json_each(?)))',
      );
      params.push(json(r.excludeTags));
    }
    if (r.termTargets) {
      // The actor through the dictionary (folded as in JavaScript); the target with lower(),
      // which folds ASCII — the terms (addresses, device names, user principal names) are ASCII.
      const any: string[] = [];
      if (r.termActorIds) {
        if (r.termActorIds.length) {
          any.push('e.actor_id IN (SELECT value FROM json_each(?))');
          params.push(json(r.termActorIds));
        }
      } else {
        for (const needle of r.termActorNeedles ?? []) {
          any.push('e.actor_id IN (SELECT id FROM audit_actors WHERE instr(folded, ?) > 0)');
          params.push(needle);
        }
      }
      for (const term of r.termTargets) {
        any.push('instr(lower(e.target), ?) > 0');
        params.push(term);
      }
      where.push(`(${any.join(' OR ')})`);
    }
  }

  private statement(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      if (this.statements.size >= STATEMENT_CACHE) this.statements.clear();
      // Arrays, not objects: better-sqlite3 builds an object per row far slower than JavaScript
      // does from an array, and exports read a million rows.
      s = this.db.prepare(sql).raw(true);
      this.statements.set(sql, s);
    }
    return s;
  }
}
