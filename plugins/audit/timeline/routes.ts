/**
 * Issue 29, `GET /api/actors/timeline`: one actor's events across services, newest first, with
 * the same event JSON and cursor as `GET /api/events`, and counts per UTC day and service
 * (failures apart) over the window.
 *
 * The page is one index walk over the actor's (actor_id, ts) entries (store/event-query.ts),
 * limit + 1 rows; the counts read the per-day rollup (store/actor-days.ts), at most a row per
 * day, tenant, service and operation of the actor in the window (at most 90 days). The privacy scope applies to both through the same WHERE
 * clauses, so the counts never count an event the list would hide. An actor nobody has seen
 * (or only in events hidden from the caller) is an empty timeline, not a 404: a 404 would say
 * the name exists behind the privacy gate.
 */
import type { Hono } from 'hono';
import type { OperationSpec, ResponseSpec } from '../../../src/http/openapi.js';
import { validationProblem } from '../../../src/http/problem.js';
import { type AuditEnv, callerOf } from '../http/context.js';
import { readEventsCursor } from '../http/cursor.js';
import { eventPageJson } from '../http/event-json.js';
import { AUDIT_PAGE, queryObject } from '../http/filters.js';
import { checkedOperation } from '../http/operation.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import type { AuditStore } from '../store/audit-store.js';
import type { EventFilters } from '../store/event-query.js';
import { TIMELINE_DAYS, timelineQuerySchema, timelineSchema } from './schemas.js';

const DAY_MS = 86_400_000;

export function timelineOperations(signedIn: Record<number, ResponseSpec>): OperationSpec[] {
  return [
    checkedOperation(signedIn, {
      method: 'get',
      path: '/api/actors/timeline',
      operationId: 'actorTimeline',
      tag: 'events',
      summary: 'One actor’s events across services, newest first, with counts per day and service',
      description:
        'The page is `GET /api/events`’s (same events, same cursors); `counts` and `totals` cover the whole window. Privacy-gated events are left out of both for callers without the role. An actor with no visible events gets an empty timeline.',
      params: { query: timelineQuerySchema },
      responses: { 200: { description: 'The timeline.', body: timelineSchema } },
    }),
  ];
}

export function timelineRoutes(
  deps: { store: AuditStore; privacy: PrivacyPolicy; now?: () => number },
  app: Hono<AuditEnv>,
): void {
  app.get('/timeline', (c) => {
    const parsed = timelineQuerySchema.safeParse(queryObject(c.req.queries()));
    if (!parsed.success) throw validationProblem(parsed.error);
    const q = parsed.data;
    const cursor = q.cursor === undefined ? undefined : readEventsCursor(q.cursor);
    const days = q.days ?? TIMELINE_DAYS.default;
    const limit = q.limit ?? AUDIT_PAGE.default;
    const today = Math.floor((deps.now ?? Date.now)() / DAY_MS) * DAY_MS;
    // Up to today the window has no end (a clock-skewed event from "tomorrow" still shows);
    // with `until` it ends with that day.
    const last = q.until === undefined ? today : Date.parse(`${q.until}T00:00:00Z`);
    const start = last - (days - 1) * DAY_MS;
    const filters: EventFilters = {
      actorExact: q.actor,
      start,
      ...(q.until === undefined ? {} : { end: last + DAY_MS }),
    };
    const scope = deps.privacy.scopeFor(callerOf(c));
    const repos = deps.store.repos();
    const page = repos.query.page({ filters, privacy: scope, limit, ...(cursor ? { cursor } : {}) });
    const events = eventPageJson(repos, page, limit);
    const daily = repos.query.daily(filters, scope);
    const services = new Map<string, { events: number; failures: number }>();
    for (const d of daily) {
      const s = services.get(d.service) ?? { events: 0, failures: 0 };
      s.events += d.events;
      s.failures += d.failures;
      services.set(d.service, s);
    }
    return c.json({
      actor: q.actor,
      window: {
        start: new Date(start).toISOString(),
        days,
        until: new Date(last).toISOString().slice(0, 10),
      },
      ...events,
      counts: daily.map((d) => ({
        day: new Date(d.day * DAY_MS).toISOString().slice(0, 10),
        service: d.service,
        events: d.events,
        failures: d.failures,
      })),
      totals: {
        events: daily.reduce((n, d) => n + d.events, 0),
        failures: daily.reduce((n, d) => n + d.failures, 0),
        services: [...services].map(([service, n]) => ({ service, ...n })),
      },
    });
  });
}
