/**
 * `GET /api/audit-trail` (issue 14 "The trail is readable"): who did what, when, from where, with
 * the request id — for administrators (with AUTH_ENABLED a role in AUDIT_ADMIN_ROLES, default
 * `admin`). Filters `actor`, `action`, `result`, `start`/`end`; newest first with cursor paging
 * as `/api/events`; `GET /api/audit-trail/export?format=csv|json` streams every matching row,
 * taking one of the AUDIT_EXPORT_MAX_CONCURRENT slots the events export uses too.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import type { OperationSpec, ResponseSpec } from '../../../src/http/openapi.js';
import { problem } from '../../../src/http/openapi.js';
import { ProblemError } from '../../../src/http/problem.js';
import { CURSOR_DESCRIPTION, limitParam } from '../../../src/http/schemas.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import type { AuditStore } from '../store/audit-store.js';
import type { TrailRow } from '../store/audit-trail.js';
import { type TrailFilters, TrailQuery } from '../store/trail-query.js';
import type { AuditEnv } from './context.js';
import { atIdCursor, pageEnvelope } from './cursor.js';
import { csvCell, type ExportSlots, exportHeaders, exportResponses, exportStream } from './export.js';
import { AUDIT_PAGE, dateTime, queryObject, single } from './filters.js';
import { searchOperation } from './operation.js';
import { TRAIL_ACTIONS } from './trail.js';

const TRAIL_RESULTS = ['success', 'failure', 'refused'] as const;
const CHUNK_ROWS = 2_000;

const listOf = <T extends z.ZodType<unknown, string>>(item: T) =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((v) =>
      (Array.isArray(v) ? v : [v])
        .flatMap((s) => s.split(','))
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    )
    .pipe(z.array(item).max(20, 'at most 20 values'));

const trailFilterShape = {
  actor: single(
    z
      .string()
      .max(256, 'must be at most 256 characters')
      .refine((t) => !CONTROL_CHAR.test(t), 'must not contain control characters')
      .transform((t) => (t.trim() === '' ? undefined : t.trim())),
  )
    .optional()
    .meta({ description: 'Case-insensitive substring of the user name or the token’s subject.' }),
  action: listOf(z.enum(TRAIL_ACTIONS, { error: `must be one of ${TRAIL_ACTIONS.join(', ')}` }))
    .optional()
    .meta({ description: 'What was done; repeat or comma-separate.' }),
  result: listOf(z.enum(TRAIL_RESULTS, { error: `must be one of ${TRAIL_RESULTS.join(', ')}` }))
    .optional()
    .meta({
      description:
        '`success` (2xx), `failure` (another error), `refused` (401, 403, 429: counted rows); repeat or comma-separate.',
    }),
  start: single(dateTime).optional().meta({ description: 'At or after (ISO 8601).' }),
  end: single(dateTime).optional().meta({ description: 'Before (ISO 8601).' }),
};

const endAfterStart = (v: { start?: number | undefined; end?: number | undefined }, ctx: z.RefinementCtx) => {
  if (v.start !== undefined && v.end !== undefined && v.end <= v.start) {
    ctx.addIssue({ code: 'custom', path: ['end'], message: 'must be after start' });
  }
};

export const trailQuerySchema = z
  .object({
    ...trailFilterShape,
    limit: single(limitParam(AUDIT_PAGE)).default(AUDIT_PAGE.default),
    cursor: single(z.string().max(200, 'is not a cursor this API issued'))
      .optional()
      .meta({ description: CURSOR_DESCRIPTION }),
  })
  .superRefine(endAfterStart);

export const trailExportQuerySchema = z
  .object({
    ...trailFilterShape,
    format: single(z.enum(['csv', 'json'], { error: 'must be csv or json' })).default('csv'),
  })
  .superRefine(endAfterStart);

const trailCursor = atIdCursor('trail');

export const trailEntrySchema = z.object({
  id: z.string(),
  at: z.string().meta({ description: 'When (the first refusal of a counted row).' }),
  last_at: z.string().nullable().meta({ description: 'The last refusal of a counted row; else null.' }),
  count: z.int().meta({ description: 'Requests in this row: 1, or how many refusals were counted.' }),
  actor: z.string().meta({ description: 'The verified user name, `anonymous`, or `*` in an overflow row.' }),
  subject: z.string().nullable(),
  issuer: z.string().nullable(),
  roles: z.array(z.string()),
  action: z.enum(TRAIL_ACTIONS),
  result: z.enum(TRAIL_RESULTS),
  status: z.int(),
  method: z.string(),
  path: z.string(),
  route: z.string().nullable(),
  client_address: z
    .string()
    .nullable()
    .meta({ description: 'The TCP peer as the hub saw it (forwarded headers are not trusted).' }),
  request_id: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable().meta({ description: 'What changed.' }),
});

export const trailPageSchema = z.object({
  data: z.array(trailEntrySchema),
  next_cursor: z.string().nullable(),
  prev_cursor: z.string().nullable(),
  limit: z.int(),
});

/** A 400 naming each query parameter (`action`, not `action.0`) and what is wrong with it. */
function queryProblem(error: z.ZodError): ProblemError {
  const errors = error.issues.map((issue) => ({
    field: issue.path.length ? String(issue.path[0]) : '(query)',
    message: issue.message,
  }));
  const unique = errors.filter(
    (e, i) => errors.findIndex((o) => o.field === e.field && o.message === e.message) === i,
  );
  const fields = [...new Set(unique.map((e) => e.field))].join(', ');
  return new ProblemError(400, `invalid ${fields}`, { errors: unique });
}

