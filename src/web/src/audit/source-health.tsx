/**
 * Source health (issue 15 "Source health"): each source's status, last attempt, last success,
 * consecutive failures and the error, and "Fetch now" (POST /api/fetch, for administrators: with
 * AUTH_ENABLED the hub allows it to AUDIT_ADMIN_ROLES only; the button shows only when the
 * source-health answer's `fetch_allowed` says this caller may; it is disabled, with the reason
 * under it, while collection is not configured).
 * Refreshes every 10 s while a fetch runs, every minute otherwise.
 * Issue 29: with several tenants (AUDIT_TENANTS), one table per tenant, under its name.
 */
import { useEffect, useState } from 'preact/hooks';
import { useTitle } from '../hooks.js';
import { t } from '../i18n/index.js';
import { ApiError } from '../lib/problem.js';
import { auditJson, auditWords, collectionNotConfigured } from './audit-api.js';
import { AuditTable } from './audit-table.js';
import type { SourceHealth } from './audit-types.js';
import { shownTime } from './format.js';

const STATUS_WORDS: Record<SourceHealth['data'][number]['status'], { text: string; tone: string }> = {
  ok: { text: 'OK', tone: 'good' },
  running: { text: 'Fetching…', tone: 'warn' },
  pending: { text: 'Not fetched yet', tone: 'unknown' },
  error: { text: 'Failing', tone: 'bad' },
  throttled: { text: 'Throttled', tone: 'warn' },
  not_configured: { text: 'Not configured', tone: 'unknown' },
};

export function SourceHealthView() {
  useTitle('Audit sources');
  const [health, setHealth] = useState<{ data?: SourceHealth; error?: unknown }>({});
  const [tick, setTick] = useState(0);
  const [fetching, setFetching] = useState<{
    busy?: boolean;
    message?: string;
    error?: unknown;
    /** A 429's Retry-After: the button waits until then. */
    holdUntil?: number;
  }>({});
  useEffect(() => {
    if (fetching.holdUntil === undefined) return;
    const timer = setTimeout(
      () => setFetching(({ holdUntil: _h, ...rest }) => rest),
      Math.max(0, fetching.holdUntil - Date.now()),
    );
    return () => clearTimeout(timer);
  }, [fetching.holdUntil]);

  useEffect(() => {
    const controller = new AbortController();
    auditJson<SourceHealth>('/api/source-health', { signal: controller.signal }).then(
      (data) => setHealth({ data }),
      (error: unknown) => {
        if (!controller.signal.aborted) setHealth((h) => ({ ...h, error }));
      },
    );
    return () => controller.abort();
  }, [tick]);

  const running = health.data?.data.some((s) => s.status === 'running');
  // Without credentials a fetch can only be refused (409): the button is off and says why.
  const notConfigured = health.data?.collection === 'not_configured';
  useEffect(() => {
    const timer = setTimeout(() => setTick((t) => t + 1), running ? 2_000 : 60_000);
    return () => clearTimeout(timer);
  }, [tick, running]);

  const fetchNow = () => {
    setFetching({ busy: true });
    auditJson<{ status: string; sources: string[] }>('/api/fetch', { method: 'POST' }).then(
      (answer) => {
        setFetching({
          message:
            answer.status === 'already_queued'
              ? 'A fetch was already queued; it runs shortly.'
              : `Fetch started for ${answer.sources.join(', ')}.`,
        });
        setTick((t) => t + 1);
      },
      (error: unknown) => {
        const wait =
          error instanceof ApiError && error.status === 429 ? error.extras.retryAfterSeconds : undefined;
        setFetching({ error, ...(wait !== undefined ? { holdUntil: Date.now() + wait * 1000 } : {}) });
      },
    );
  };

  return (
    <section class="panel audit-sources" aria-labelledby="sources-title">
      <div class="audit-section-head">
        <h1 id="sources-title">{t('audit.sources')}</h1>
        {/* Only for callers the hub lets fetch (AUDIT_ADMIN_ROLES); it says so per caller. */}
        {health.data?.fetch_allowed && (
          <button
            type="button"
            class="button button-small"
            disabled={notConfigured || fetching.busy || fetching.holdUntil !== undefined}
            aria-describedby="fetch-status"
            onClick={fetchNow}
          >
            {fetching.busy ? 'Asking the hub…' : 'Fetch now'}
          </button>
        )}
      </div>
      <p
        role="status"
        id="fetch-status"
        class={fetching.error !== undefined ? 'form-error' : notConfigured ? 'notice-info' : 'muted small'}
        data-testid="fetch-status"
      >
        {fetching.error !== undefined
          ? auditWords(fetching.error)
          : notConfigured
            ? `${collectionNotConfigured()} ${t('audit.searchStillWorks')}`
            : (fetching.message ?? '')}
      </p>
      {health.error !== undefined && (
        <p class="form-error" role="alert">
          {auditWords(health.error)}
        </p>
      )}
      {!health.data && health.error === undefined && (
        <p class="loading" role="status">
          {t('audit.loading')}
        </p>
      )}
      {health.data &&
        groupByTenant(health.data.data).map(([tenant, rows], _, groups) =>
          groups.length === 1 ? (
            <SourceTable key={tenant} rows={rows} />
          ) : (
            <div key={tenant} class="audit-tenant" data-tenant={tenant}>
              <h2 class="audit-tenant-name">{`Tenant ${tenant}`}</h2>
              <SourceTable rows={rows} tenant={tenant} />
            </div>
          ),
        )}
    </section>
  );
}

type SourceRow = SourceHealth['data'][number];

/** The rows by tenant, in the order the hub lists them (tenants in AUDIT_TENANTS order). */
function groupByTenant(rows: readonly SourceRow[]): Array<[string, SourceRow[]]> {
  const groups = new Map<string, SourceRow[]>();
  for (const row of rows) groups.set(row.tenant, [...(groups.get(row.tenant) ?? []), row]);
  return [...groups];
}

function SourceTable({ rows, tenant }: { rows: readonly SourceRow[]; tenant?: string }) {
  return (
    <AuditTable
      testId={tenant === undefined ? 'source-health' : `source-health-${tenant}`}
      caption={
        tenant === undefined ? t('audit.healthOfEachAudit') : `${t('audit.healthOfEachAudit')} (${tenant})`
      }
      columns={['Source', 'Status', 'Last attempt', 'Last success', 'Failures in a row', 'Stored', 'Error']}
    >
      {rows.map((s) => {
        const status = STATUS_WORDS[s.status];
        return (
          <tr key={`${s.tenant}/${s.source}`} data-source={s.source} data-tenant={s.tenant}>
            <th scope="row" data-label={t('audit.source')}>
              {s.source}
            </th>
            <td data-label={t('audit.status')}>
              <span class={`pill pill-${status.tone}`}>
                <span class="dot" aria-hidden="true" />
                {status.text}
              </span>
            </td>
            <td data-label={t('audit.lastAttempt')}>{shownTime(s.last_attempt_time)}</td>
            <td data-label={t('audit.lastSuccess')}>{shownTime(s.last_success_time)}</td>
            <td data-label={t('audit.failuresInARow')}>{s.consecutive_failures}</td>
            <td data-label={t('audit.stored')}>{s.events_stored.toLocaleString()}</td>
            <td data-label={t('audit.error')} class="source-error">
              {s.error ?? '—'}
            </td>
          </tr>
        );
      })}
    </AuditTable>
  );
}
