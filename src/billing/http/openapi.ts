/**
 * The billing API's OpenAPI document (issue 11): the operations routes.ts declares beside its
 * handlers, with the tags and the named schemas. Served at /api/v1/billing/openapi.json.
 */
import { type OpenApiDocument, openApiDocument } from '../../http/openapi.js';
import { adminPlanSchema, planSchema, subscriptionSchema } from '../schemas.js';
import { billingOperations } from './routes.js';

/** The billing API's tags and named schemas, here and in the upstream's document (sync/upstream/routes/openapi.ts). */
export const BILLING_TAGS = [
  { name: 'plans', description: 'What can be bought.' },
  { name: 'subscriptions', description: 'Buying and renewing.' },
  { name: 'webhooks', description: 'BTCPay Server deliveries.' },
];
export const BILLING_COMPONENTS = {
  Plan: planSchema,
  AdminPlan: adminPlanSchema,
  BillingSubscription: subscriptionSchema,
};

export function billingOpenApiDocument(version: string): OpenApiDocument {
  return openApiDocument({
    title: 'meshhub billing API',
    version,
    description:
      'Plans, paid subscriptions and BTCPay Server webhooks (issue 11). A settled invoice lets the subscriber message the plan’s nodes until the period ends plus the grace period. Errors are RFC 9457 problem details.',
    tags: BILLING_TAGS,
    components: BILLING_COMPONENTS,
    operations: [...billingOperations],
  });
}