/** A row's detail; one written by an older version may be cut mid-JSON: shown as an excerpt. */
function detailOf(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // falls through
  }
  return { truncated: true, excerpt: text };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function toApiTrailEntry(r: TrailRow): z.output<typeof trailEntrySchema> {
  return {
    id: String(r.id),
    at: new Date(r.at).toISOString(),
    last_at: iso(r.last_at),
    count: r.count,
    actor: r.username ?? 'anonymous',
    subject: r.subject,
    issuer: r.issuer,
    roles: JSON.parse(r.roles) as string[],
    action: r.action as z.output<typeof trailEntrySchema>['action'],
    result: r.result,
    status: r.status,
    method: r.method,
    path: r.path,
    route: r.route,
    client_address: r.client_ip,
    request_id: r.request_id,
    detail: detailOf(r.detail),
  };
}

export const TRAIL_CSV_COLUMNS = [
  'id',
  'at',
  'last_at',
  'count',
  'actor',
  'subject',
  'issuer',
  'roles',
  'action',
  'result',
  'status',
  'method',
  'path',
  'client_address',
  'request_id',
  'detail',
] as const;

const CSV_HEADER = `${TRAIL_CSV_COLUMNS.join(',')}\r\n`;

function csvLine(r: TrailRow): string {
  const cells = [
    String(r.id),
    new Date(r.at).toISOString(),
    iso(r.last_at) ?? '',
    String(r.count),
    csvCell(r.username ?? 'anonymous'),
    csvCell(r.subject ?? ''),
    csvCell(r.issuer ?? ''),
    csvCell((JSON.parse(r.roles) as string[]).join('; ')),
    r.action,
    r.result,
    String(r.status),
    r.method,
    csvCell(r.path),
    csvCell(r.client_ip ?? ''),
    csvCell(r.request_id ?? ''),
    csvCell(r.detail ?? ''),
  ];
  return `${cells.join(',')}\r\n`;
}

function filtersOf(q: {
  actor?: string | undefined;
  action?: string[] | undefined;
  result?: TrailFilters['results'] | undefined;
  start?: number | undefined;
  end?: number | undefined;
}): TrailFilters {
  return {
    ...(q.actor !== undefined ? { actor: q.actor } : {}),
    ...(q.action?.length ? { actions: q.action } : {}),
    ...(q.result?.length ? { results: q.result } : {}),
    ...(q.start !== undefined ? { start: q.start } : {}),
    ...(q.end !== undefined ? { end: q.end } : {}),
  };
}

export function trailRoutes(
  deps: { store: AuditStore; slots: ExportSlots; log: KernelLogger },
  app: Hono<AuditEnv>,
): void {
  const query = () => new TrailQuery(deps.store.repos().db);

  app.get('/', (c) => {
    const parsed = trailQuerySchema.safeParse(queryObject(c.req.queries()));
    if (!parsed.success) throw queryProblem(parsed.error);
    const q = parsed.data;
    const cursor = trailCursor.read(q.cursor);
    const page = query().page(filtersOf(q), q.limit, cursor);
    return c.json(pageEnvelope(page, toApiTrailEntry, trailCursor.encode, q.limit));
  });

  app.get('/export', (c) => {
    const parsed = trailExportQuerySchema.safeParse(queryObject(c.req.queries()));
    if (!parsed.success) throw queryProblem(parsed.error);
    const { format } = parsed.data;
    const headers = exportHeaders('audit-trail', format);
    // As the events export: HEAD never takes a slot (nobody would read or cancel its body).
    if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers });
    deps.slots.assertFree();
    const rows = query().chunks(filtersOf(parsed.data), CHUNK_ROWS);
    const release = deps.slots.take();
    const stream = exportStream({
      chunks: rows,
      render: (chunk, first) =>
        format === 'json'
          ? `${first ? '[\n' : ',\n'}${chunk.map((r) => JSON.stringify(toApiTrailEntry(r))).join(',\n')}`
          : `${first ? CSV_HEADER : ''}${chunk.map(csvLine).join('')}`,
      end: (first) => (format === 'json' ? (first ? '[]\n' : '\n]\n') : first ? CSV_HEADER : ''),
      release,
      log: deps.log,
    });
    return new Response(stream, { status: 200, headers });
  });
}

/** `/api/audit-trail` in the plugin's OpenAPI document. */
export function trailOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const admin = {
    ...signedIn,
    403: problem('This needs an administrator role (AUDIT_ADMIN_ROLES, default `admin`).'),
  };
  return [
    searchOperation(admin, {
      path: '/api/audit-trail',
      operationId: 'searchAuditTrail',
      tag: 'operations',
      summary: 'The internal audit trail: who did what, when, from where (administrators)',
      description:
        'Newest first, with cursor paging as /api/events. Requests refused by authorization or a rate limit (401, 403, 429) are counted: one row per hour, client, status, method, route and caller.',
      query: trailQuerySchema,
      page: trailPageSchema,
    }),
    {
      method: 'get',
      path: '/api/audit-trail/export',
      operationId: 'exportAuditTrail',
      tag: 'operations',
      summary: 'Every trail row matching the filters, as CSV or JSON (streamed; administrators)',
      security: 'optional-bearer',
      params: { query: trailExportQuerySchema },
      responses: exportResponses('audit-trail-….csv', trailEntrySchema, admin),
    },
  ];
}
