/**
 * `/api/saved-searches` (issue 29 "Saved searches"), for every audit reader (AUDIT_READER_ROLES
 * or AUDIT_ADMIN_ROLES): a saved search is a reader's own, so keeping one needs no admin role.
 * Who sees and changes which is access.ts. A saved search the caller may not see answers 404,
 * never 403: its existence is not revealed. Every write and its trail row (before and after)
 * are one transaction (`trailOf(c).within`).
 *
 * `GET /api/saved-searches/{id}/events` runs it: the saved filters, a relative range (`last`)
 * counted back from now, through the search's own path (events-routes.ts `searchPage`) — the
 * same envelope, cursors and privacy rules as `GET /api/events` for this caller.
 */
import type { Hono } from 'hono';
import { z } from 'zod';
import type { OperationSpec, ResponseSpec } from '../../../src/http/openapi.js';
import { BODY_PROBLEMS, COMMON_PROBLEMS, problem } from '../../../src/http/openapi.js';
import { ProblemError, validationProblem } from '../../../src/http/problem.js';
import { AlertRepository } from '../alerts/alert-repository.js';
import { idPath, ruleProblem } from '../alerts/routes.js';
import { rolesFor } from '../http/auth.js';
import { type AuditContext, type AuditEnv, callerOf, fieldProblem, jsonBody } from '../http/context.js';
import { bodyTooLarge, searchPage } from '../http/events-routes.js';
import { pagingShape, queryObject, searchQuerySchema } from '../http/filters.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import { eventPageSchema } from '../http/schemas.js';
import { trailOf } from '../http/trail.js';
import type { AuthSettings } from '../settings.js';
import type { AuditStore } from '../store/audit-store.js';
import { isAuditAdmin, mayChange, maySee, ownerOf } from './access.js';
import { SavedNameTakenError, type SavedSearchRepository, type SavedSearchRow } from './repository.js';
import { filtersToRun } from './run.js';
import {
  MAX_SAVED_PER_OWNER,
  savedSearchBodySchema,
  savedSearchListSchema,
  savedSearchSchema,
} from './schemas.js';

export interface SavedSearchDeps {
  store: AuditStore;
  privacy: PrivacyPolicy;
  auth: AuthSettings;
  saved: () => SavedSearchRepository;
  /** Counts a run (`meshhub_audit_saved_search_runs_total`). */
  onRun?: () => void;
}

/** A saved search run takes the page size and the cursor; its filters are saved. */
export const runQuerySchema = z.object(pagingShape);

const iso = (ms: number) => new Date(ms).toISOString();

