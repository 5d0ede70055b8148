/**
 * The audit plugin's JSON, typed from the zod schemas the plugin answers with (one place per
 * fact; type-only imports, so no zod reaches the browser).
 */
import type { z } from 'zod';
import type {
  alertPageSchema,
  ruleListSchema,
  ruleSchema,
} from '../../../../plugins/audit/alerts/schemas.js';
import type {
  askAcceptedSchema,
  askAnswerSchema,
  explainAnswerSchema,
  jobSchema,
} from '../../../../plugins/audit/ask/schemas.js';
import type {
  authConfigSchema,
  bulkTagsResultSchema,
  commentSchema,
  eventDetailSchema,
  eventPageSchema,
  eventSchema,
  featuresSchema,
  filterOptionsSchema,
  sourceHealthSchema,
} from '../../../../plugins/audit/http/schemas.js';

export type AuditEvent = z.output<typeof eventSchema>;
export type AuditEventDetail = z.output<typeof eventDetailSchema>;
export type AuditComment = z.output<typeof commentSchema>;
export type EventPage = z.output<typeof eventPageSchema>;
export type FilterOptions = z.output<typeof filterOptionsSchema>;
export type SourceHealth = z.output<typeof sourceHealthSchema>;
export type BulkTagsResult = z.output<typeof bulkTagsResultSchema>;
export type AuditFeatures = z.output<typeof featuresSchema>;
export type AskAnswer = z.output<typeof askAnswerSchema>;
export type AskAccepted = z.output<typeof askAcceptedSchema>;
export type AskJob = z.output<typeof jobSchema>;
export type ExplainAnswer = z.output<typeof explainAnswerSchema>;
export type AlertRule = z.output<typeof ruleSchema>;
export type AlertRuleList = z.output<typeof ruleListSchema>;
export type AlertPage = z.output<typeof alertPageSchema>;

/** `GET /api/config/auth`: off, on or misconfigured, and what a browser needs to sign in. */
export type AuthConfig = z.output<typeof authConfigSchema>;
