/**
 * The event as the API shows it (spec "Event": id, timestamp, service, operation, result, actor,
 * tags, comments), plus the raw result value, the target and where it came from.
 */
import { type CommentRow, parseTags } from '../store/annotations.js';
import type { AuditRepositories } from '../store/audit-store.js';
import type { Dictionaries, NormalizedResult } from '../store/dictionaries.js';
import type { EventRow, Page } from '../store/event-query.js';
import { encodeCursor, pageEnvelope } from './cursor.js';

export interface ApiComment {
  id: string;
  author: string;
  text: string;
  created_at: string;
}

export interface ApiEvent {
  id: string;
  timestamp: string;
  service: string;
  operation: string;
  /** success | failure | unknown; `result_raw` keeps what the source said. */
  result: NormalizedResult;
  result_raw: string;
  actor: string;
  target: string;
  tags: string[];
  comments: ApiComment[];
  source: string;
  source_id: string;
  /** The Microsoft 365 tenant, by the operator's short name (`default` on a single-tenant hub). */
  tenant: string;
}

export function toApiComment(c: CommentRow): ApiComment {
  return {
    id: String(c.id),
    author: c.author,
    text: c.text,
    created_at: new Date(c.created_at).toISOString(),
  };
}

export function toApiEvent(
  row: EventRow,
  dictionaries: Dictionaries,
  comments: readonly CommentRow[] = [],
): ApiEvent {
  const result = dictionaries.results.entry(row.result_id);
  return {
    id: String(row.seq),
    timestamp: new Date(row.ts).toISOString(),
    service: row.service,
    operation: dictionaries.operations.nameOf(row.operation_id),
    result: result.normalized,
    result_raw: result.raw,
    actor: dictionaries.actors.nameOf(row.actor_id),
    target: row.target,
    tags: parseTags(row.tags),
    comments: comments.map(toApiComment),
    source: row.source,
    source_id: row.source_key,
    tenant: dictionaries.tenants.nameOf(row.tenant_id),
  };
}

/** Event ids are the store's sequence numbers, as decimal strings. */
export function parseEventId(value: string): number | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** One page of events in the search envelope, each with its comments (read for those that have any). */
export function eventPageJson(repos: AuditRepositories, page: Page, limit: number) {
  const comments = repos.annotations.comments(page.rows.filter((r) => r.comment_count > 0).map((r) => r.seq));
  return pageEnvelope(
    page,
    (r) => toApiEvent(r, repos.dictionaries, comments.get(r.seq)),
    encodeCursor,
    limit,
  );
}
