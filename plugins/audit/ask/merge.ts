/**
 * The ask's scope: the request's explicit filters merged with what the question says (spec "Ask
 * behaviour" 2–4). Explicit filters win, field by field; every filter says where it came from,
 * and every question constraint an explicit filter replaced is reported.
 *
 * A broad question — no service intent, no services filter, no operation, no person, device or
 * address — leaves out the noisy services (mail, file sharing, chat) and says so.
 */
import { type FilterInput, PIVOT_FILTERS, toEventFilters } from '../http/filters.js';
import type { EventFilters } from '../store/event-query.js';
import { NOISY_SERVICES, type ParsedQuestion } from './question-parser.js';

export type ExplicitFilters = FilterInput;

export type FilterSource = 'request' | 'question';

export interface AppliedFilter {
  field:
    | 'services'
    | 'tenants'
    | 'actor'
    | 'operation'
    | 'result'
    | 'start'
    | 'end'
    | 'include_tags'
    | 'exclude_tags'
    | (typeof PIVOT_FILTERS)[number];
  value: string | string[];
  source: FilterSource;
  /** For a question filter: the words that set it. */
  because?: string;
}

export interface QueryInfo {
  time_range: {
    start: string | null;
    end: string | null;
    source: FilterSource | 'mixed' | 'none';
    phrase?: string;
  };
  filters: AppliedFilter[];
  /** Question constraints an explicit filter replaced. */
  overridden: Array<{ field: string; question_value: string | string[]; request_value: string | string[] }>;
  entities: { actors: string[]; devices: string[]; ips: string[]; operations: string[] };
  /** Devices, addresses and further people are matched against each event's actor and target. */
  matched_on_actor_or_target: string[];
  excluded_services: { services: string[]; reason: string } | null;
  notes: string[];
}

export interface AskScope {
  filters: EventFilters;
  /** Services left out because the question is broad (added to the privacy scope's hidden list). */
  excludedServices: string[];
  /** Terms each event's actor or target must contain one of (case-insensitive); empty: none. */
  terms: string[];
  info: Omit<QueryInfo, 'time_range'> & { time_range: QueryInfo['time_range'] };
}

