/**
 * `/api/v1/billing` (issue 11), served on the main port and on component port 8004:
 *
 * - GET `/plans`: active plans, no sign-in. `?all=true` (admins): retired ones too.
 * - POST `/plans` (admins): a new plan → 201. POST `/plans/{id}/retire` (admins) → the plan.
 * - POST `/subscriptions` (subscriber token): `{ plan_id }` → 201 with a new `pending_payment`
 *   subscription and its invoice; 200 with the pending one when the caller already has one on
 *   that plan. 503 + Retry-After when BTCPay cannot be reached.
 * - GET `/subscriptions`: the caller's; `?all=true` (admins): everyone's.
 * - POST `/subscriptions/{id}/renew`: a renewal invoice → 201 (200: the open one again).
 * - POST `/webhooks/btcpay`: BTCPay's deliveries; signature first (401), then JSON (400), then
 *   the invoice is fetched from BTCPay (503 when it cannot be) and applied.
 */
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { limitBody, readJsonBody } from '../../auth/request-body.js';
import { type AuthEnv, verifiedIdentity } from '../../auth/require-auth.js';
import { ADMIN_ROLE, SUBSCRIBER_ROLE } from '../../auth/user-service.js';
import { BODY_PROBLEMS, COMMON_PROBLEMS, HEADERS, type OperationSpec, problem } from '../../http/openapi.js';
import { ProblemError, validationProblem } from '../../http/problem.js';
import type { ModuleAuth } from '../../module.js';
import { type BillingService, unavailable } from '../billing-service.js';
import { BtcpayUnavailableError } from '../greenfield-client.js';
import type { BillingMetrics } from '../metrics.js';
import { PlanError } from '../plans.js';
import {
  adminPlanListSchema,
  adminPlanSchema,
  newPlanBodySchema,
  planIdPathSchema,
  planListQuerySchema,
  planListSchema,
  purchaseBodySchema,
  subscriptionIdPathSchema,
  subscriptionListQuerySchema,
  subscriptionListSchema,
  subscriptionSchema,
  webhookAckSchema,
  webhookDeliverySchema,
} from '../schemas.js';
import type { BillingConfig } from '../settings.js';
import { checkSignature } from '../webhook-signature.js';
import { adminPlanJson, planJson, subscriptionJson } from './json.js';

/** BTCPay's deliveries are small JSON objects; anything bigger is not one. */
export const WEBHOOK_MAX_BYTES = 64 * 1024;

export interface BillingRouteDeps {
  /** A hub's identity (ctx.auth), or the upstream's own tokens (sync/upstream/billing). */
  auth: Pick<ModuleAuth, 'require' | 'principalOf'>;
  service: BillingService;
  config: BillingConfig;
  metrics: BillingMetrics;
}

function parse<S extends z.ZodType>(schema: S, value: unknown, prefix = ''): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationProblem(result.error, prefix);
  return result.data;
}

async function body<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  return parse(schema, await readJsonBody(c));
}

/** The bearer check's refusals, alike for every operation here. */
const refused = {
  401: problem('No valid bearer token.', { 'WWW-Authenticate': HEADERS.wwwAuthenticate }),
  403: problem('The token lacks the role this needs.', { 'WWW-Authenticate': HEADERS.wwwAuthenticate }),
};
const paymentsDown = problem(
  'BTCPay cannot be reached or answered an error; `detail` says which in plain words.',
  {
    'Retry-After': HEADERS.retryAfter,
  },
);

