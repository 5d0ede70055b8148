/**
 * `/api/rules` (spec "Endpoints": alert rule CRUD) and `/api/alerts`, for administrators: with
 * AUTH_ENABLED a role in AUDIT_ADMIN_ROLES (default `admin`). Each rule write and its trail row
 * (the rule before and after) are one transaction (`trailOf(c).within`): no change without it.
 *
 * Every bad body is a 400 naming each field (an unknown field by its full path, such as
 * `condition.actor.regex`), and changes nothing; a name another rule has is a 409.
 */
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { BODY_PROBLEMS, type OperationSpec, problem, type ResponseSpec } from '../../../src/http/openapi.js';
import { ProblemError } from '../../../src/http/problem.js';
import { type AuditContext, type AuditEnv, callerOf, fieldProblem, jsonBody } from '../http/context.js';
import { atIdCursor, pageEnvelope } from '../http/cursor.js';
import { bodyTooLarge } from '../http/events-routes.js';
import { queryObject } from '../http/filters.js';
import { checkedOperation, searchOperation, signedInOperation } from '../http/operation.js';
import { PrivacyPolicy } from '../http/privacy.js';
import { trailOf } from '../http/trail.js';
import { maySee } from '../saved/access.js';
import { SavedSearchRepository } from '../saved/repository.js';
import type { AuditConfig, AuthSettings } from '../settings.js';
import { type AlertRepository, RuleNameTakenError } from './alert-repository.js';
import { toApiAlert, toApiRule } from './api-json.js';
import { conditionJson, MAX_RULES, ruleBodySchema } from './condition.js';
import { alertsQuerySchema } from './query.js';
import {
  type ApiSigmaReport,
  alertPageSchema,
  alertSchema,
  ruleListSchema,
  ruleSchema,
  sigmaReportSchema,
} from './schemas.js';

/** A 400 listing every invalid field; unknown fields are named one by one, by their full path. */
export function ruleProblem(error: z.ZodError, prefix = ''): ProblemError {
  const errors = error.issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        field: prefix + (path ? `${path}.${key}` : key),
        message: 'is not a known field',
      }));
    }
    return [{ field: prefix + (path || '(body)'), message: issue.message }];
  });
  const fields = [...new Set(errors.map((e) => e.field))].join(', ');
  return new ProblemError(400, `invalid ${fields}`, { errors });
}

const parseId = (value: string): number => {
  if (!/^[1-9][0-9]{0,15}$/.test(value)) throw fieldProblem('id', 'is not a rule id');
  return Number(value);
};

export const idPath = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/)
    .meta({ description: 'A decimal id.' }),
});

