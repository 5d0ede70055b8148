/**
 * `GET /api/events/export?format=csv|json` with the search filters (spec: CSV and JSON export).
 *
 * Streamed with flat memory: the body is a pull stream that reads the next chunk of rows (one
 * bounded keyset query) only when the socket has taken the previous one, so exporting a million
 * events holds one chunk in memory and never holds the database between chunks. Privacy gating
 * applies as in search. At most AUDIT_EXPORT_MAX_CONCURRENT exports run at once (each keeps a
 * core busy); another is told to retry (429).
 *
 * CSV cells that a spreadsheet would run as a formula (starting with = + - @ tab or CR) get a
 * leading apostrophe: upstream text (an actor, a file name) must not become code on a laptop.
 * Cells are quoted by hand (RFC 4180: quote a cell holding a comma, quote or line break; double
 * its quotes): for this fixed set of columns that is five times faster than csv-stringify, which
 * decides the export's events/s.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OperationSpec,
  problem,
  type ResponseSpec,
} from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import type { KernelLogger } from '../../../src/kernel/actor.js';
import { parseTags } from '../store/annotations.js';
import type { AuditStore } from '../store/audit-store.js';
import type { EventRow } from '../store/event-query.js';
import { type AuditEnv, callerOf } from './context.js';
import { toApiEvent } from './event-json.js';
import { exportQuerySchema, queryObject, toEventFilters } from './filters.js';
import type { PrivacyPolicy } from './privacy.js';
import { eventSchema } from './schemas.js';

const CHUNK_ROWS = 2_000;

export const CSV_COLUMNS = [
  'id',
  'timestamp',
  'service',
  'operation',
  'result',
  'result_raw',
  'actor',
  'target',
  'tags',
  'comment_count',
  'source',
  'source_id',
  // Issue 29: last, so a reader of the earlier columns by position is unaffected.
  'tenant',
] as const;

const FORMULA = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** An export's content type and its file name (`name`-YYYYMMDDTHHMMSSZ.csv or .json). */
export function exportHeaders(name: string, format: 'csv' | 'json'): Record<string, string> {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return {
    'content-type': format === 'json' ? 'application/json; charset=utf-8' : 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${name}-${stamp}.${format}"`,
  };
}

/** One CSV cell of upstream text: formula-neutralised, quoted when needed. */
export function csvCell(value: string): string {
  const v = FORMULA.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
}

const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;

/**
 * The AUDIT_EXPORT_MAX_CONCURRENT slots, shared by every export (events and the audit trail).
 * `take()` answers the slot's release, which gives it back once however often it is called.
 */
export class ExportSlots {
  private active = 0;
  constructor(readonly max: number) {}

  get inUse(): number {
    return this.active;
  }

  /** A 429 (with Retry-After) when every slot is taken. */
  assertFree(): void {
    if (this.active >= this.max) {
      throw new ProblemError(429, 'too many exports are running; try again shortly', {
        headers: { 'retry-after': '5' },
      });
    }
  }

  /** A slot, or the 429 of `assertFree`. */
  take(): () => void {
    this.assertFree();
    this.active++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.active--;
      }
    };
  }
}

/**
 * A pull stream over `chunks` (the next chunk read only when the socket took the previous one)
 * that gives its slot back on every way out: the end, an error midway (the body then errors),
 * and the reader going away (cancel).
 */
export function exportStream<T>(options: {
  chunks: Generator<T, void, undefined>;
  render: (chunk: T, first: boolean) => string;
  /** The closing text: after the last chunk, or for no chunk at all (`first` true). */
  end: (first: boolean) => string;
  release: () => void;
  log: KernelLogger;
}): ReadableStream<Uint8Array> {
  const { chunks, release } = options;
  const encoder = new TextEncoder();
  let first = true;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        try {
          const next = chunks.next();
          if (next.done) {
            const tail = options.end(first);
            if (tail) controller.enqueue(encoder.encode(tail));
            controller.close();
            release();
            return;
          }
          const text = options.render(next.value, first);
          first = false;
          controller.enqueue(encoder.encode(text));
        } catch (err) {
          release();
          chunks.return(undefined);
          options.log.error({ err }, 'export failed midway');
          controller.error(err);
        }
      },
      cancel() {
        chunks.return(undefined);
        release();
      },
    },
    { highWaterMark: 1 },
  );
}