/** The OpenAPI operations of the routes below (the document: openapi.ts). */
export const billingOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/api/v1/billing/plans',
    operationId: 'listPlans',
    tag: 'plans',
    summary: 'The plans on offer (no sign-in); `?all=true` (admins) lists retired ones too',
    security: 'optional-bearer',
    params: { query: planListQuerySchema },
    responses: {
      200: {
        description: 'Plans, by id. With `all=true`, each with `active` and `created_at`.',
        body: planListSchema.or(adminPlanListSchema),
      },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
    },
  },
  {
    method: 'post',
    path: '/api/v1/billing/plans',
    operationId: 'addPlan',
    tag: 'plans',
    summary: 'Add a plan (admins)',
    security: 'bearer',
    body: { schema: newPlanBodySchema },
    responses: {
      201: { description: 'The plan.', body: adminPlanSchema, headers: { Location: HEADERS.location } },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
      409: problem('A plan with this id exists already.'),
      ...BODY_PROBLEMS,
    },
  },
  {
    method: 'post',
    path: '/api/v1/billing/plans/{id}/retire',
    operationId: 'retirePlan',
    tag: 'plans',
    summary: 'Stop offering a plan (admins); subscriptions bought on it keep being served',
    security: 'bearer',
    params: { path: planIdPathSchema },
    responses: {
      200: { description: 'The plan, now `active: false`.', body: adminPlanSchema },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
      404: problem('No plan with this id.'),
    },
  },
  {
    method: 'post',
    path: '/api/v1/billing/subscriptions',
    operationId: 'buyPlan',
    tag: 'subscriptions',
    summary: 'Buy a plan: a subscription pending payment, with a BTCPay invoice to pay at `checkout_link`',
    security: 'bearer',
    body: { schema: purchaseBodySchema },
    responses: {
      201: {
        description: 'A new subscription, `pending_payment`.',
        body: subscriptionSchema,
        headers: { Location: HEADERS.location },
      },
      200: {
        description: 'The caller already has a purchase of this plan pending: that one.',
        body: subscriptionSchema,
        headers: { Location: HEADERS.location },
      },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
      404: problem('No plan with this id.'),
      409: problem('The plan is retired.'),
      ...BODY_PROBLEMS,
      503: paymentsDown,
    },
  },
  {
    method: 'get',
    path: '/api/v1/billing/subscriptions',
    operationId: 'listSubscriptions',
    tag: 'subscriptions',
    summary: "The caller's paid subscriptions; `?all=true` (admins): everyone's",
    security: 'bearer',
    params: { query: subscriptionListQuerySchema },
    responses: {
      200: { description: 'Oldest first.', body: subscriptionListSchema },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
    },
  },
  {
    method: 'post',
    path: '/api/v1/billing/subscriptions/{id}/renew',
    operationId: 'renewSubscription',
    tag: 'subscriptions',
    summary: 'Pay the next period: a renewal invoice (active, past due or expired subscriptions)',
    description:
      'A settled renewal extends `current_period_end` by the plan’s period from the later of now and the current end.',
    security: 'bearer',
    params: { path: subscriptionIdPathSchema },
    responses: {
      201: { description: 'A new renewal invoice is the latest invoice.', body: subscriptionSchema },
      200: {
        description: 'A renewal invoice is already open: the subscription with it.',
        body: subscriptionSchema,
      },
      400: COMMON_PROBLEMS.badInput,
      ...refused,
      404: problem('No subscription with this id is the caller’s.'),
      409: problem('The subscription is pending payment or canceled.'),
      503: paymentsDown,
    },
  },
  {
    method: 'post',
    path: '/api/v1/billing/webhooks/btcpay',
    operationId: 'btcpayWebhook',
    tag: 'webhooks',
    summary:
      'A BTCPay Server webhook delivery, signed with `BTCPay-Sig: sha256=<hex HMAC-SHA256(secret, body)>`',
    description:
      'The body only names an invoice: the hub fetches it from BTCPay and checks store, status, amount and currency before anything changes. A delivery applied once (same `deliveryId`, or a redelivery of it) changes nothing again.',
    params: { header: z.object({ 'BTCPay-Sig': z.string().describe('`sha256=` and 64 hex digits.') }) },
    body: { schema: webhookDeliverySchema },
    responses: {
      200: {
        description: '`applied`, `unchanged`, `duplicate`, or `ignored` (an invoice the hub did not create).',
        body: webhookAckSchema,
      },
      400: problem('The body is not JSON, or not a webhook delivery.'),
      401: problem('The signature is missing or wrong; nothing changed.'),
      413: COMMON_PROBLEMS.tooLarge,
      422: problem(
        'Another store’s invoice, or an invoice whose amount or currency does not match the plan; nothing changed.',
      ),
      503: paymentsDown,
    },
  },
];

