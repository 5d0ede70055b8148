/**
 * The event filters (spec "Events query parameters": services, actor, operation, result, start,
 * end, include_tags, exclude_tags), parsed the same way for search, export and bulk tagging.
 *
 * - `services`, `tenants`, `include_tags`, `exclude_tags`: repeat the parameter or separate with commas;
 *   services match whatever their case or spacing (`Exchange`, `device management`).
 * - `actor`, `operation`, `result`: case-insensitive substrings, matched literally (never a
 *   pattern). An empty value means "no filter", as a cleared input box sends it.
 * - `start`, `end`: ISO 8601 date-times with `Z` or an offset; the window is [start, end).
 * - Issue 29, pivots: `actor_exact`, `target`, `client_ip`, `correlation_id`, `session_id` match
 *   the whole value exactly (the actor case-insensitively; the IP without a port).
 * - `tenants` (issue 29): tenant short names; one not collected, or hidden from the caller,
 *   matches nothing (an empty result, not an error).
 * Unknown query parameters are ignored; bad values are a 400 naming each field.
 */
import { z } from 'zod';
import { validationProblem } from '../../../src/http/problem.js';
import { CURSOR_DESCRIPTION, limitParam, type PageLimits } from '../../../src/http/schemas.js';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import { normalizeIp } from '../normalize.js';
import type { EventFilters } from '../store/event-query.js';
import { serviceKey } from '../store/service-names.js';
import { TENANT_NAME } from '../tenants/access.js';
import { KEY_KINDS } from '../timeline/keys.js';

export const MAX_FILTER_VALUES = 20;
export const MAX_TEXT_FILTER = 256;
export const MAX_TAG_LENGTH = 64;
/** A pivot's whole value: as long as a stored target (normalize.ts). */
export const MAX_EXACT_FILTER = 1024;

export const tagSchema = z
  .string()
  .trim()
  .min(1, 'a tag must not be empty')
  .max(MAX_TAG_LENGTH, `a tag must be at most ${MAX_TAG_LENGTH} characters`)
  .refine((t) => !CONTROL_CHAR.test(t), 'a tag must not contain control characters')
  .refine((t) => !t.includes(','), 'a tag must not contain a comma');

const serviceSchema = z
  .string()
  .trim()
  .min(1, 'a service must not be empty')
  .max(64, 'a service is at most 64 characters')
  .regex(/^[A-Za-z0-9_. -]+$/, 'a service is letters, digits, spaces, "_", "." or "-"')
  // As an administrator types it: `Exchange`, `device management`, `Intune` (store/service-names.ts).
  .transform(serviceKey);

const tenantSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(TENANT_NAME, 'a tenant is a short name: lower-case letters, digits and "-", up to 32 characters');

const textFilterOf = (max: number) =>
  z
    .string()
    .max(max, `must be at most ${max} characters`)
    .refine((t) => !CONTROL_CHAR.test(t), 'must not contain control characters')
    .transform((t) => (t.trim() === '' ? undefined : t.trim()));
const textFilter = textFilterOf(MAX_TEXT_FILTER);

/** An ISO 8601 date-time with Z or an offset, as epoch milliseconds. */
export const dateTime = z.iso
  .datetime({
    offset: true,
    error: 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z',
  })
  .transform((v) => Date.parse(v));

/** A list of at most `max` given as an array, a repeated parameter, or comma-separated. */
export const listOf = <T extends z.ZodType<unknown, string>>(item: T, max = MAX_FILTER_VALUES) =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((v) =>
      (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).filter((s) => s.trim() !== ''),
    )
    .pipe(z.array(item).max(max, `at most ${max} values`));

const LIST = 'Repeat the parameter, or separate the values with commas.';

/** Issue 29: the pivots' exact-match filters, by name. */
export const PIVOT_FILTERS = ['actor_exact', 'target', 'client_ip', 'correlation_id', 'session_id'] as const;

/** Issue 29: the pivots' exact-match filters (timeline/keys.ts), each a whole value. */
const exact = (description: string) =>
  textFilterOf(MAX_EXACT_FILTER).meta({ description: `${description} (exact).` });
const pivotShape = {
  actor_exact: exact('The actor’s whole name, case-insensitively'),
  target: exact('The whole target'),
  client_ip: exact('The client’s IP address, without a port').transform((v) => normalizeIp(v)),
  correlation_id: exact('The correlation id'),
  session_id: exact('The session id'),
};

