/**
 * `/api/events` (spec "Endpoints"): search with cursor paging, one event, its tags, its comments,
 * and bulk tagging. Export lives in export.ts.
 *
 * Search envelope (the spec leaves it open): `{ "data": [events], "next_cursor": string|null,
 * "prev_cursor": string|null, "limit": n }`, newest first. `next_cursor` leads to older events,
 * `prev_cursor` back to newer ones; each is null when there is nothing more that way.
 */
import type { Hono, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { BODY_PROBLEMS, type OperationSpec, problem, type ResponseSpec } from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import { MAX_TAGS_PER_EVENT, TooManyTagsError } from '../store/annotations.js';
import type { AuditStore } from '../store/audit-store.js';
import type { EventRow } from '../store/event-query.js';
import { eventKeys } from '../timeline/keys.js';
import { type AuditContext, type AuditEnv, callerOf, fieldProblem, jsonBody } from './context.js';
import { readEventsCursor } from './cursor.js';
import { eventPageJson, parseEventId, toApiComment, toApiEvent } from './event-json.js';
import {
  AUDIT_PAGE,
  parseSearchQuery,
  type SearchQuery,
  searchQuerySchema,
  toEventFilters,
} from './filters.js';
import { checkedOperation, searchOperation } from './operation.js';
import type { PrivacyPolicy } from './privacy.js';
import {
  BULK_TAG_CAP,
  bulkTagsBodySchema,
  bulkTagsResultSchema,
  commentBodySchema,
  commentSchema,
  eventDetailSchema,
  eventIdPathSchema,
  eventPageSchema,
  eventSchema,
  tagsBodySchema,
} from './schemas.js';
import { trailOf } from './trail.js';

const MAX_BODY_BYTES = 64 * 1024;

/** 413 for a body over `maxBytes`, before it is read. */
export function bodyTooLarge(maxBytes = MAX_BODY_BYTES) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ProblemError(413, `the request body must be at most ${Math.round(maxBytes / 1024)} KiB`);
    },
  });
}

/** The OpenAPI operations of `/api/events`: search, one event, bulk tags, tags, comments (the routes below); `signedIn`: the refusals of the plugin's signed-in routes. */
export function eventsOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const restricted = problem(
    'The event is privacy-gated and the caller’s roles do not allow it, or the caller has no reader role (`access`: `read`).',
  );
  /** A change: an admin role (AUDIT_ADMIN_ROLES), and the event visible to the caller. */
  const changeRefused = problem(
    'The caller has no admin role (AUDIT_ADMIN_ROLES, default `admin`; `access`: `admin`), no reader role, or the event is privacy-gated.',
  );
  const noEvent = problem('No event with this id.');
  /** The refusals of a change: those of the signed-in routes, the admin role's, a JSON body's. */
  const changing = { ...signedIn, 403: changeRefused, ...BODY_PROBLEMS };
  return [
    searchOperation(signedIn, {
      path: '/api/events',
      operationId: 'searchEvents',
      tag: 'events',
      summary: 'Search events, newest first, with cursor paging both ways',
      description:
        '`services`, `include_tags` and `exclude_tags` may repeat or be comma-separated; `actor`, `operation` and `result` are case-insensitive literal substrings. Privacy-gated events are left out for callers without the role.',
      query: searchQuerySchema,
      page: eventPageSchema,
    }),
    checkedOperation(changing, {
      method: 'post',
      path: '/api/events/bulk-tags',
      operationId: 'bulkTagEvents',
      tag: 'events',
      summary: 'Tag every event matching the filters (append or replace), at most 10,000',
      body: { schema: bulkTagsBodySchema },
      responses: {
        200: { description: 'What changed.', body: bulkTagsResultSchema },
        422: problem('No event matches, or an event would carry too many tags; nothing was tagged.'),
      },
    }),
    checkedOperation(signedIn, {
      method: 'get',
      path: '/api/events/{id}',
      operationId: 'getEvent',
      tag: 'events',
      summary: 'One event, with its comments and the record as the source sent it',
      params: { path: eventIdPathSchema },
      responses: {
        200: { description: 'The event.', body: eventDetailSchema },
        403: restricted,
        404: noEvent,
      },
    }),
    checkedOperation(changing, {
      method: 'patch',
      path: '/api/events/{id}/tags',
      operationId: 'setEventTags',
      tag: 'events',
      summary: 'Set the tags of one event',
      params: { path: eventIdPathSchema },
      body: { schema: tagsBodySchema },
      responses: { 200: { description: 'The event afterwards.', body: eventSchema }, 404: noEvent },
    }),
    checkedOperation(changing, {
      method: 'post',
      path: '/api/events/{id}/comments',
      operationId: 'addEventComment',
      tag: 'events',
      summary: 'Add a comment to one event',
      params: { path: eventIdPathSchema },
      body: { schema: commentBodySchema },
      responses: {
        201: {
          description: 'The comment.',
          body: commentSchema,
          headers: { Location: { description: 'The event: `/api/events/{id}`.' } },
        },
        404: noEvent,
      },
    }),
  ];
}

/**
 * One page of a search as the caller may see it (privacy applied), in the search envelope: the
 * answer of `GET /api/events`, and of a saved search run (saved/routes.ts).
 */
