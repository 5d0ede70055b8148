/**
 * The billing API's OpenAPI document (issue 11), from the zod schemas its routes validate with
 * (schemas.ts). Served at /api/v1/billing/openapi.json.
 */
import { z } from 'zod';
import {
  COMMON_PROBLEMS,
  HEADERS,
  type OpenApiDocument,
  openApiDocument,
  problem,
} from '../../http/openapi.js';
import {
  adminPlanListSchema,
  adminPlanSchema,
  newPlanBodySchema,
  planIdPathSchema,
  planListQuerySchema,
  planListSchema,
  planSchema,
  purchaseBodySchema,
  subscriptionIdPathSchema,
  subscriptionListQuerySchema,
  subscriptionListSchema,
  subscriptionSchema,
  webhookAckSchema,
  webhookDeliverySchema,
} from '../schemas.js';

const { badInput, tooLarge, notJson } = COMMON_PROBLEMS;

const noToken = problem('No valid bearer token.', { 'WWW-Authenticate': HEADERS.wwwAuthenticate });
const forbidden = problem('The token lacks the role this needs.', {
  'WWW-Authenticate': HEADERS.wwwAuthenticate,
});
const paymentsDown = problem(
  'BTCPay cannot be reached or answered an error; `detail` says which in plain words.',
  {
    'Retry-After': HEADERS.retryAfter,
  },
);

export function billingOpenApiDocument(version: string): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub billing API',
    version,
    description:
      'Plans, paid subscriptions and BTCPay Server webhooks (issue 11). A settled invoice lets the subscriber message the plan’s nodes until the period ends plus the grace period. Errors are RFC 9457 problem details.',
    tags: [
      { name: 'plans', description: 'What can be bought.' },
      { name: 'subscriptions', description: 'Buying and renewing.' },
      { name: 'webhooks', description: 'BTCPay Server deliveries.' },
    ],
    components: { Plan: planSchema, AdminPlan: adminPlanSchema, BillingSubscription: subscriptionSchema },
    operations: [
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
          400: badInput,
          401: noToken,
          403: forbidden,
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
          400: badInput,
          401: noToken,
          403: forbidden,
          409: problem('A plan with this id exists already.'),
          413: tooLarge,
          415: notJson,
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
          400: badInput,
          401: noToken,
          403: forbidden,
          404: problem('No plan with this id.'),
        },
      },
      {
        method: 'post',
        path: '/api/v1/billing/subscriptions',
        operationId: 'buyPlan',
        tag: 'subscriptions',
        summary:
          'Buy a plan: a subscription pending payment, with a BTCPay invoice to pay at `checkout_link`',
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
          400: badInput,
          401: noToken,
          403: forbidden,
          404: problem('No plan with this id.'),
          409: problem('The plan is retired.'),
          413: tooLarge,
          415: notJson,
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
          400: badInput,
          401: noToken,
          403: forbidden,
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
          400: badInput,
          401: noToken,
          403: forbidden,
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
            description:
              '`applied`, `unchanged`, `duplicate`, or `ignored` (an invoice the hub did not create).',
            body: webhookAckSchema,
          },
          400: problem('The body is not JSON, or not a webhook delivery.'),
          401: problem('The signature is missing or wrong; nothing changed.'),
          413: tooLarge,
          422: problem(
            'Another store’s invoice, or an invoice whose amount or currency does not match the plan; nothing changed.',
          ),
          503: paymentsDown,
        },
      },
    ],
  });
}
