/**
 * `/api/v1/notifications`: rules and their firings (role admin), the VAPID public key (anyone),
 * and signed-in users' browser push subscriptions. Bad input is a 400 naming each field and
 * changes nothing; every webhook and push URL passes the outbound check before it is kept.
 */
import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { limitBody, readJsonBody } from '../auth/request-body.js';
import type { AuthEnv } from '../auth/require-auth.js';
import { verifiedIdentity } from '../auth/require-auth.js';
import { ADMIN_ROLE } from '../auth/user-service.js';
import {
  AUTH_PROBLEMS,
  BODY_PROBLEMS,
  COMMON_PROBLEMS,
  HEADERS,
  pagedListResponses,
  problem,
  type ResponseSpec,
} from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { checkOutboundUrl, OutboundUrlError } from '../http/outbound-url.js';
import { cursorCodec, limitReader, nextPageHeaders, readCursor } from '../http/paging.js';
import { fieldProblem, ProblemError, validationProblem } from '../http/problem.js';
import type { ModuleAuth } from '../module.js';
import { alertTopic, firingJson } from './notifier-actor.js';
import {
  firingListSchema,
  firingsQuerySchema,
  pushKeySchema,
  pushSubscriptionSchema,
  pushUnsubscribeSchema,
  type RuleJson,
  type RuleSpec,
  ruleIdPathSchema,
  ruleListSchema,
  rulePatchSchema,
  ruleSchema,
  ruleSpecSchema,
} from './schemas.js';
import { MAX_RULES, type NotificationStore, type Rule } from './store.js';

const BASE = '/api/v1/notifications';
const MAX_BODY = 64 * 1024;
const FIRING_PAGE = { default: 50, max: 200 };
/** Push subscriptions one user may keep (a phone, a laptop, …). */
export const MAX_SUBSCRIPTIONS_PER_USER = 20;

const signedIn = { 401: AUTH_PROBLEMS.unauthorized, 503: AUTH_PROBLEMS.idpDown };
const admin = {
  ...signedIn,
  403: problem('The token does not carry the admin role.', { 'WWW-Authenticate': HEADERS.wwwAuthenticate }),
};
const noRule = problem('No rule with this id.');
/** The answers of a route on one rule (`/rules/{id}`): `ok`, a bad id, the admin's refusals, no such rule. */
const ruleAnswers = (status: 200 | 204, ok: ResponseSpec): Record<number, ResponseSpec> => ({
  [status]: ok,
  400: COMMON_PROBLEMS.badInput,
  ...admin,
  404: noRule,
});