export const filterShape = {
  services: listOf(serviceSchema).optional().meta({ description: LIST }),
  tenants: listOf(tenantSchema)
    .optional()
    .meta({ description: `Tenants by short name (\`default\` on a single-tenant hub). ${LIST}` }),
  actor: textFilter.optional(),
  operation: textFilter.optional(),
  result: textFilter.optional(),
  start: dateTime.optional(),
  end: dateTime.optional(),
  include_tags: listOf(tagSchema)
    .optional()
    .meta({ description: `Events carrying every one of these. ${LIST}` }),
  exclude_tags: listOf(tagSchema)
    .optional()
    .meta({ description: `Events carrying none of these. ${LIST}` }),
  actor_exact: pivotShape.actor_exact.optional(),
  target: pivotShape.target.optional(),
  client_ip: pivotShape.client_ip.optional(),
  correlation_id: pivotShape.correlation_id.optional(),
  session_id: pivotShape.session_id.optional(),
};

/** The filters as the API takes them (the query's, or a request body's): what filterShape reads. */
export type FilterInput = { [K in keyof typeof filterShape]?: z.output<(typeof filterShape)[K]> };

/** Field-level checks zod cannot express per field: the window's order. */
export function refineWindow(
  value: FilterInput,
  ctx: z.RefinementCtx,
  prefix: (string | number)[] = [],
): void {
  if (value.start !== undefined && value.end !== undefined && value.end <= value.start) {
    ctx.addIssue({ code: 'custom', path: [...prefix, 'end'], message: 'must be after start' });
  }
}

export function toEventFilters(v: FilterInput): EventFilters {
  const f: EventFilters = {};
  if (v.services?.length) f.services = v.services;
  if (v.tenants?.length) f.tenants = v.tenants;
  if (v.actor !== undefined) f.actor = v.actor;
  if (v.operation !== undefined) f.operation = v.operation;
  if (v.result !== undefined) f.result = v.result;
  if (v.start !== undefined) f.start = v.start;
  if (v.end !== undefined) f.end = v.end;
  if (v.include_tags?.length) f.includeTags = v.include_tags;
  if (v.exclude_tags?.length) f.excludeTags = v.exclude_tags;
  if (v.actor_exact !== undefined) f.actorExact = v.actor_exact;
  const keys = PIVOT_FILTERS.filter((k) => k !== 'actor_exact')
    .filter((k) => v[k] !== undefined)
    .map((k) => [KEY_KINDS[k], v[k]!] as const);
  if (keys.length) f.keys = keys;
  return f;
}

/** Query parameters as zod sees them: single values as strings, repeated ones as arrays. */
export function queryObject(queries: Record<string, string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, values] of Object.entries(queries)) out[k] = values.length === 1 ? values[0]! : values;
  return out;
}

/**
 * Single-valued parameters given twice are a mistake worth naming. (A preprocess, not a union:
 * the API document then shows the parameter as the value it is.)
 */
export const single = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value, ctx) => {
    if (!Array.isArray(value)) return value;
    ctx.addIssue({ code: 'custom', message: 'must be given once', input: value });
    return z.NEVER;
  }, schema);

export const AUDIT_PAGE: PageLimits = { default: 50, max: 500 };

/** The filters as query parameters: the text filters and the window may be given once only. */
export const filterQueryShape = {
  ...filterShape,
  actor: single(textFilter).optional(),
  operation: single(textFilter).optional(),
  result: single(textFilter).optional(),
  start: single(dateTime).optional(),
  end: single(dateTime).optional(),
  actor_exact: single(pivotShape.actor_exact).optional(),
  target: single(pivotShape.target).optional(),
  client_ip: single(pivotShape.client_ip).optional(),
  correlation_id: single(pivotShape.correlation_id).optional(),
  session_id: single(pivotShape.session_id).optional(),
};

export const exportFormat = single(z.enum(['csv', 'json'], { error: 'must be csv or json' }));

export const exportQuerySchema = z
  .object({ ...filterQueryShape, format: exportFormat.default('csv') })
  .superRefine((v, ctx) => refineWindow(v, ctx));

/** A page of events: its size and where it starts (a search's, and a saved search run's). */
export const pagingShape = {
  limit: single(limitParam(AUDIT_PAGE)).optional(),
  cursor: single(z.string().max(200, 'is not a cursor this API issued'))
    .optional()
    .meta({ description: CURSOR_DESCRIPTION }),
};

export const searchQuerySchema = z
  .object({ ...filterQueryShape, ...pagingShape })
  .superRefine((v, ctx) => refineWindow(v, ctx));

export type SearchQuery = z.output<typeof searchQuerySchema>;

export function parseSearchQuery(queries: Record<string, string[]>): SearchQuery {
  const parsed = searchQuerySchema.safeParse(queryObject(queries));
  if (!parsed.success) throw validationProblem(parsed.error);
  return parsed.data;
}
