/**
 * The audit plugin's MCP tools (spec "What the service does": tools search_events, get_event,
 * get_summary, ask), contributed to the hub's MCP server (src/mcp/server.ts, through src/mcp/tool-kit.ts).
 *
 * Who is asking: an MCP client over stdio is whoever may run `meshhub mcp` on this machine —
 * the same person who can read the database file — so there is no token; privacy gating applies
 * with the roles named by MCP_ROLES (default none: gated events stay hidden), exactly as for an
 * HTTP caller holding those roles (main.ts). Over HTTP the caller is the bearer token's, as the
 * audit HTTP API sees it (http.ts). Bad arguments are MCP error results, never a crash.
 */
import { z } from 'zod';
import { isoDate, type McpTools, ToolInputError } from '../../../src/mcp/tool-kit.js';
import type { AskService } from '../ask/ask-service.js';
import { summarizeEvents } from '../ask/gather.js';
import type { Caller } from '../http/context.js';
import { toApiEvent } from '../http/event-json.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import type { AuditStore } from '../store/audit-store.js';
import type { EventFilters } from '../store/event-query.js';

/** The tools below, by name (`ask` only with AI_FEATURES_ENABLED). */
export const AUDIT_TOOL_NAMES: ReadonlySet<string> = new Set([
  'search_events',
  'get_event',
  'get_summary',
  'ask',
]);

export interface AuditToolDeps {
  store: AuditStore;
  privacy: PrivacyPolicy;
  /** Present with AI_FEATURES_ENABLED; the `ask` tool is listed only then. */
  ask?: AskService;
  /** Whose privacy view the tools answer with. */
  caller: Caller;
  /** Why a gated event is refused: `MCP_ROLES does not allow it` (stdio), the token's roles (HTTP). */
  restricted: string;
}

const text = z.string().max(256);
const filters = {
  services: z
    .array(z.string().max(64))
    .max(20)
    .optional()
    .describe('Service names, e.g. directory, exchange'),
  tenants: z
    .array(z.string().max(32))
    .max(20)
    .optional()
    .describe('Tenant short names (default on a single-tenant hub)'),
  actor: text.optional().describe('Case-insensitive substring of the actor'),
  operation: text.optional().describe('Case-insensitive substring of the operation'),
  result: text.optional().describe('success, failure or unknown (substring)'),
  start: isoDate.optional(),
  end: isoDate.optional(),
};

/** The filter arguments as a tool gets them: what `filters` reads. */
type FilterArgs = { [K in keyof typeof filters]?: z.output<(typeof filters)[K]> };

function toFilters(a: FilterArgs): EventFilters {
  const f: EventFilters = {};
  if (a.services?.length) f.services = a.services;
  if (a.tenants?.length) f.tenants = a.tenants.map((t) => t.trim().toLowerCase());
  if (a.actor?.trim()) f.actor = a.actor.trim();
  if (a.operation?.trim()) f.operation = a.operation.trim();
  if (a.result?.trim()) f.result = a.result.trim();
  if (a.start) f.start = Date.parse(a.start);
  if (a.end) f.end = Date.parse(a.end);
  if (f.start !== undefined && f.end !== undefined && f.end <= f.start) {
    throw new ToolInputError('end must be after start');
  }
  return f;
}

export function auditTools(deps: AuditToolDeps): McpTools {
  return ({ server, guard }) => {
    const { caller } = deps;
    const scope = () => deps.privacy.scopeFor(caller);

    server.registerTool(
      'search_events',
      {
        description: 'Search audit events, newest first, with filters and paging (privacy-gated).',
        inputSchema: {
          ...filters,
          limit: z.number().int().min(1).max(100).optional().describe('Events per page (default 20)'),
          before_id: z
            .string()
            .regex(/^[1-9][0-9]{0,15}$/)
            .optional()
            .describe('Continue with events older than this id'),
        },
      },
      (args) =>
        guard('search_events', () => {
          const repos = deps.store.repos();
          let cursor: { direction: 'next'; position: { ts: number; seq: number } } | undefined;
          if (args.before_id) {
            const row = repos.annotations.event(Number(args.before_id));
            if (!row) throw new ToolInputError(`no event with id ${args.before_id}`);
            cursor = { direction: 'next', position: { ts: row.ts, seq: row.seq } };
          }
          const page = repos.query.page({
            filters: toFilters(args),
            privacy: scope(),
            limit: args.limit ?? 20,
            ...(cursor ? { cursor } : {}),
          });
          return {
            events: page.rows.map((r) => toApiEvent(r, repos.dictionaries)),
            next_before_id: page.next ? String(page.next.seq) : null,
          };
        }),
    );

    server.registerTool(
      'get_event',
      {
        description: 'One audit event by id, with its comments and raw record (privacy-gated).',
        inputSchema: { id: z.string().regex(/^[1-9][0-9]{0,15}$/, 'must be an event id (a decimal number)') },
      },
      (args) =>
        guard('get_event', () => {
          const repos = deps.store.repos();
          const row = repos.annotations.event(Number(args.id));
          // Issue 29: a hidden tenant's event does not exist for this caller.
          if (!row || !deps.privacy.seesTenant(caller, repos.dictionaries.tenants.nameOf(row.tenant_id))) {
            throw new ToolInputError(`no event with id ${args.id}`);
          }
          const operation = repos.dictionaries.operations.nameOf(row.operation_id);
          if (!deps.privacy.allows(caller, { service: row.service, operation })) {
            throw new ToolInputError(`event ${args.id} is restricted; ${deps.restricted}`);
          }
          const comments = row.comment_count ? repos.annotations.comments([row.seq]).get(row.seq) : [];
          const raw = repos.annotations.raw(row.seq);
          return { ...toApiEvent(row, repos.dictionaries, comments), raw: raw ? JSON.parse(raw) : null };
        }),
    );

    server.registerTool(
      'get_summary',
      {
        description: 'Counts of matching audit events by service, operation, result and actor (top 10 each).',
        inputSchema: filters,
      },
      (args) =>
        guard('get_summary', () => {
          const g = summarizeEvents(deps.store.repos(), toFilters(args), scope(), []);
          const top = (list: Array<[string, number]>) => Object.fromEntries(list.slice(0, 10));
          return {
            total: g.total,
            total_capped: g.totalCapped,
            // The counts cover every match up to 10,000, else the newest 10,000 (since `since`).
            counts_cover: {
              events: g.countsCover.events,
              all_matched: g.countsCover.allMatched,
              since: g.countsCover.since === undefined ? null : new Date(g.countsCover.since).toISOString(),
            },
            by_service: top(g.counts.service),
            by_operation: top(g.counts.operation),
            by_result: top(g.counts.result),
            by_actor: top(g.counts.actor),
          };
        }),
    );

    if (deps.ask) {
      const ask = deps.ask;
      server.registerTool(
        'ask',
        {
          description:
            'A plain-language question about the audit events (e.g. "failed admin changes since Monday"), answered from a sample with counts.',
          inputSchema: { question: z.string().min(1).max(2_000), ...filters },
        },
        (args) =>
          guard('ask', () => {
            const { question, start, end, ...rest } = args;
            return ask.ask(
              {
                question,
                filters: {
                  ...rest,
                  ...(start ? { start: Date.parse(start) } : {}),
                  ...(end ? { end: Date.parse(end) } : {}),
                },
              },
              caller,
            );
          }),
      );
    }
  };
}