export const notificationOperations = describeRoutes(BASE, [
  {
    method: 'get',
    path: '/rules',
    operationId: 'listNotificationRules',
    tag: 'notifications',
    summary: 'Every notification rule',
    security: 'bearer',
    responses: { 200: { description: 'The rules, oldest first.', body: ruleListSchema }, ...admin },
  },
  {
    method: 'post',
    path: '/rules',
    operationId: 'createNotificationRule',
    tag: 'notifications',
    summary: 'Create a notification rule',
    security: 'bearer',
    body: {
      schema: ruleSpecSchema,
      description:
        'Each kind needs its fields (`minutes`, `threshold`, `metric` with `min`/`max`); an unknown field is a 400 naming it.',
    },
    responses: {
      201: { description: 'The rule.', body: ruleSchema, headers: { Location: HEADERS.location } },
      400: COMMON_PROBLEMS.badInput,
      ...admin,
      ...BODY_PROBLEMS,
      422: problem(`There are ${MAX_RULES} rules already.`),
    },
  },
  {
    method: 'get',
    path: '/rules/{id}',
    operationId: 'getNotificationRule',
    tag: 'notifications',
    summary: 'One notification rule',
    security: 'bearer',
    params: { path: ruleIdPathSchema },
    responses: ruleAnswers(200, { description: 'The rule.', body: ruleSchema }),
  },
  {
    method: 'patch',
    path: '/rules/{id}',
    operationId: 'updateNotificationRule',
    tag: 'notifications',
    summary: 'Change some fields of a rule (null clears an optional one); the result is checked whole',
    security: 'bearer',
    params: { path: ruleIdPathSchema },
    body: { schema: rulePatchSchema },
    responses: {
      ...ruleAnswers(200, { description: 'The rule afterwards.', body: ruleSchema }),
      ...BODY_PROBLEMS,
    },
  },
  {
    method: 'delete',
    path: '/rules/{id}',
    operationId: 'deleteNotificationRule',
    tag: 'notifications',
    summary: 'Delete a rule (its firings stay)',
    security: 'bearer',
    params: { path: ruleIdPathSchema },
    responses: ruleAnswers(204, { description: 'Deleted.' }),
  },
  {
    method: 'get',
    path: '/firings',
    operationId: 'listNotificationFirings',
    tag: 'notifications',
    summary: 'Firings, newest first (bounded by NOTIFY_HISTORY_MAX)',
    security: 'bearer',
    params: { query: firingsQuerySchema },
    responses: { ...pagedListResponses(firingListSchema), ...admin },
  },
  {
    method: 'get',
    path: '/push/key',
    operationId: 'getPushKey',
    tag: 'notifications',
    summary: 'The VAPID public key browsers subscribe with (applicationServerKey)',
    responses: { 200: { description: 'The key.', body: pushKeySchema } },
  },
  {
    method: 'post',
    path: '/push/subscriptions',
    operationId: 'addPushSubscription',
    tag: 'notifications',
    summary:
      'Keep this browser’s push subscription: admins hear rule firings, subscribers their replies and failed texts',
    security: 'bearer',
    body: { schema: pushSubscriptionSchema, description: 'PushSubscription.toJSON() of the browser.' },
    responses: {
      201: { description: 'Kept.' },
      400: COMMON_PROBLEMS.badInput,
      ...signedIn,
      ...BODY_PROBLEMS,
      422: problem(`This user has ${MAX_SUBSCRIPTIONS_PER_USER} subscriptions already.`),
    },
  },
  {
    method: 'delete',
    path: '/push/subscriptions',
    operationId: 'removePushSubscription',
    tag: 'notifications',
    summary: 'Forget one of the caller’s own push subscriptions',
    security: 'bearer',
    body: { schema: pushUnsubscribeSchema },
    responses: {
      204: { description: 'Forgotten.' },
      400: COMMON_PROBLEMS.badInput,
      ...signedIn,
      404: problem('The caller has no subscription with this endpoint.'),
      ...BODY_PROBLEMS,
    },
  },
]);

/** A rule as the API shows it: the webhook's secret never leaves the hub. */
export function ruleJson(rule: Rule): RuleJson {
  const { webhook, ...rest } = rule;
  return {
    ...rest,
    webhook: webhook
      ? { url: webhook.url, format: webhook.format, signed: webhook.secret !== undefined }
      : null,
    mqtt_topic: alertTopic(rule.id, '<node_id>'),
  };
}

export interface NotificationRoutesDeps {
  store: NotificationStore;
  auth: ModuleAuth;
  publicKey: string;
  allowedHosts: readonly string[];
  /** Rules changed: the engine reads them again. */
  rulesChanged: () => void;
  now?: () => number;
}

const firingPosition = cursorCodec(z.object({ before: z.int().positive() }));