export function toApiSavedSearch(row: SavedSearchRow, deps: { auth: AuthSettings }, c: AuditContext) {
  const caller = callerOf(c);
  return {
    id: String(row.id),
    name: row.name,
    owner: row.owner_name,
    mine: row.owner === ownerOf(caller),
    can_change: mayChange(row, caller, deps.auth),
    shared_with: row.shared_role,
    filters: JSON.parse(row.filters) as Record<string, unknown>,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

const parseId = (value: string): number => {
  if (!/^[1-9][0-9]{0,15}$/.test(value)) throw fieldProblem('id', 'is not a saved search id');
  return Number(value);
};

const notFound = (id: number) => new ProblemError(404, `no saved search with id ${id}`);

/** The saved search if the caller may see it; 404 otherwise (whether or not it exists). */
export function visibleSaved(deps: SavedSearchDeps, c: AuditContext, id: number): SavedSearchRow {
  const row = deps.saved().get(id);
  if (!row || !maySee(row, callerOf(c), deps.auth)) throw notFound(id);
  return row;
}

export function savedSearchOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  const noSearch = problem('No saved search with this id that the caller may see.');
  const body = {
    schema: savedSearchBodySchema,
    description:
      'Strict: an unknown field is a 400 naming it (`filters.actr`). `filters` are the search’s parameters; the time range is `start`/`end` (absolute) or `last` (relative, e.g. `24h`).',
  };
  const clash = problem(
    'The owner has a saved search of this name (case-insensitive); `errors` names `name`.',
  );
  const notYours = problem(
    'The caller may see it but not change it: only its owner, or an audit administrator for a shared one.',
  );
  const one = { path: idPath };
  // Every operation: the tag, the optional bearer, the refusals of a signed-in route.
  const op = (
    method: OperationSpec['method'],
    path: string,
    operationId: string,
    summary: string,
    responses: OperationSpec['responses'],
    more: Partial<OperationSpec> = {},
  ): OperationSpec => ({
    method,
    path: `/api/saved-searches${path}`,
    operationId,
    tag: 'saved searches',
    summary,
    security: 'optional-bearer',
    ...more,
    // The route's own 403 (not yours) over the signed-in one.
    responses: { ...signedIn, ...responses },
  });
  const bad = { 400: COMMON_PROBLEMS.badInput };
  const saved = (description: string) => ({ description, body: savedSearchSchema });
  return [
    op(
      'get',
      '',
      'listSavedSearches',
      'The caller’s saved searches and those shared with its roles, by name',
      {
        200: { description: 'The saved searches.', body: savedSearchListSchema },
      },
    ),
    op(
      'post',
      '',
      'createSavedSearch',
      'Save a search under a name, private or shared with a role',
      {
        201: {
          ...saved('The saved search.'),
          headers: { Location: { description: '`/api/saved-searches/{id}`.' } },
        },
        ...bad,
        409: clash,
        ...BODY_PROBLEMS,
        422: problem(`The caller keeps ${MAX_SAVED_PER_OWNER} saved searches already.`),
      },
      { body },
    ),
    op(
      'get',
      '/{id}',
      'getSavedSearch',
      'One saved search',
      { 200: saved('The saved search.'), ...bad, 404: noSearch },
      {
        params: one,
      },
    ),
    op(
      'put',
      '/{id}',
      'replaceSavedSearch',
      'Replace a saved search (alert rules built on it match its new filters)',
      {
        200: saved('The saved search afterwards.'),
        ...bad,
        403: notYours,
        404: noSearch,
        409: clash,
        ...BODY_PROBLEMS,
      },
      { params: one, body },
    ),
    op(
      'delete',
      '/{id}',
      'deleteSavedSearch',
      'Delete a saved search',
      {
        204: { description: 'Deleted.' },
        ...bad,
        403: notYours,
        404: noSearch,
        409: problem('An alert rule uses it as its condition; the detail names the rule.'),
      },
      { params: one },
    ),
    op(
      'get',
      '/{id}/events',
      'runSavedSearch',
      'Run a saved search: its events, newest first, as `GET /api/events` answers',
      { 200: { description: 'One page.', body: eventPageSchema }, ...bad, 404: noSearch },
      {
        description:
          'A relative range (`last`) counts back from now. Privacy-gated events are left out for callers without the role.',
        params: { ...one, query: runQuerySchema },
      },
    ),
  ];
}

export function savedSearchRoutes(deps: SavedSearchDeps, app: Hono<AuditEnv>): void {
  const shareRoles = () => [...rolesFor(deps.auth, 'read')];

  const parseBody = async (c: AuditContext) => {
    const raw = await jsonBody(c);
    const parsed = savedSearchBodySchema.safeParse(raw);
    if (!parsed.success) throw ruleProblem(parsed.error);
    const role = parsed.data.shared_with;
    if (role !== null && !shareRoles().includes(role)) {
      throw fieldProblem(
        'shared_with',
        `must be an audit role (${shareRoles().join(', ')}: AUDIT_READER_ROLES or AUDIT_ADMIN_ROLES), or null for private`,
      );
    }
    // Kept as given (the search's parameters), less what says "no filter" (an empty box).
    const given = (raw as { filters: Record<string, unknown> }).filters;
    const filters = Object.fromEntries(
      Object.entries(given).filter(
        ([k]) => (parsed.data.filters as Record<string, unknown>)[k] !== undefined,
      ),
    );
    return { ...parsed.data, filters };
  };
  const nameTaken = (name: string) =>
    new ProblemError(409, 'you have a saved search with this name', {
      errors: [{ field: 'name', message: `you have a saved search called "${name}" (case-insensitive)` }],
    });

  app.get('/', (c) => {
    const caller = callerOf(c);
    // The same rule as maySee, in SQL.
    const rows = deps.saved().visible(ownerOf(caller), caller.roles, isAuditAdmin(caller, deps.auth));
    return c.json({ data: rows.map((r) => toApiSavedSearch(r, deps, c)), share_roles: shareRoles() });
  });

  app.post('/', bodyTooLarge(), async (c) => {
    const body = await parseBody(c);
    const caller = callerOf(c);
    const repo = deps.saved();
    if (repo.countOwned(ownerOf(caller)) >= MAX_SAVED_PER_OWNER) {
      throw new ProblemError(422, `you keep ${MAX_SAVED_PER_OWNER} saved searches already; delete one first`);
    }
    try {
      const created = trailOf(c).within(
        201,
        () =>
          toApiSavedSearch(
            repo.create(
              {
                name: body.name,
                owner: ownerOf(caller),
                ownerName: caller.username,
                sharedRole: body.shared_with,
                filters: body.filters,
              },
              Date.now(),
            ),
            deps,
            c,
          ),
        (saved) => ({ action: 'create-saved-search', saved_search: saved.id, after: saved }),
      );
      return c.json(created, 201, { location: `/api/saved-searches/${created.id}` });
    } catch (error) {
      if (error instanceof SavedNameTakenError) throw nameTaken(body.name);
      throw error;
    }
  });

  app.get('/:id', (c) =>
    c.json(toApiSavedSearch(visibleSaved(deps, c, parseId(c.req.param('id'))), deps, c)),
  );

  app.get('/:id/events', (c) => {
    const row = visibleSaved(deps, c, parseId(c.req.param('id')));
    const { limit, cursor } = queryObject(c.req.queries());
    const paging = { ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) };
    const run = runQuerySchema.safeParse(paging);
    if (!run.success) throw validationProblem(run.error);
    // The page size and cursor as the search takes them (query strings), with the saved filters.
    const q = searchQuerySchema.safeParse({
      ...filtersToRun(JSON.parse(row.filters), Date.now()),
      ...paging,
    });
    if (!q.success) throw validationProblem(q.error);
    deps.onRun?.();
    return searchPage(c, deps, q.data);
  });

  app.put('/:id', bodyTooLarge(), async (c) => {
    const id = parseId(c.req.param('id'));
    const before = changeable(deps, c, id);
    const body = await parseBody(c);
    try {
      const after = trailOf(c).within(
        200,
        () =>
          deps
            .saved()
            .update(id, { name: body.name, sharedRole: body.shared_with, filters: body.filters }, Date.now()),
        (updated) =>
          updated && {
            action: 'update-saved-search',
            saved_search: String(id),
            before: toApiSavedSearch(before, deps, c),
            after: toApiSavedSearch(updated, deps, c),
          },
      );
      if (!after) throw notFound(id);
      return c.json(toApiSavedSearch(after, deps, c));
    } catch (error) {
      if (error instanceof SavedNameTakenError) throw nameTaken(body.name);
      throw error;
    }
  });

  app.delete('/:id', (c) => {
    const id = parseId(c.req.param('id'));
    changeable(deps, c, id);
    const users = AlertRepository.on(deps.store.repos().db)
      .rules()
      .filter((r) => r.condition.saved_search === id);
    if (users.length) {
      throw new ProblemError(
        409,
        `saved search ${id} is the condition of alert rule ${users.map((r) => `${r.id} "${r.name}"`).join(', ')}: change or delete the rule first`,
        { rules: users.map((r) => String(r.id)) },
      );
    }
    const gone = trailOf(c).within(
      204,
      () => deps.saved().delete(id),
      (row) =>
        row && {
          action: 'delete-saved-search',
          saved_search: String(id),
          before: toApiSavedSearch(row, deps, c),
        },
    );
    if (!gone) throw notFound(id);
    return c.body(null, 204);
  });
}

/** The saved search if the caller may change it: 404 when it may not see it, 403 when it only sees it. */
function changeable(deps: SavedSearchDeps, c: AuditContext, id: number): SavedSearchRow {
  const row = visibleSaved(deps, c, id);
  if (!mayChange(row, callerOf(c), deps.auth)) {
    throw new ProblemError(
      403,
      'only its owner, or an audit administrator for a shared one, may change or delete this saved search',
    );
  }
  return row;
}
