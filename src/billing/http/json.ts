/** The billing API's JSON from stored rows, in the shapes of schemas.ts. */
import type { z } from 'zod';
import type { BillingInvoice, BillingSubscription } from '../billing-repository.js';
import type { Plan } from '../plans.js';
import type { adminPlanSchema, planSchema, subscriptionSchema } from '../schemas.js';

const isoOf = (ms: number) => new Date(ms).toISOString();

export function planJson(p: Plan): z.input<typeof planSchema> {
  return {
    id: p.id,
    name: p.name,
    price: p.price,
    currency: p.currency,
    period_days: p.periodDays,
    nodes: p.nodes,
  };
}

export function adminPlanJson(p: Plan): z.input<typeof adminPlanSchema> {
  return { ...planJson(p), active: p.active, created_at: isoOf(p.createdAt) };
}

const NOTES: Record<BillingInvoice['status'], string | null> = {
  new: 'waiting for payment',
  processing: 'payment seen, waiting for confirmation',
  settled: null,
  expired: 'the invoice expired unpaid',
  invalid: 'the invoice is invalid (paid too late or too little)',
};

export function subscriptionJson(
  s: BillingSubscription,
  latest: BillingInvoice | undefined,
): z.input<typeof subscriptionSchema> {
  return {
    id: s.id,
    plan_id: s.planId,
    subscriber: s.subscriber,
    status: s.status,
    invoice_id: latest?.id ?? null,
    invoice_status: latest?.status ?? null,
    checkout_link: latest?.checkoutLink ?? null,
    payment_note: latest ? NOTES[latest.status] : null,
    current_period_end: s.currentPeriodEnd === null ? null : isoOf(s.currentPeriodEnd),
    created_at: isoOf(s.createdAt),
  };
}
