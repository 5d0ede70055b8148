/**
 * Issue 29, an actor's timeline: the query `GET /api/actors/timeline` takes and the JSON it
 * answers (for the OpenAPI document and, type-only, the web console).
 */
import { z } from 'zod';
import { CURSOR_DESCRIPTION, limitParam } from '../../../src/http/schemas.js';
import { CONTROL_CHAR } from '../../../src/kernel/text.js';
import { AUDIT_PAGE, single } from '../http/filters.js';
import { eventPageSchema } from '../http/schemas.js';

export const TIMELINE_DAYS = { default: 30, max: 90 } as const;
const MAX_ACTOR = 512;

const daysMessage = `must be a whole number of days from 1 to ${TIMELINE_DAYS.max}`;

export const timelineQuerySchema = z.object({
  actor: single(
    z
      .string()
      .trim()
      .min(1, 'name the actor, e.g. actor=adele@contoso.com')
      .max(MAX_ACTOR, `must be at most ${MAX_ACTOR} characters`)
      .refine((t) => !CONTROL_CHAR.test(t), 'must not contain control characters'),
  ).meta({ description: 'The actor’s whole name, as events show it (case-insensitive).' }),
  days: single(
    z
      .string()
      .regex(/^[0-9]{1,3}$/, daysMessage)
      .transform(Number)
      .pipe(z.int().min(1, daysMessage).max(TIMELINE_DAYS.max, daysMessage)),
  )
    .optional()
    .meta({
      type: 'integer',
      minimum: 1,
      maximum: TIMELINE_DAYS.max,
      default: TIMELINE_DAYS.default,
      description: `The window: today and the days before it (UTC), 1 to ${TIMELINE_DAYS.max} (default ${TIMELINE_DAYS.default}).`,
    }),
  until: single(
    z.iso
      .date({ error: 'must be a date like 2026-03-31 (the last UTC day of the window)' })
      .refine((d) => Date.parse(`${d}T00:00:00Z`) >= Date.UTC(2000, 0, 1), 'must be 2000-01-01 or later'),
  )
    .optional()
    .meta({
      description:
        'The last UTC day of the window (default today), so an incident months ago has its timeline: `until=2026-03-31&days=30`. Events after that day are left out.',
    }),
  limit: single(limitParam(AUDIT_PAGE)).optional(),
  cursor: single(z.string().max(200, 'is not a cursor this API issued'))
    .optional()
    .meta({ description: CURSOR_DESCRIPTION }),
});

const countSchema = z.object({ events: z.int(), failures: z.int() });

export const timelineSchema = eventPageSchema.extend({
  actor: z.string(),
  window: z.object({
    start: z.iso.datetime().meta({ description: 'Midnight UTC of the first day.' }),
    days: z.int(),
    until: z.iso.date().meta({ description: 'The last UTC day of the window.' }),
  }),
  counts: z
    .array(countSchema.extend({ day: z.iso.date(), service: z.string() }))
    .meta({ description: 'Per UTC day and service, oldest day first; days without events are left out.' }),
  totals: countSchema.extend({
    services: z.array(countSchema.extend({ service: z.string() })),
  }),
});
