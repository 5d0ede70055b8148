/**
 * Running a saved search: its filters as the search takes them at a given moment (a relative
 * range counted back from then), and as an alert rule's condition (alerts/matcher.ts): "does this
 * stored event match?" is asked of the search's own query (store/event-query.ts), one event's
 * (ts, seq) position, so a rule matches exactly the events the search finds — whatever filters
 * the search takes. A rule looks at each new event: the saved time range is ignored.
 */

import type { AlertableEvent, SavedSearchTest } from '../alerts/matcher.js';
import { searchQuerySchema, toEventFilters } from '../http/filters.js';
import type { AuditStore } from '../store/audit-store.js';
import { SavedSearchRepository } from './repository.js';
import { savedFiltersSchema } from './schemas.js';

/**
 * The saved filters as the search takes them at `now`: `last` becomes `start` (now − last). For
 * an alert rule (`streaming`), the time range is left out altogether.
 */
export function filtersToRun(
  saved: Record<string, unknown>,
  now: number,
  streaming = false,
): Record<string, unknown> {
  const { last, start, end, ...rest } = saved;
  if (streaming) return rest;
  const ms = last === undefined ? undefined : savedFiltersSchema.shape.last.parse(last);
  return {
    ...rest,
    ...(ms !== undefined ? { start: new Date(now - ms).toISOString() } : {}),
    ...(start !== undefined ? { start } : {}),
    ...(end !== undefined ? { end } : {}),
  };
}

/** The saved searches as alert conditions, read from the store's current connection. */
export function savedSearchTests(store: AuditStore): {
  test: SavedSearchTest;
  revision: () => number;
} {
  return {
    revision: () => SavedSearchRepository.on(store.repos().db).revision,
    test: (id) => {
      const row = SavedSearchRepository.on(store.repos().db).get(id);
      if (!row) return undefined;
      const parsed = searchQuerySchema.safeParse(filtersToRun(JSON.parse(row.filters), 0, true));
      if (!parsed.success) return undefined;
      const filters = toEventFilters(parsed.data);
      return (e: AlertableEvent) => {
        // The newest match at the event's timestamp, at or before its seq: the event itself, if it matches.
        const page = store.repos().query.page({
          filters: { ...filters, start: e.timestamp, end: e.timestamp + 1 },
          limit: 1,
          cursor: { direction: 'next', position: { ts: e.timestamp, seq: e.seq + 1 } },
        });
        return page.rows[0]?.seq === e.seq;
      };
    },
  };
}
