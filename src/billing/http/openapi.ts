/**
 * The billing API's OpenAPI document (issue 11): the operations routes.ts declares beside its
 * handlers, with the tags and the named schemas. Served at /api/v1/billing/openapi.json.
 */
import { type OpenApiDocument, openApiDocument } from '../../http/openapi.js';
import { adminPlanSchema, planSchema, subscriptionSchema } from '../schemas.js';
import { billingOperations } from './routes.js';

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
    operations: [...billingOperations],
  });
}