/** The OpenAPI operations of `/api/events/export` (the routes below); `signedIn`: the refusals of the plugin's signed-in routes. */
export function exportOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  return [
    {
      method: 'get',
      path: '/api/events/export',
      operationId: 'exportEvents',
      tag: 'events',
      summary: 'Every event matching the filters, as CSV or JSON (streamed)',
      security: 'optional-bearer',
      params: { query: exportQuerySchema },
      responses: exportResponses('audit-events-….csv', eventSchema, signedIn),
    },
  ];
}

/** The answers of an export streamed here: the attachment (CSV, or JSON rows of `row`), or why not. */
export function exportResponses(
  fileName: string,
  row: z.ZodType,
  refusals: Record<number, ResponseSpec>,
): Record<number, ResponseSpec> {
  return {
    200: {
      description: 'An attachment.',
      headers: { 'Content-Disposition': { description: `\`attachment; filename="${fileName}"\`` } },
      content: { 'text/csv': undefined, 'application/json': z.array(row) },
    },
    400: COMMON_PROBLEMS.badInput,
    ...refusals,
    429: problem('Too many exports are running, or a rate limit is exceeded.', {
      'Retry-After': HEADERS.retryAfter,
    }),
  };
}

export function exportRoutes(
  deps: {
    store: AuditStore;
    privacy: PrivacyPolicy;
    maxConcurrent: number;
    log: KernelLogger;
    /** Shared with the trail's export; its own when not given. */
    slots?: ExportSlots;
  },
  app: Hono<AuditEnv>,
): void {
  const slots = deps.slots ?? new ExportSlots(deps.maxConcurrent);

  app.get('/export', (c) => {
    const parsed = exportQuerySchema.safeParse(queryObject(c.req.queries()));
    if (!parsed.success) throw validationProblem(parsed.error);
    const { format } = parsed.data;
    const filters = toEventFilters(parsed.data);
    const headers = exportHeaders('audit-events', format);
    // HEAD runs this GET route, but nobody reads (or cancels) the body it would get: it must not
    // take an export slot it would never give back.
    if (c.req.method === 'HEAD') return new Response(null, { status: 200, headers });
    slots.assertFree();
    // Everything that may throw before the stream exists happens before the slot is taken.
    const repos = deps.store.repos();
    const rows = repos.query.chunks(filters, deps.privacy.scopeFor(callerOf(c)), CHUNK_ROWS);
    // Every way out gives the slot back once: the end, an error midway, the client going away.
    const release = slots.take();

    const render = (chunk: EventRow[], first: boolean): string => {
      if (format === 'json') {
        const comments = repos.annotations.comments(
          chunk.filter((r) => r.comment_count > 0).map((r) => r.seq),
        );
        const body = chunk
          .map((r) => JSON.stringify(toApiEvent(r, repos.dictionaries, comments.get(r.seq))))
          .join(',\n');
        return `${first ? '[\n' : ',\n'}${body}`;
      }
      const d = repos.dictionaries;
      let out = first ? CSV_HEADER : '';
      for (const r of chunk) {
        const result = d.results.entry(r.result_id);
        out += `${r.seq},${new Date(r.ts).toISOString()},${csvCell(r.service)},${csvCell(d.operations.nameOf(r.operation_id))},${result.normalized},${csvCell(result.raw)},${csvCell(d.actors.nameOf(r.actor_id))},${csvCell(r.target)},${r.tags === '[]' ? '' : csvCell(parseTags(r.tags).join('; '))},${r.comment_count},${r.source},${csvCell(r.source_key)},${d.tenants.nameOf(r.tenant_id)}\r\n`;
      }
      return out;
    };

    const stream = exportStream({
      chunks: rows,
      render,
      end: (first) => (format === 'json' ? (first ? '[]\n' : '\n]\n') : first ? CSV_HEADER : ''),
      release,
      log: deps.log,
    });
    return new Response(stream, { status: 200, headers });
  });
}