export function notificationRoutes(deps: NotificationRoutesDeps): Hono<AuthEnv> {
  const { store, auth } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const admins = auth.require([ADMIN_ROLE]);
  const anyone = auth.require();
  const body = limitBody(MAX_BODY);
  const readLimit = limitReader(FIRING_PAGE);

  const checkedSpec = (value: unknown): RuleSpec => {
    const parsed = ruleSpecSchema.safeParse(value);
    if (!parsed.success) throw validationProblem(parsed.error);
    if (parsed.data.webhook) {
      try {
        checkOutboundUrl(parsed.data.webhook.url, { allowedHosts: deps.allowedHosts });
      } catch (error) {
        throw fieldProblem(
          'webhook.url',
          error instanceof OutboundUrlError ? error.message : 'must be an https URL',
        );
      }
    }
    return parsed.data;
  };
  const ruleOf = (c: Context) => {
    const parsed = ruleIdPathSchema.safeParse({ id: c.req.param('id') });
    if (!parsed.success) throw fieldProblem('id', 'is not a rule id');
    const rule = store.rule(Number(parsed.data.id));
    if (!rule) throw new ProblemError(404, 'no notification rule with this id');
    return rule;
  };

  app.get('/rules', admins, (c) => c.json({ data: store.rules().map(ruleJson) }));

  app.post('/rules', admins, body, async (c) => {
    const spec = checkedSpec(await readJsonBody(c));
    if (store.ruleCount() >= MAX_RULES)
      throw new ProblemError(422, `there are ${MAX_RULES} rules already; delete one first`);
    const rule = store.createRule(spec, now());
    deps.rulesChanged();
    return c.json(ruleJson(rule), 201, { location: `${BASE}/rules/${rule.id}` });
  });

  app.get('/rules/:id', admins, (c) => c.json(ruleJson(ruleOf(c))));

  app.patch('/rules/:id', admins, body, async (c) => {
    const rule = ruleOf(c);
    const patch = rulePatchSchema.safeParse(await readJsonBody(c));
    if (!patch.success) throw validationProblem(patch.error);
    const { id: _id, ...current } = rule;
    const merged: Record<string, unknown> = { ...current };
    for (const [key, value] of Object.entries(patch.data)) {
      if (value === undefined) continue;
      if (value === null && key !== 'quiet_hours' && key !== 'webhook') delete merged[key];
      else merged[key] = value;
    }
    const updated = store.updateRule(rule.id, checkedSpec(merged), now());
    deps.rulesChanged();
    return c.json(ruleJson(updated));
  });

  app.delete('/rules/:id', admins, (c) => {
    const rule = ruleOf(c);
    store.deleteRule(rule.id);
    deps.rulesChanged();
    return c.body(null, 204);
  });

  app.get('/firings', admins, (c) => {
    const query = c.req.query();
    for (const key of Object.keys(query))
      if (key !== 'limit' && key !== 'cursor') throw fieldProblem(key, 'is not a known parameter');
    const limit = readLimit(query.limit);
    const before =
      query.cursor === undefined
        ? undefined
        : readCursor(firingPosition, query.cursor, 'is not a cursor this list issued').before;
    const rows = store.firings(limit + 1, before);
    const page = rows.slice(0, limit);
    const next = rows.length > limit ? firingPosition.encode({ before: page.at(-1)!.id }) : undefined;
    const params: Record<string, string> = { limit: String(limit) };
    return c.json({ data: page.map(firingJson) }, 200, nextPageHeaders(`${BASE}/firings`, params, next));
  });

  app.get('/push/key', (c) => c.json({ public_key: deps.publicKey }));

  app.post('/push/subscriptions', anyone, body, async (c) => {
    const parsed = pushSubscriptionSchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const s = parsed.data;
    try {
      checkOutboundUrl(s.endpoint, { allowedHosts: deps.allowedHosts });
    } catch (error) {
      throw fieldProblem(
        'endpoint',
        error instanceof OutboundUrlError ? error.message : 'must be an https URL',
      );
    }
    const identity = verifiedIdentity(c);
    const principal = auth.principalOf(identity).id;
    if (store.subscriptionCount(principal) >= MAX_SUBSCRIPTIONS_PER_USER)
      throw new ProblemError(
        422,
        `at most ${MAX_SUBSCRIPTIONS_PER_USER} push subscriptions per user; remove one first`,
      );
    store.saveSubscription(
      {
        endpoint: s.endpoint,
        principal,
        admin: identity.roles.includes(ADMIN_ROLE),
        p256dh: s.keys.p256dh,
        auth: s.keys.auth,
      },
      now(),
    );
    return c.body(null, 201);
  });

  app.delete('/push/subscriptions', anyone, body, async (c) => {
    const parsed = pushUnsubscribeSchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw validationProblem(parsed.error);
    const principal = auth.principalOf(verifiedIdentity(c)).id;
    if (!store.deleteSubscription(parsed.data.endpoint, principal))
      throw new ProblemError(404, 'you have no push subscription with this endpoint');
    return c.body(null, 204);
  });

  return app;
}