/** The OpenAPI operations of `/api/rules` and `/api/alerts` (the routes below); `signedIn`: the refusals of the audit plugin's signed-in routes. */
export function alertOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  // Rules are read with a reader role (`signedIn` says so) and written with an admin role.
  const reader = signedIn;
  const admin = {
    ...signedIn,
    403: problem(
      'This needs an administrator role (AUDIT_ADMIN_ROLES, default `admin`); `access` (`admin`) and `roles` say which.',
    ),
  };
  const noRule = problem('No rule with this id.');
  const clash = problem(
    'Another rule has this name (names are unique, case-insensitive); `errors` names `name`.',
  );
  const ruleBody = {
    schema: ruleBodySchema,
    description:
      'Every object is strict: an unknown field is a 400 naming it (`condition.actor.regex`). Text matches are literal and case-insensitive; there are no patterns.',
  };
  return [
    signedInOperation(reader, {
      method: 'get',
      path: '/api/rules',
      operationId: 'listRules',
      tag: 'alerts',
      summary: 'Every alert rule',
      responses: { 200: { description: 'The rules, oldest first.', body: ruleListSchema } },
    }),
    checkedOperation(admin, {
      method: 'post',
      path: '/api/rules',
      operationId: 'createRule',
      tag: 'alerts',
      summary: 'Create an alert rule (it applies to the next stored event)',
      body: ruleBody,
      responses: {
        201: {
          description: 'The rule.',
          body: ruleSchema,
          headers: { Location: { description: '`/api/rules/{id}`.' } },
        },
        409: clash,
        ...BODY_PROBLEMS,
        422: problem('There are 500 rules already.'),
      },
    }),
    signedInOperation(reader, {
      method: 'get',
      path: '/api/rules/sigma',
      operationId: 'sigmaRules',
      tag: 'alerts',
      summary: 'The Sigma rules read from SIGMA_RULES_DIR at start-up, and those refused with the reason',
      responses: { 200: { description: 'Loaded and refused rules.', body: sigmaReportSchema } },
    }),
    checkedOperation(reader, {
      method: 'get',
      path: '/api/rules/{id}',
      operationId: 'getRule',
      tag: 'alerts',
      summary: 'One alert rule',
      params: { path: idPath },
      responses: { 200: { description: 'The rule.', body: ruleSchema }, 404: noRule },
    }),
    checkedOperation(admin, {
      method: 'put',
      path: '/api/rules/{id}',
      operationId: 'replaceRule',
      tag: 'alerts',
      summary: 'Replace an alert rule (a changed condition starts its threshold counts afresh)',
      params: { path: idPath },
      body: ruleBody,
      responses: {
        200: { description: 'The rule afterwards.', body: ruleSchema },
        404: noRule,
        409: problem('Another rule has this name, or the rule comes from a Sigma file (read-only).'),
        ...BODY_PROBLEMS,
      },
    }),
    checkedOperation(admin, {
      method: 'delete',
      path: '/api/rules/{id}',
      operationId: 'deleteRule',
      tag: 'alerts',
      summary: 'Delete an alert rule (its alerts stay)',
      params: { path: idPath },
      responses: {
        204: { description: 'Deleted.' },
        404: noRule,
        409: problem('The rule comes from a Sigma file (read-only): change the file and restart.'),
      },
    }),
    searchOperation(admin, {
      path: '/api/alerts',
      operationId: 'searchAlerts',
      tag: 'alerts',
      summary: 'Alerts, newest first, with cursor paging both ways',
      query: alertsQuerySchema,
      page: alertPageSchema,
    }),
    checkedOperation(admin, {
      method: 'get',
      path: '/api/alerts/{id}',
      operationId: 'getAlert',
      tag: 'alerts',
      summary: 'One alert',
      params: { path: idPath },
      responses: {
        200: { description: 'The alert.', body: alertSchema },
        404: problem('No alert with this id.'),
      },
    }),
  ];
}

