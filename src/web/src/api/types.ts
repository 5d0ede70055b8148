/**
 * The hub's JSON, typed from the zod schemas the server answers with (one place per fact: a
 * changed field breaks `npm run typecheck` here instead of drifting). Type-only imports: no zod
 * reaches the browser bundle.
 */
import type { z } from 'zod';
import type { tokenResponseSchema } from '../../../auth/schemas.js';
import type { adminPlanSchema, planSchema, subscriptionSchema } from '../../../billing/schemas.js';
import type { healthReportSchema, radioStatusSchema } from '../../../http/schemas.js';
import type { HelloEvent as HubHelloEvent } from '../../../live/schemas.js';
import type {
  ConversationSummaryJson,
  MessageDetailJson,
  MessageRecordJson,
  MessageStatus,
} from '../../../messaging/schemas.js';
import type { NodeJson as HubNodeJson } from '../../../nodes/schemas.js';
import type { TileJson } from '../../../ui-server/schemas.js';
import type { HistoryInterval, ReadingJson as HubReadingJson } from '../../../weather/schemas.js';

export type { SiteJson } from '../../../domain/site.js';
export type { HistoryInterval, MessageStatus, TileJson };

/**
 * Which role serves this page: a hub (its `hello` says nothing: absent means 'hub') or the
 * upstream of many sites (`meshhub upstream`, issue 12: sync/upstream/routes/live-routes.ts).
 */
export type ServerMode = 'hub' | 'upstream';
export type HelloEvent = HubHelloEvent & { mode?: ServerMode };

/** On the upstream every node and reading item names the site it came from (absent on a hub). */
export type NodeJson = HubNodeJson & { site_id?: string };
export type ReadingJson = HubReadingJson & { site_id?: string };

export type RadioStatus = z.output<typeof radioStatusSchema>;
export type HealthReport = z.output<typeof healthReportSchema>;
export type TokenResponse = z.output<typeof tokenResponseSchema>;
export type ConversationSummary = ConversationSummaryJson;

/** A message as the lists send it; the detail (GET /messages/{id}) and the live stream add the rest. */
export type MessageRecord = MessageRecordJson & Partial<MessageDetailJson>;

// Billing (plugins/billing, issue 11): the plugin's own schemas, type-only like the rest.
export type BillingPlan = z.output<typeof planSchema> &
  Partial<Pick<z.output<typeof adminPlanSchema>, 'active'>>;
export type BillingSubscription = z.output<typeof subscriptionSchema>;
