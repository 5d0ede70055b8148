/**
 * Dropdown values for the filters (spec: `/api/filter-options`): services, operations and
 * results that at least one stored event has, and the tags in use. Each list is an index
 * skip-scan or a probe per dictionary entry — never a pass over the events.
 * Gated services and operations are left out for callers who may not see them, and so are
 * operations that occur only in gated services.
 */
import type { Database } from '../../../src/store/database.js';
import type { PrivacyScope } from './event-query.js';

export interface FilterOptions {
  services: string[];
  operations: string[];
  results: string[];
  tags: string[];
}

const MAX_TAG_OPTIONS = 1_000;

export function filterOptions(db: Database, privacy?: PrivacyScope): FilterOptions {
  const hiddenServices = new Set(privacy?.hiddenServices.map((s) => s.toLowerCase()) ?? []);
  const hiddenOperations = new Set(privacy?.hiddenOperations.map((o) => o.toLowerCase()) ?? []);
  const hidden = JSON.stringify([...hiddenServices]);

  const services = (
    db
      .prepare(`
        WITH RECURSIVE s(v) AS (
          SELECT (SELECT min(service) FROM audit_events INDEXED BY audit_events_service_ts)
          UNION ALL
          SELECT (SELECT min(service) FROM audit_events INDEXED BY audit_events_service_ts WHERE service > s.v)
          FROM s WHERE s.v IS NOT NULL
        )
        SELECT v FROM s WHERE v IS NOT NULL`)
      .pluck()
      .all() as string[]
  ).filter((s) => !hiddenServices.has(s.toLowerCase()));

  const operations = (
    db
      .prepare(`
        SELECT o.name FROM audit_operations o
        WHERE EXISTS (
          SELECT 1 FROM audit_events e INDEXED BY audit_events_operation_ts
          WHERE e.operation_id = o.id AND lower(e.service) NOT IN (SELECT value FROM json_each(?)))
        ORDER BY o.folded, o.name`)
      .pluck()
      .all(hidden) as string[]
  ).filter((o) => !hiddenOperations.has(o.toLowerCase()));

  const results = db
    .prepare(`
      SELECT DISTINCT r.normalized FROM audit_results r
      WHERE EXISTS (SELECT 1 FROM audit_events e INDEXED BY audit_events_result_ts WHERE e.result_id = r.id)
      ORDER BY 1`)
    .pluck()
    .all() as string[];

  const tags = db
    .prepare(`
      WITH RECURSIVE t(v, n) AS (
        SELECT (SELECT min(tag) FROM audit_event_tags), 1
        UNION ALL
        SELECT (SELECT min(tag) FROM audit_event_tags WHERE tag > t.v), n + 1
        FROM t WHERE t.v IS NOT NULL AND n < ?
      )
      SELECT v FROM t WHERE v IS NOT NULL`)
    .pluck()
    .all(MAX_TAG_OPTIONS) as string[];

  return { services, operations, results, tags };
}