export function rulesRoutes(
  deps: { alerts: () => AlertRepository; sigma?: ApiSigmaReport; config: { auth: AuthSettings } },
  app: Hono<AuditEnv>,
): void {
  const parseBody = async (c: AuditContext) => {
    const parsed = ruleBodySchema.safeParse(await jsonBody(c));
    if (!parsed.success) throw ruleProblem(parsed.error);
    // Issue 29: a saved search as the condition, one its author may see (else as if it did not exist).
    const id = parsed.data.condition.saved_search;
    if (id !== undefined) {
      const saved = SavedSearchRepository.on(deps.alerts().db).get(id);
      if (!saved || !maySee(saved, callerOf(c), deps.config.auth)) {
        throw fieldProblem('condition.saved_search', `no saved search with id ${id} that you can see`);
      }
    }
    return parsed.data;
  };
  const nameTaken = (name: string) =>
    new ProblemError(409, 'a rule with this name exists', {
      errors: [
        { field: 'name', message: `another rule is called "${name}" (names are unique, case-insensitive)` },
      ],
    });

  app.get('/', (c) => c.json({ data: deps.alerts().rules().map(toApiRule) }));

  app.post('/', bodyTooLarge(), async (c) => {
    const body = await parseBody(c);
    const store = deps.alerts();
    if (store.ruleCount() >= MAX_RULES) {
      throw new ProblemError(422, `there are ${MAX_RULES} rules already; delete one first`);
    }
    try {
      const rule = trailOf(c).within(
        201,
        () =>
          toApiRule(store.createRule(body, conditionJson(body.condition), callerOf(c).username, Date.now())),
        (created) => ({ action: 'create-rule', rule: created.id, after: created }),
      );
      return c.json(rule, 201, { location: `/api/rules/${rule.id}` });
    } catch (error) {
      if (error instanceof RuleNameTakenError) throw nameTaken(body.name);
      throw error;
    }
  });

  app.get('/sigma', (c) => c.json(deps.sigma ?? { configured: false, loaded: [], refused: [] }));

  app.get('/:id', (c) => {
    const id = parseId(c.req.param('id'));
    const rule = deps.alerts().rule(id);
    if (!rule) throw new ProblemError(404, `no rule with id ${id}`);
    return c.json(toApiRule(rule));
  });

  app.put('/:id', bodyTooLarge(), async (c) => {
    const id = parseId(c.req.param('id'));
    const body = await parseBody(c);
    const store = deps.alerts();
    refuseFileRule(store, id);
    const before = store.rule(id);
    if (!before) throw new ProblemError(404, `no rule with id ${id}`);
    try {
      const after = trailOf(c).within(
        200,
        () => store.updateRule(id, body, conditionJson(body.condition), callerOf(c).username, Date.now()),
        (updated) =>
          updated && {
            action: 'update-rule',
            rule: String(id),
            before: toApiRule(before),
            after: toApiRule(updated),
          },
      );
      if (!after) throw new ProblemError(404, `no rule with id ${id}`);
      return c.json(toApiRule(after));
    } catch (error) {
      if (error instanceof RuleNameTakenError) throw nameTaken(body.name);
      throw error;
    }
  });

  app.delete('/:id', (c) => {
    const id = parseId(c.req.param('id'));
    refuseFileRule(deps.alerts(), id);
    const deleted = trailOf(c).within(
      204,
      () => deps.alerts().deleteRule(id),
      (gone) => gone && { action: 'delete-rule', rule: String(id), before: toApiRule(gone) },
    );
    if (!deleted) throw new ProblemError(404, `no rule with id ${id}`);
    return c.body(null, 204);
  });
}

/** A rule from a Sigma file is changed in its file (and a restart), never here. */
function refuseFileRule(store: AlertRepository, id: number): void {
  const file = store.fileRules.get(id);
  if (file) {
    throw new ProblemError(
      409,
      `rule ${id} comes from the Sigma file ${file.file}: change or remove the file in SIGMA_RULES_DIR and restart`,
    );
  }
}

const alertsCursor = atIdCursor('alerts');

export function alertsRoutes(
  deps: { alerts: () => AlertRepository; config?: { privacy: AuditConfig['privacy'] } },
  app: Hono<AuditEnv>,
): void {
  // Issue 29: firings on events of tenants hidden from the caller are not theirs to see.
  const policy = deps.config ? new PrivacyPolicy(deps.config.privacy) : undefined;
  const tenantsOf = (c: Context<AuditEnv>) => policy?.tenantsOf(callerOf(c));
  app.get('/', (c) => {
    const tenants = tenantsOf(c);
    const parsed = alertsQuerySchema.safeParse(queryObject(c.req.queries()));
    if (!parsed.success) throw ruleProblem(parsed.error);
    const q = parsed.data;
    const cursor = alertsCursor.read(q.cursor);
    const page = deps.alerts().page(
      {
        ...(q.rule ? { ruleIds: q.rule } : {}),
        ...(q.severity ? { severities: q.severity } : {}),
        ...(q.start !== undefined ? { start: q.start } : {}),
        ...(q.end !== undefined ? { end: q.end } : {}),
        ...(tenants ? { tenants } : {}),
      },
      q.limit,
      cursor,
    );
    return c.json(pageEnvelope(page, toApiAlert, alertsCursor.encode, q.limit));
  });

  app.get('/:id', (c) => {
    const value = c.req.param('id');
    if (!/^[1-9][0-9]{0,15}$/.test(value)) throw fieldProblem('id', 'is not an alert id');
    const row = deps.alerts().alert(Number(value));
    const alert = row && toApiAlert(row);
    const tenants = tenantsOf(c);
    if (!alert || (tenants && !tenants.includes(alert.event.tenant))) {
      throw new ProblemError(404, `no alert with id ${value}`);
    }
    return c.json(alert);
  });
}
