/**
 * The billing API's JSON, in zod: the routes validate with these and the OpenAPI document
 * (openapi.ts) is built from them (one place per fact). Only zod here: the web UI's types come
 * from these schemas too.
 */
import { z } from 'zod';
import { CURRENCY_PATTERN, PLAN_ID_PATTERN, PRICE_PATTERN, SUBSCRIPTION_ID_PATTERN } from './ids.js';

const nodeId = z.string().regex(/^![0-9a-f]{8}$/);
const nodes = z.union([z.literal('all'), z.array(nodeId).min(1).max(1000)]);
const iso = z.iso.datetime();

export const planSchema = z.object({
  id: z.string(),
  name: z.string(),
  price: z.string().describe('A decimal string, as BTCPay takes amounts.'),
  currency: z.string(),
  period_days: z.int(),
  nodes: nodes.describe('`all`: every node of the site; or the node ids the plan covers.'),
});

export const adminPlanSchema = planSchema.extend({ active: z.boolean(), created_at: iso });
export const planListSchema = z.object({ data: z.array(planSchema) });
export const adminPlanListSchema = z.object({ data: z.array(adminPlanSchema) });

export const newPlanBodySchema = z.strictObject({
  id: z.string().regex(PLAN_ID_PATTERN, 'must be 1–40 lower-case letters, digits, "-" or "_"'),
  name: z.string().trim().min(1).max(100),
  price: z.string().regex(PRICE_PATTERN, 'must be a positive decimal string like "5" or "0.0001"'),
  currency: z.string().regex(CURRENCY_PATTERN, 'must be a currency code like USD, EUR, BTC or SATS'),
  period_days: z.int().min(1).max(3660),
  nodes: nodes.default('all'),
});

export const planIdPathSchema = z.object({
  id: z.string().regex(PLAN_ID_PATTERN, 'is not a plan id'),
});
export const planListQuerySchema = z.object({
  all: z.enum(['true', 'false']).optional().describe('`true` (admins): retired plans too, with `active`.'),
});

export const purchaseBodySchema = z.strictObject({
  plan_id: z.string().regex(PLAN_ID_PATTERN, 'is not a plan id'),
});

export const subscriptionIdPathSchema = z.object({
  id: z.string().regex(SUBSCRIPTION_ID_PATTERN, 'is not a subscription id like sub_0123456789abcdef'),
});
export const subscriptionListQuerySchema = z.object({
  all: z.enum(['true', 'false']).optional().describe("`true` (admins): everyone's subscriptions."),
});

export const BILLING_STATUSES = ['pending_payment', 'active', 'past_due', 'expired', 'canceled'] as const;
export const INVOICE_STATUSES = ['new', 'processing', 'settled', 'expired', 'invalid'] as const;

export const subscriptionSchema = z.object({
  id: z.string(),
  plan_id: z.string(),
  subscriber: z.string(),
  status: z.enum(BILLING_STATUSES),
  invoice_id: z.string().nullable().describe('The latest invoice (purchase or renewal).'),
  invoice_status: z.enum(INVOICE_STATUSES).nullable(),
  checkout_link: z.string().nullable().describe("BTCPay's checkout page of the latest invoice."),
  payment_note: z
    .string()
    .nullable()
    .describe('In words, what the latest invoice is waiting for: "payment seen, waiting for confirmation".'),
  current_period_end: iso.nullable(),
  created_at: iso,
});
export const subscriptionListSchema = z.object({ data: z.array(subscriptionSchema) });

export const webhookAckSchema = z.object({
  result: z.enum(['applied', 'unchanged', 'duplicate', 'ignored']),
});

/** What a BTCPay webhook delivery must carry for us to look at the invoice (Greenfield "Webhooks"). */
export const webhookDeliverySchema = z.object({
  deliveryId: z.string().min(1).max(200),
  webhookId: z.string().max(200).optional(),
  originalDeliveryId: z.string().max(200).optional().nullable(),
  isRedelivery: z.boolean().optional(),
  type: z.string().min(1).max(100),
  timestamp: z.number().optional(),
  storeId: z.string().min(1).max(200),
  invoiceId: z.string().min(1).max(200),
  metadata: z.unknown().optional(),
});
