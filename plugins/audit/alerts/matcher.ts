/**
 * A rule's condition compiled once into a predicate over a newly stored event: sets for exact
 * values, lower-cased needles for substrings (`String.includes`, no pattern engine), and the
 * event's local day and minute in the rule's time zone. Cheap parts are checked first, so the
 * usual non-matching event costs a few comparisons per rule.
 */
import { type Condition, DEFAULT_THRESHOLD } from './condition.js';
import { DAYS, type Day } from './schemas.js';

/** What a rule sees of an event: the normalised fields, and its tags when stored. */
export interface AlertableEvent {
  seq: number;
  timestamp: number;
  service: string;
  operation: string;
  result: string;
  actor: string;
  target: string;
  tags: readonly string[];
  /** Issue 29: the tenant it was collected from (short name); absent: `default`. */
  tenant?: string;
  /** The source it was collected from and the upstream record as stored (Sigma rules read them). */
  source?: string;
  raw?: string;
  /** The upstream record already parsed (`raw` as an object), when the normaliser handed it on. */
  record?: unknown;
}

type Test = (e: AlertableEvent, memo: EventMemo) => boolean;

/** Per-event values computed at most once, whatever the number of rules. */
export class EventMemo {
  private operationFolded: string | undefined;
  private actorFolded: string | undefined;
  private local: Map<string, LocalTime> | undefined;
  private parsed: unknown;
  constructor(readonly event: AlertableEvent) {}

  /** The upstream record, parsed once (undefined when the event carries none). */
  record(): unknown {
    if (this.parsed === undefined && this.event.record !== undefined) this.parsed = this.event.record;
    if (this.parsed === undefined && this.event.raw !== undefined) {
      try {
        this.parsed = JSON.parse(this.event.raw);
      } catch {
        this.parsed = null;
      }
    }
    return this.parsed;
  }

  operation(): string {
    this.operationFolded ??= this.event.operation.toLowerCase();
    return this.operationFolded;
  }

  actor(): string {
    this.actorFolded ??= this.event.actor.toLowerCase();
    return this.actorFolded;
  }

  localTime(zone: string): LocalTime {
    this.local ??= new Map();
    let t = this.local.get(zone);
    if (!t) {
      t = localTime(this.event.timestamp, zone);
      this.local.set(zone, t);
    }
    return t;
  }
}

export interface LocalTime {
  day: Day;
  /** Minutes since local midnight. */
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
const WEEKDAY: Record<string, Day> = {
  Mon: 'mon',
  Tue: 'tue',
  Wed: 'wed',
  Thu: 'thu',
  Fri: 'fri',
  Sat: 'sat',
  Sun: 'sun',
};
const UTC_DAYS: Day[] = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

export function localTime(ms: number, zone: string): LocalTime {
  if (zone === 'UTC' || zone === 'Etc/UTC') {
    const d = new Date(ms);
    return { day: UTC_DAYS[d.getUTCDay()]!, minute: d.getUTCHours() * 60 + d.getUTCMinutes() };
  }
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(zone, f);
  }
  let day: Day = 'mon';
  let hour = 0;
  let minute = 0;
  for (const part of f.formatToParts(ms)) {
    if (part.type === 'weekday') day = WEEKDAY[part.value] ?? day;
    else if (part.type === 'hour') hour = Number(part.value);
    else if (part.type === 'minute') minute = Number(part.value);
  }
  return { day, minute: hour * 60 + minute };
}

function textTest(
  match: { equals?: string[] | undefined; contains?: string[] | undefined },
  value: (m: EventMemo) => string,
): Test {
  const equals = match.equals ? new Set(match.equals.map((v) => v.toLowerCase())) : undefined;
  const contains = match.contains?.map((v) => v.toLowerCase());
  return (_e, m) => {
    const v = value(m);
    if (equals?.has(v)) return true;
    if (contains) for (const needle of contains) if (v.includes(needle)) return true;
    return false;
  };
}

export interface CompiledRule {
  id: number;
  name: string;
  severity: string;
  count: number;
  windowMs: number;
  per: 'actor' | 'overall';
  matches(e: AlertableEvent, memo: EventMemo): boolean;
}

/** A saved search's filters as a test of one stored event (saved/match.ts); undefined: it is gone. */
export type SavedSearchTest = (id: number) => ((e: AlertableEvent) => boolean) | undefined;

export function compileRule(
  rule: { id: number; name: string; severity: string; condition: Condition },
  defaultTimeZone: string,
  savedSearch?: SavedSearchTest,
): CompiledRule {
  const c = rule.condition;
  const tests: Test[] = [];
  if (c.services) {
    const services = new Set(c.services);
    tests.push((e) => services.has(e.service));
  }
  if (c.tenants) {
    const tenants = new Set(c.tenants);
    tests.push((e) => tenants.has(e.tenant ?? 'default'));
  }
  if (c.result) {
    const results = new Set<string>(c.result);
    tests.push((e) => results.has(e.result));
  }
  if (c.operation) tests.push(textTest(c.operation, (m) => m.operation()));
  if (c.actor) tests.push(textTest(c.actor, (m) => m.actor()));
  if (c.tags) {
    const all = c.tags.all_of ?? [];
    const none = new Set(c.tags.none_of ?? []);
    tests.push((e) => all.every((t) => e.tags.includes(t)) && !e.tags.some((t) => none.has(t)));
  }
  if (c.time) {
    const zone = c.time.time_zone ?? defaultTimeZone;
    const days = new Set<Day>(c.time.days ?? DAYS);
    const from = c.time.from ?? 0;
    const to = c.time.to ?? 24 * 60;
    const outside = c.time.when === 'outside';
    tests.push((_e, m) => {
      const t = m.localTime(zone);
      const clock = from < to ? t.minute >= from && t.minute < to : t.minute >= from || t.minute < to;
      const inside = days.has(t.day) && clock;
      return inside !== outside;
    });
  }
  if (c.saved_search !== undefined) {
    // Last: it asks SQLite, so only events that passed every other part get here. A saved
    // search that cannot be read (deleted under the rule) matches nothing.
    const test = savedSearch?.(c.saved_search) ?? (() => false);
    tests.push((e) => test(e));
  }
  const threshold = c.threshold ?? DEFAULT_THRESHOLD;
  return {
    id: rule.id,
    name: rule.name,
    severity: rule.severity,
    count: threshold.count,
    windowMs: threshold.window,
    per: threshold.per,
    matches(e, memo) {
      for (const test of tests) if (!test(e, memo)) return false;
      return true;
    },
  };
}
