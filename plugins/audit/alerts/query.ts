/** `GET /api/alerts` query parameters and its cursor's position. */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam } from '../../../src/http/schemas.js';
import { AUDIT_PAGE, dateTime, listOf, single } from '../http/filters.js';
import { SEVERITIES } from './schemas.js';

export const alertsQuerySchema = z
  .object({
    rule: listOf(
      z
        .string()
        .trim()
        .regex(/^[1-9][0-9]{0,15}$/, 'must be rule ids')
        .transform(Number),
      50,
    )
      .optional()
      .meta({ description: 'Rule ids; repeat or comma-separate.' }),
    severity: listOf(z.enum(SEVERITIES, { error: `must be one of ${SEVERITIES.join(', ')}` }), 50)
      .optional()
      .meta({ description: 'Severities; repeat or comma-separate.' }),
    start: single(dateTime).optional().meta({ description: 'Fired at or after (ISO 8601).' }),
    end: single(dateTime).optional().meta({ description: 'Fired before (ISO 8601).' }),
    limit: single(limitParam(AUDIT_PAGE)).default(AUDIT_PAGE.default),
    cursor: single(z.string().max(200, 'is not a cursor this API issued'))
      .optional()
      .meta({ description: CURSOR_DESCRIPTION }),
  })
  .superRefine((v, ctx) => {
    if (v.start !== undefined && v.end !== undefined && v.end <= v.start) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: 'must be after start' });
    }
  });
