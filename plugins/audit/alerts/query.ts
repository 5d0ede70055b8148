/** `GET /api/alerts` query parameters and its cursor's position. */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam } from '../../../src/http/schemas.js';
import { AUDIT_PAGE } from '../http/filters.js';
import { SEVERITIES } from './condition.js';

const once = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value, ctx) => {
    if (!Array.isArray(value)) return value;
    ctx.addIssue({ code: 'custom', message: 'must be given once', input: value });
    return z.NEVER;
  }, schema);

const listOf = <T extends z.ZodType<unknown, string>>(item: T) =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((v) =>
      (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).filter((s) => s.trim() !== ''),
    )
    .pipe(z.array(item).max(50, 'at most 50 values'));

const dateTime = z.iso
  .datetime({
    offset: true,
    error: 'must be an ISO 8601 date-time with Z or an offset, e.g. 2025-05-01T00:00:00Z',
  })
  .transform((v) => Date.parse(v));

export const alertsQuerySchema = z
  .object({
    rule: listOf(
      z
        .string()
        .trim()
        .regex(/^[1-9][0-9]{0,15}$/, 'must be rule ids')
        .transform(Number),
    )
      .optional()
      .meta({ description: 'Rule ids; repeat or comma-separate.' }),
    severity: listOf(z.enum(SEVERITIES, { error: `must be one of ${SEVERITIES.join(', ')}` }))
      .optional()
      .meta({ description: 'Severities; repeat or comma-separate.' }),
    start: once(dateTime).optional().meta({ description: 'Fired at or after (ISO 8601).' }),
    end: once(dateTime).optional().meta({ description: 'Fired before (ISO 8601).' }),
    limit: once(limitParam(AUDIT_PAGE)).default(AUDIT_PAGE.default),
    cursor: once(z.string().max(200, 'is not a cursor this API issued'))
      .optional()
      .meta({ description: CURSOR_DESCRIPTION }),
  })
  .superRefine((v, ctx) => {
    if (v.start !== undefined && v.end !== undefined && v.end <= v.start) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: 'must be after start' });
    }
  });

export const alertsPosition = z.strictObject({
  k: z.literal('alerts'),
  d: z.enum(['next', 'prev']),
  at: z.int().nonnegative(),
  id: z.int().positive(),
});
