/**
 * The audit plugin's Prometheus metrics, registered on the hub's registry so they appear in the
 * hub's one `/metrics` (spec "/metrics: request latency, fetch volume, error counters"; request
 * latency is the hub's `meshhub_http_request_duration_seconds`). Source health gauges are read
 * from the store at scrape time, so they always agree with `GET /api/source-health`.
 */
import type { Counter, Histogram } from 'prom-client';
import { declareCounters } from '../../src/metrics.js';
import type { ModuleMetrics } from '../../src/module.js';
import { DEFAULT_TENANT } from './normalize.js';
import type { SourceName } from './sources.js';
import type { SourceStateRow } from './store/source-state.js';

/**
 * Issue 29: a named tenant's series (AUDIT_TENANTS) carry `tenant="…"`; a single-tenant hub's
 * (`default`) have no tenant label, as before tenants existed, so its dashboards keep working.
 */
function tenantLabel(tenant: string | undefined): { tenant?: string } {
  return tenant === undefined || tenant === DEFAULT_TENANT ? {} : { tenant };
}

export class AuditMetrics {
  private readonly records: Counter<'source' | 'outcome' | 'tenant'>;
  private readonly fetchErrors: Counter<'source' | 'kind' | 'tenant'>;
  private readonly retries: Counter<'source' | 'kind' | 'tenant'>;
  private readonly runs: Histogram<'source' | 'status' | 'tenant'>;
  private readonly rateLimited: Counter<'tier'>;
  private readonly savedRuns: Counter<string>;

  /** Names are prefixed `meshhub_audit_` by the module's metrics factory. */
  constructor(metrics: ModuleMetrics, health: () => SourceStateRow[]) {
    const counters = declareCounters((config) => metrics.counter(config), {
      records_total: [
        'Upstream audit records by source and outcome (fetched, stored, duplicate, malformed)',
        ['source', 'outcome', 'tenant'],
      ],
      fetch_errors_total: [
        'Fetch runs that ended early, by source and kind of failure',
        ['source', 'kind', 'tenant'],
      ],
      fetch_retries_total: [
        'Requests retried after throttling (429, 403 AF429) or unavailability (5xx, network)',
        ['source', 'kind', 'tenant'],
      ],
      rate_limited_total: ['Requests refused by a rate-limit tier', ['tier']],
      saved_search_runs_total: 'Saved searches run (GET /api/saved-searches/{id}/events)',
    });
    this.savedRuns = counters.saved_search_runs_total;
    this.records = counters.records_total;
    this.fetchErrors = counters.fetch_errors_total;
    this.retries = counters.fetch_retries_total;
    this.runs = metrics.histogram({
      name: 'fetch_duration_seconds',
      help: 'Duration of fetch runs by source and final status',
      labelNames: ['source', 'status', 'tenant'],
      buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900],
    });
    this.rateLimited = counters.rate_limited_total;
    const gauge = (name: string, help: string, value: (row: SourceStateRow) => number | null) =>
      metrics.gauge({
        name,
        help,
        labelNames: ['source', 'tenant'],
        collect() {
          this.reset();
          let rows: SourceStateRow[] = [];
          try {
            rows = health();
          } catch {
            return; // the store is closed (hub stopping): no gauges this scrape
          }
          for (const row of rows) {
            const v = value(row);
            if (v !== null) this.set({ source: row.source, ...tenantLabel(row.tenant) }, v);
          }
        },
      });
    gauge('source_up', '1 when the last fetch run of the source completed, else 0', (r) =>
      r.status === 'ok' ? 1 : 0,
    );
    gauge('source_last_attempt_timestamp_seconds', 'Start of the last fetch run', (r) =>
      r.last_attempt_time === null ? null : r.last_attempt_time / 1000,
    );
    gauge('source_last_success_timestamp_seconds', 'Start of the last complete fetch run', (r) =>
      r.last_success_time === null ? null : r.last_success_time / 1000,
    );
    gauge(
      'source_consecutive_failures',
      'Fetch runs in a row that ended early',
      (r) => r.consecutive_failures,
    );
  }

  countRecords(
    source: SourceName,
    c: { fetched?: number; stored?: number; duplicates?: number; malformed?: number },
    tenant?: string,
  ): void {
    const t = tenantLabel(tenant);
    if (c.fetched) this.records.inc({ source, outcome: 'fetched', ...t }, c.fetched);
    if (c.stored) this.records.inc({ source, outcome: 'stored', ...t }, c.stored);
    if (c.duplicates) this.records.inc({ source, outcome: 'duplicate', ...t }, c.duplicates);
    if (c.malformed) this.records.inc({ source, outcome: 'malformed', ...t }, c.malformed);
  }

  fetchFailed(source: SourceName, kind: string, tenant?: string): void {
    this.fetchErrors.inc({ source, kind, ...tenantLabel(tenant) });
  }

  retried(source: SourceName, kind: string, tenant?: string): void {
    this.retries.inc({ source, kind, ...tenantLabel(tenant) });
  }

  runFinished(source: SourceName, status: string, seconds: number, tenant?: string): void {
    this.runs.observe({ source, status, ...tenantLabel(tenant) }, seconds);
  }

  limited(tier: string): void {
    this.rateLimited.inc({ tier });
  }

  savedSearchRun(): void {
    this.savedRuns.inc();
  }
}