export class EmptyWindowError extends Error {
  override readonly name = 'EmptyWindowError';
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

export const BROAD_EXCLUSION_REASON =
  'the question names no service, operation, person or device, so the noisy services — mail (exchange), file sharing (sharepoint, onedrive) and chat (teams) — are left out; name them in the question or pass `services` to include them';

export function mergeScope(explicit: ExplicitFilters, parsed: ParsedQuestion): AskScope {
  const filters: EventFilters = {};
  const applied: AppliedFilter[] = [];
  const overridden: QueryInfo['overridden'] = [];
  const notes: string[] = [];
  const terms: string[] = [];

  const take = <K extends AppliedFilter['field']>(
    field: K,
    request: string | string[] | undefined,
    question: { value: string | string[]; because: string } | undefined,
  ): { value: string | string[]; source: FilterSource } | undefined => {
    if (request !== undefined && !(Array.isArray(request) && request.length === 0)) {
      applied.push({ field, value: request, source: 'request' });
      if (question) overridden.push({ field, question_value: question.value, request_value: request });
      return { value: request, source: 'request' };
    }
    if (question) {
      applied.push({ field, value: question.value, source: 'question', because: question.because });
      return { value: question.value, source: 'question' };
    }
    return undefined;
  };

  // Services: explicit, else the intents' services.
  const intentServices = [...new Set(parsed.intents.flatMap((i) => i.services))];
  const services = take(
    'services',
    explicit.services,
    intentServices.length
      ? { value: intentServices, because: parsed.intents.map((i) => `"${i.word}"`).join(', ') }
      : undefined,
  );
  if (services) filters.services = services.value as string[];

  // Issue 29: tenants named in the question (known ones only), unless the request gives them.
  const tenants = take(
    'tenants',
    explicit.tenants,
    parsed.tenants.length ? { value: parsed.tenants, because: parsed.tenants.join(', ') } : undefined,
  );
  if (tenants) filters.tenants = tenants.value as string[];

  // People: one named person is the actor filter; several are matched per event.
  const actor = take(
    'actor',
    explicit.actor,
    parsed.actors.length === 1 ? { value: parsed.actors[0]!, because: parsed.actors[0]! } : undefined,
  );
  if (actor) filters.actor = actor.value as string;
  if (parsed.actors.length > 1) {
    if (explicit.actor !== undefined) {
      overridden.push({ field: 'actor', question_value: parsed.actors, request_value: explicit.actor });
    } else terms.push(...parsed.actors);
  }

  const operation = take(
    'operation',
    explicit.operation,
    parsed.operations.length ? { value: parsed.operations[0]!, because: parsed.operations[0]! } : undefined,
  );
  if (operation) filters.operation = operation.value as string;
  if (parsed.operations.length > 1) {
    notes.push(`only the first operation named is filtered on: ${parsed.operations[0]}`);
  }

  const result = take(
    'result',
    explicit.result,
    parsed.failuresOnly ? { value: 'failure', because: 'the question asks about failures' } : undefined,
  );
  if (result) filters.result = result.value as string;

  const phrase = parsed.range?.phrase;
  const start = take(
    'start',
    explicit.start === undefined ? undefined : (iso(explicit.start) as string),
    parsed.range?.start !== undefined ? { value: iso(parsed.range.start)!, because: phrase! } : undefined,
  );
  const end = take(
    'end',
    explicit.end === undefined ? undefined : (iso(explicit.end) as string),
    parsed.range?.end !== undefined ? { value: iso(parsed.range.end)!, because: phrase! } : undefined,
  );
  if (start) filters.start = Date.parse(start.value as string);
  if (end) filters.end = Date.parse(end.value as string);
  if (filters.start !== undefined && filters.end !== undefined && filters.end <= filters.start) {
    throw new EmptyWindowError(
      start?.source === end?.source && start?.source === 'question'
        ? `the question's time range ("${phrase}") ends before it starts`
        : 'the time range (start from the ' +
            `${start?.source}, end from the ${end?.source}) ends before it starts`,
    );
  }

  const include = take('include_tags', explicit.include_tags, undefined);
  if (include) filters.includeTags = include.value as string[];
  const exclude = take('exclude_tags', explicit.exclude_tags, undefined);
  if (exclude) filters.excludeTags = exclude.value as string[];

  // Issue 29: the pivots' exact filters (an ask about a pivot's events) come from the request only.
  for (const field of PIVOT_FILTERS) take(field, explicit[field], undefined);
  const pivots = toEventFilters(Object.fromEntries(PIVOT_FILTERS.map((f) => [f, explicit[f]])));
  if (pivots.actorExact !== undefined) filters.actorExact = pivots.actorExact;
  if (pivots.keys) filters.keys = pivots.keys;

  terms.push(...parsed.devices, ...parsed.ips);

  const broad =
    !filters.services &&
    !filters.operation &&
    !filters.actor &&
    !filters.actorExact &&
    !filters.keys &&
    terms.length === 0 &&
    parsed.intents.length === 0;
  const excludedServices = broad ? [...NOISY_SERVICES] : [];

  const sources = new Set([start?.source, end?.source].filter(Boolean));
  return {
    filters,
    excludedServices,
    terms: [...new Set(terms.map((t) => t.toLowerCase()))],
    info: {
      time_range: {
        start: iso(filters.start),
        end: iso(filters.end),
        source:
          sources.size === 0 ? 'none' : sources.size === 2 ? 'mixed' : ([...sources][0] as FilterSource),
        ...(phrase && [start?.source, end?.source].includes('question') ? { phrase } : {}),
      },
      filters: applied,
      overridden,
      entities: {
        actors: parsed.actors,
        devices: parsed.devices,
        ips: parsed.ips,
        operations: parsed.operations,
      },
      matched_on_actor_or_target: [...new Set(terms)],
      excluded_services: broad ? { services: excludedServices, reason: BROAD_EXCLUSION_REASON } : null,
      notes,
    },
  };
}