export function billingRoutes(deps: BillingRouteDeps): Hono<AuthEnv> {
  const { auth, service } = deps;
  const { storage } = service;
  const { plans } = storage;
  const app = new Hono<AuthEnv>();
  const signedIn = auth.require([SUBSCRIBER_ROLE, ADMIN_ROLE]);
  const admin = auth.require([ADMIN_ROLE]);
  const principal = (c: Context<AuthEnv>) => auth.principalOf(verifiedIdentity(c));
  const isAdmin = (c: Context<AuthEnv>) => principal(c).roles.includes(ADMIN_ROLE);
  const view = async (id: string) =>
    subscriptionJson((await storage.subscription(id))!, await storage.latestInvoice(id));

  // Anyone sees the plans on offer; `?all=true` (retired plans too) needs an admin.
  const adminForAll: MiddlewareHandler<AuthEnv> = async function adminForAll(c, next) {
    if (c.req.query('all') === 'true') return admin(c, next);
    await next();
  };
  app.get('/plans', adminForAll, async (c) => {
    const query = parse(planListQuerySchema, c.req.query());
    if (query.all !== 'true') return c.json({ data: (await plans.list({ activeOnly: true })).map(planJson) });
    return c.json({ data: (await plans.list()).map(adminPlanJson) });
  });

  app.post('/plans', limitBody(16 * 1024), admin, async (c) => {
    const input = await body(c, newPlanBodySchema);
    try {
      const plan = await plans.add({
        id: input.id,
        name: input.name,
        price: input.price,
        currency: input.currency,
        periodDays: input.period_days,
        nodes: input.nodes,
      });
      return c.json(adminPlanJson(plan), 201, { location: `/api/v1/billing/plans/${plan.id}` });
    } catch (error) {
      if (error instanceof PlanError) {
        const status = error.message.includes('exists already') ? 409 : 400;
        throw new ProblemError(status, `invalid ${error.field}: ${error.message}`, {
          errors: [{ field: error.field, message: error.message }],
        });
      }
      throw error;
    }
  });

  app.post('/plans/:id/retire', admin, async (c) => {
    const { id } = parse(planIdPathSchema, c.req.param(), 'path.');
    const plan = await plans.get(id);
    if (!plan) throw new ProblemError(404, `no plan "${id}"`);
    await plans.retire(id);
    return c.json(adminPlanJson((await plans.get(id))!));
  });

  app.post('/subscriptions', limitBody(4096), signedIn, async (c) => {
    const input = await body(c, purchaseBodySchema);
    const { subscription, created } = await service.buy(principal(c).id, input.plan_id);
    return c.json(await view(subscription.id), created ? 201 : 200, {
      location: `/api/v1/billing/subscriptions/${subscription.id}`,
    });
  });

  app.get('/subscriptions', signedIn, async (c) => {
    const query = parse(subscriptionListQuerySchema, c.req.query());
    if (query.all === 'true' && !isAdmin(c))
      throw new ProblemError(403, 'only admins may list every subscription');
    const rows = await storage.subscriptions(query.all === 'true' ? undefined : principal(c).id);
    const latest = await storage.latestInvoices(rows.map((s) => s.id));
    return c.json({ data: rows.map((s) => subscriptionJson(s, latest.get(s.id))) });
  });

  app.post('/subscriptions/:id/renew', signedIn, async (c) => {
    const { id } = parse(subscriptionIdPathSchema, c.req.param(), 'path.');
    const subscription = await storage.subscription(id);
    // Someone else's subscription is as unknown as a missing one.
    if (!subscription || (subscription.subscriber !== principal(c).id && !isAdmin(c))) {
      throw new ProblemError(404, `no subscription ${id}`);
    }
    const before = (await storage.latestInvoice(id))?.id;
    await service.renew(subscription);
    const after = (await storage.latestInvoice(id))?.id;
    return c.json(await view(id), before === after ? 200 : 201);
  });

  const webhookLimit = limitBody(WEBHOOK_MAX_BYTES);
  const counted = (error: unknown) => {
    if (error instanceof ProblemError && error.status === 413) deps.metrics.reject('too_large');
    return error;
  };
  const limitWebhookBody: MiddlewareHandler = async function limitWebhookBody(c, next) {
    try {
      await webhookLimit(c, next);
    } catch (error) {
      throw counted(error);
    }
  };
  app.post('/webhooks/btcpay', limitWebhookBody, async (c) => {
    let raw: Uint8Array;
    try {
      raw = new Uint8Array(await c.req.arrayBuffer());
    } catch (error) {
      throw counted(error);
    }
    const failure = checkSignature(deps.config.webhookSecret.reveal(), raw, c.req.header('btcpay-sig'));
    if (failure) {
      deps.metrics.reject(failure);
      throw new ProblemError(
        401,
        failure === 'missing_signature'
          ? 'the BTCPay-Sig header is missing'
          : 'the BTCPay-Sig signature does not match this body',
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(raw).toString('utf8'));
    } catch {
      deps.metrics.reject('not_json');
      throw new ProblemError(400, 'the webhook body is not valid JSON');
    }
    const parsed = webhookDeliverySchema.safeParse(json);
    if (!parsed.success) {
      deps.metrics.reject('bad_payload');
      throw validationProblem(parsed.error);
    }
    const delivery = parsed.data;
    const ids = [delivery.deliveryId, delivery.originalDeliveryId].filter((v): v is string => !!v);
    for (const id of ids) if (await storage.wasDelivered(id)) return c.json({ result: 'duplicate' });
    if (delivery.storeId !== deps.config.storeId) {
      deps.metrics.reject('other_store');
      throw new ProblemError(422, 'this webhook is for another BTCPay store');
    }
    let outcome: Awaited<ReturnType<BillingService['refresh']>>;
    try {
      outcome = await service.refresh(delivery.invoiceId, `webhook ${delivery.type}`, {
        id: delivery.deliveryId,
        type: delivery.type,
      });
    } catch (error) {
      if (error instanceof BtcpayUnavailableError) {
        deps.metrics.reject('unavailable');
        throw unavailable(error);
      }
      throw error;
    }
    if (outcome === 'unknown_invoice') return c.json({ result: 'ignored' });
    if (outcome === 'other_store') {
      deps.metrics.reject('other_store');
      throw new ProblemError(422, 'the invoice belongs to another BTCPay store');
    }
    if (outcome === 'mismatch') {
      deps.metrics.reject('mismatch');
      throw new ProblemError(
        422,
        "the invoice's amount or currency does not match the plan; nothing was activated",
      );
    }
    return c.json({ result: outcome });
  });

  return app;
}
