/**
 * The hub's JSON, typed from the zod schemas the server answers with (one place per fact: a
 * changed field breaks `npm run typecheck` here instead of drifting). Type-only imports: no zod
 * reaches the browser bundle.
 */
import type { z } from 'zod';
import type {
  adminPlanSchema,
  planSchema,
  subscriptionSchema,
} from '../../../../plugins/billing/http/schemas.js';
import type { tokenResponseSchema } from '../../../auth/schemas.js';
import type { healthReportSchema, problemSchema, radioStatusSchema } from '../../../http/schemas.js';
import type { HelloEvent } from '../../../live/schemas.js';
import type {
  ConversationSummaryJson,
  MessageDetailJson,
  MessageRecordJson,
  MessageStatus,
} from '../../../messaging/schemas.js';
import type { NodeJson } from '../../../nodes/schemas.js';
import type { TileJson } from '../../../ui-server/schemas.js';
import type { HistoryInterval, ReadingJson } from '../../../weather/schemas.js';

export type { HelloEvent, HistoryInterval, MessageStatus, NodeJson, ReadingJson, TileJson };

export type RadioStatus = z.output<typeof radioStatusSchema>;
export type HealthReport = z.output<typeof healthReportSchema>;
export type TokenResponse = z.output<typeof tokenResponseSchema>;
export type ProblemJson = z.output<typeof problemSchema>;
export type ConversationSummary = ConversationSummaryJson;

/** A message as the lists send it; the detail (GET /messages/{id}) and the live stream add the rest. */
export type MessageRecord = MessageRecordJson & Partial<MessageDetailJson>;

// Billing (plugins/billing, issue 11): the plugin's own schemas, type-only like the rest.
export type BillingPlan = z.output<typeof planSchema> &
  Partial<Pick<z.output<typeof adminPlanSchema>, 'active'>>;
export type BillingSubscription = z.output<typeof subscriptionSchema>;
export type BillingSubscriptionStatus = BillingSubscription['status'];
export type BillingInvoiceStatus = NonNullable<BillingSubscription['invoice_status']>;
