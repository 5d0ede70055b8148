/**
 * Dropdown values for the filters (spec: `/api/filter-options`): services, operations and
 * results that at least one stored event has, and the tags in use. Each list is an index
 * skip-scan or a probe per dictionary entry — never a pass over the events.
 * Gated services and operations are left out for callers who may not see them, and so are
 * operations, results and tags that occur only on gated events (issue 14: a tag used only on
 * gated events told a caller without the role that such events exist). Services come with the
 * names the UI shows (`service_labels`).
 * Issue 29: `tenants` lists the tenants with stored events that the caller sees (AUDIT_ROLE_TENANTS);
 * a caller limited to some tenants gets only the values that occur in theirs.
 */
import type { Database } from '../../../src/store/database.js';
import { type PrivacyScope, STORED_SERVICES } from './event-query.js';
import { serviceDisplayName } from './service-names.js';

export interface FilterOptions {
  services: string[];
  /** How the UI shows each service: `{ "exchange": "Exchange" }`. */
  service_labels: Record<string, string>;
  operations: string[];
  results: string[];
  tags: string[];
  /** Tenants (short names) with stored events that the caller sees. */
  tenants: string[];
}

const MAX_TAG_OPTIONS = 1_000;

/** The services of the stored events, each once (a skip scan of the service index, not a full scan). */
export function storedServices(db: Database): string[] {
  return db.prepare(STORED_SERVICES).pluck().all() as string[];
}

export function filterOptions(db: Database, privacy?: PrivacyScope): FilterOptions {
  const hiddenServices = new Set(privacy?.hiddenServices.map((s) => s.toLowerCase()) ?? []);
  const hiddenOperations = new Set(privacy?.hiddenOperations.map((o) => o.toLowerCase()) ?? []);
  const hidden = JSON.stringify([...hiddenServices]);

  // The tenants with events (a probe per tenant on (tenant_id, ts)), and those the caller sees.
  const stored = db
    .prepare(`
      SELECT id, name FROM audit_tenants n
      WHERE EXISTS (SELECT 1 FROM audit_events e INDEXED BY audit_events_tenant_cover WHERE e.tenant_id = n.id)
      ORDER BY name`)
    .raw(true)
    .all() as Array<[number, string]>;
  const seen = privacy?.tenants ? new Set(privacy.tenants) : undefined;
  const visibleTenants = seen ? stored.filter(([, name]) => seen.has(name)) : stored;
  const tenants = visibleTenants.map(([, name]) => name);
  // Limited to some tenants: every other value must occur on an event of one of them.
  const limited = seen !== undefined;
  const tenantIds = JSON.stringify(visibleTenants.map(([id]) => id));
  const inTenants = limited ? ' AND e.tenant_id IN (SELECT value FROM json_each(?))' : '';
  const tenantParams = limited ? [tenantIds] : [];

  const serviceInTenants = limited
    ? db.prepare(
        `SELECT 1 FROM audit_events e INDEXED BY audit_events_service_cover WHERE e.service = ?${inTenants} LIMIT 1`,
      )
    : undefined;
  const services = storedServices(db).filter(
    (s) =>
      !hiddenServices.has(s.toLowerCase()) &&
      (!serviceInTenants || serviceInTenants.get(s, ...tenantParams) !== undefined),
  );

  const operations = (
    db
      .prepare(`
        SELECT o.name FROM audit_operations o
        WHERE EXISTS (
          SELECT 1 FROM audit_events e INDEXED BY audit_events_operation_ts
          WHERE e.operation_id = o.id AND lower(e.service) NOT IN (SELECT value FROM json_each(?))${inTenants})
        ORDER BY o.folded, o.name`)
      .pluck()
      .all(hidden, ...tenantParams) as string[]
  ).filter((o) => !hiddenOperations.has(o.toLowerCase()));

  // A row is visible when neither its service nor its operation is gated for this caller, and
  // its tenant is one they see.
  const gated = hiddenServices.size > 0 || hiddenOperations.size > 0 || limited;
  const hiddenOperationIds = JSON.stringify(
    gated
      ? (db
          .prepare('SELECT id FROM audit_operations WHERE folded IN (SELECT value FROM json_each(?))')
          .pluck()
          .all(JSON.stringify([...hiddenOperations])) as number[])
      : [],
  );
  const visible = `lower(e.service) NOT IN (SELECT value FROM json_each(?))
    AND e.operation_id NOT IN (SELECT value FROM json_each(?))${inTenants}`;

  const results = db
    .prepare(`
      SELECT DISTINCT r.normalized FROM audit_results r
      WHERE EXISTS (
        SELECT 1 FROM audit_events e INDEXED BY audit_events_result_cover
        WHERE e.result_id = r.id AND ${visible})
      ORDER BY 1`)
    .pluck()
    .all(hidden, hiddenOperationIds, ...tenantParams) as string[];

  const candidates = db
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
  // A probe per tag (at most MAX_TAG_OPTIONS), walking that tag's rows until a visible one.
  const tagVisible = gated
    ? db
        .prepare(`
          SELECT 1 FROM audit_event_tags t CROSS JOIN audit_events e ON e.seq = t.seq
          WHERE t.tag = ? AND ${visible} LIMIT 1`)
        .pluck()
    : undefined;
  const tags = tagVisible
    ? candidates.filter(
        (tag) => tagVisible.get(tag, hidden, hiddenOperationIds, ...tenantParams) !== undefined,
      )
    : candidates;

  const service_labels = Object.fromEntries(services.map((s) => [s, serviceDisplayName(s)]));
  return { services, service_labels, operations, results, tags, tenants };
}