export function searchPage(
  c: AuditContext,
  deps: { store: AuditStore; privacy: PrivacyPolicy },
  q: SearchQuery,
): Response {
  const cursor = q.cursor === undefined ? undefined : readEventsCursor(q.cursor);
  const limit = q.limit ?? AUDIT_PAGE.default;
  const repos = deps.store.repos();
  const page = repos.query.page({
    filters: toEventFilters(q),
    privacy: deps.privacy.scopeFor(callerOf(c)),
    limit,
    ...(cursor ? { cursor } : {}),
  });
  return c.json(eventPageJson(repos, page, limit));
}

export function eventsRoutes(
  deps: {
    store: AuditStore;
    privacy: PrivacyPolicy;
    /** The admin role check (issue 23): tags, comments and bulk tags change the audit data. */
    admins: MiddlewareHandler<AuditEnv>;
  },
  app: Hono<AuditEnv>,
): void {
  const { store, privacy, admins } = deps;

  /** The event, if it exists and the caller may see it; 404 / 403 otherwise. */
  const visibleEvent = (c: AuditContext, id: string): EventRow => {
    const seq = parseEventId(id);
    if (seq === undefined) throw fieldProblem('id', 'is not an event id');
    const repos = store.repos();
    const row = repos.annotations.event(seq);
    // Issue 29: a tenant the caller may not see holds no events for them.
    if (!row || !privacy.seesTenant(callerOf(c), repos.dictionaries.tenants.nameOf(row.tenant_id))) {
      throw new ProblemError(404, `no event with id ${seq}`);
    }
    const operation = repos.dictionaries.operations.nameOf(row.operation_id);
    if (!privacy.allows(callerOf(c), { service: row.service, operation })) {
      throw new ProblemError(403, 'this event is restricted; your role does not allow you to see it');
    }
    return row;
  };

  app.get('/', (c) => searchPage(c, { store, privacy }, parseSearchQuery(c.req.queries())));

  app.post('/bulk-tags', admins, bodyTooLarge(), async (c) => {
    const parsed = bulkTagsBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const { tags, mode } = parsed.data;
    const filters = toEventFilters(parsed.data.filters);
    if (!Object.keys(filters).length) {
      throw fieldProblem('filters', 'give at least one filter; tagging every event at once is refused');
    }
    const repos = store.repos();
    const rows: EventRow[] = [];
    for (const chunk of repos.query.chunks(filters, privacy.scopeFor(callerOf(c)), 2_000)) {
      rows.push(...chunk);
      if (rows.length > BULK_TAG_CAP) break;
    }
    if (!rows.length) throw new ProblemError(422, 'no event matches these filters; nothing was tagged');
    const truncated = rows.length > BULK_TAG_CAP;
    const targets = truncated ? rows.slice(0, BULK_TAG_CAP) : rows;
    const detail = (updated: number) => ({
      mode,
      tags: [...new Set(tags)],
      matched: targets.length,
      updated,
      unchanged: targets.length - updated,
      truncated,
      limit: BULK_TAG_CAP,
    });
    let updated: number;
    try {
      // The trail row is written in the tagging's transaction: no change without its record.
      ({ updated } = trailOf(c).within(
        200,
        () => repos.annotations.bulkTag(targets, tags, mode),
        (r) => ({ action: 'bulk-tags', filters: parsed.data.filters, ...detail(r.updated) }),
      ));
    } catch (error) {
      if (error instanceof TooManyTagsError) {
        throw new ProblemError(422, 'nothing was tagged', {
          errors: [
            { field: 'tags', message: `event ${error.seq} would carry more than ${MAX_TAGS_PER_EVENT} tags` },
          ],
        });
      }
      throw error;
    }
    return c.json(detail(updated));
  });

  app.get('/:id', (c) => {
    const row = visibleEvent(c, c.req.param('id'));
    const repos = store.repos();
    const comments = row.comment_count ? repos.annotations.comments([row.seq]).get(row.seq) : [];
    const raw = repos.annotations.raw(row.seq);
    return c.json({
      ...toApiEvent(row, repos.dictionaries, comments),
      raw: raw ? JSON.parse(raw) : null,
      pivots: eventKeys(repos.db, row.seq),
    });
  });

  app.patch('/:id/tags', admins, bodyTooLarge(), async (c) => {
    const row = visibleEvent(c, c.req.param('id'));
    const parsed = tagsBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const repos = store.repos();
    const updated = trailOf(c).within(
      200,
      () => repos.annotations.setTags(row.seq, parsed.data.tags),
      (u) =>
        u && {
          action: 'set-tags',
          event: String(row.seq),
          before: JSON.parse(row.tags),
          after: JSON.parse(u.tags),
        },
    );
    if (!updated) throw new ProblemError(404, `no event with id ${row.seq}`);
    const comments = updated.comment_count ? repos.annotations.comments([row.seq]).get(row.seq) : [];
    return c.json(toApiEvent(updated, repos.dictionaries, comments));
  });

  app.post('/:id/comments', admins, bodyTooLarge(), async (c) => {
    const row = visibleEvent(c, c.req.param('id'));
    const parsed = commentBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const caller = callerOf(c);
    const comment = trailOf(c).within(
      201,
      () =>
        store.repos().annotations.addComment(row.seq, {
          author: caller.username,
          ...(caller.subject ? { subject: caller.subject } : {}),
          text: parsed.data.text,
          at: Date.now(),
        }),
      (added) => added && { action: 'add-comment', event: String(row.seq), comment: String(added.id) },
    );
    if (!comment) throw new ProblemError(404, `no event with id ${row.seq}`);
    return c.json(toApiComment(comment), 201, { location: `/api/events/${row.seq}` });
  });
}
