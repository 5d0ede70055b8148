/**
 * Saved searches (issue 29): a name, who owns it, whether a role shares it, and the filters in the
 * SAME shape the search API takes them (`filterShape`, plugins/audit/http/filters.ts) — validated
 * by that schema, so a filter the search gains is a filter a saved search keeps. The time range
 * is absolute (`start`, `end`) or relative (`last`: a duration like 24h or 7d, counted back from
 * when the search is run).
 */
import { z } from 'zod';
import { parseDuration } from '../../../src/config/fields.js';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import { filterShape, refineWindow } from '../http/filters.js';

export const MAX_SAVED_NAME = 120;
/** Saved searches one owner may keep. */
export const MAX_SAVED_PER_OWNER = 200;
/** The longest relative range: ten years. */
export const MAX_LAST_MS = 3650 * 86_400_000;

const lastSchema = z
  .string({ error: 'must be a duration like 1h, 24h or 7d' })
  .transform((v, ctx) => {
    const ms = parseDuration(v);
    if (ms === undefined || ms < 60_000 || ms > MAX_LAST_MS) {
      ctx.addIssue({ code: 'custom', message: 'must be a duration like 1h, 24h or 7d (1m to 3650d)' });
      return z.NEVER;
    }
    return ms;
  })
  .meta({ description: 'A relative range: the events of the last 15m, 24h, 7d… when the search is run.' });

/** The saved filters: the search API's parameters (JSON), plus `last`. Strict: an unknown field is a 400. */
export const savedFiltersSchema = z
  .strictObject({ ...filterShape, last: lastSchema.optional() })
  .superRefine((v, ctx) => {
    refineWindow(v, ctx);
    if (v.last !== undefined && (v.start !== undefined || v.end !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['last'],
        message: 'give either last (relative) or start/end (absolute), not both',
      });
    }
  })
  .meta({
    description:
      'The search API’s parameters (`GET /api/events`) as a JSON object, lists as arrays; the time range as `start`/`end` or `last`.',
  });

export type SavedFilters = z.output<typeof savedFiltersSchema>;

const nameSchema = z
  .string({ error: 'is required' })
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_SAVED_NAME, `must be at most ${MAX_SAVED_NAME} characters`)
  .refine((v) => !CONTROL_CHAR.test(v), 'must not contain control characters');

export const savedSearchBodySchema = z.strictObject({
  name: nameSchema,
  shared_with: z
    .string({ error: 'must be a role name or null' })
    .trim()
    .min(1, 'must not be empty')
    .max(64)
    .nullable()
    .default(null)
    .meta({
      description:
        'null: private (its owner only). A role of AUDIT_READER_ROLES or AUDIT_ADMIN_ROLES: its holders see it too.',
    }),
  filters: savedFiltersSchema,
});

export type SavedSearchBody = z.output<typeof savedSearchBodySchema>;

export const savedSearchSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    owner: z.string().meta({ description: 'The owner’s name.' }),
    mine: z.boolean().meta({ description: 'Whether the caller owns it.' }),
    can_change: z.boolean().meta({ description: 'Whether the caller may change or delete it.' }),
    shared_with: z.string().nullable(),
    filters: z.record(z.string(), z.unknown()).meta({ description: 'As saved (see the request body).' }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ description: 'A saved search.' });

export const savedSearchListSchema = z.object({
  data: z.array(savedSearchSchema),
  share_roles: z
    .array(z.string())
    .meta({ description: 'The roles a saved search may be shared with (the audit reader and admin roles).' }),
});
