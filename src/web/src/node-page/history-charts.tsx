/** The node's history: range, one chart per metric it reports, and the CSV of exactly what is drawn. */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { isAbort } from '../api/client.js';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { chartSeries } from '../lib/chart-series.js';
import { csvFileName, historyCsv } from '../lib/csv.js';
import { formatDateTime } from '../lib/format.js';
import { type HistoryPlan, planHistory, rangeFromQuery } from '../lib/history-plan.js';
import type { ReadingJson } from '../lib/metrics.js';
import { type ApiError, plainWords } from '../lib/problem.js';
import { displayMetrics } from '../lib/units.js';
import { navigate } from '../router.js';
import { displayStore, themeStore } from '../state/display.js';
import { hubStore } from '../state/hub.js';
import { onLiveReadings } from '../state/mesh.js';
import { siteNames, sitesStore } from '../state/sites.js';
import { loadHistory } from './history-loader.js';
import { MetricCharts } from './metric-chart.js';
import { RangePicker } from './range-picker.js';

type Loaded =
  | { status: 'loading' }
  | { status: 'ready'; rows: ReadingJson[]; truncated: boolean }
  | { status: 'error'; error: ApiError };

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function HistoryCharts({
  nodeId,
  search,
  site,
}: {
  nodeId: string;
  search: string;
  /** The upstream: only what this site heard (kept in the URL when the range changes). */
  site?: string | undefined;
}) {
  const choice = useMemo(() => rangeFromQuery(search), [search]);
  const [attempt, setAttempt] = useState(0);
  const plan = useMemo(() => planHistory(choice, Date.now()), [choice, attempt]);
  const [loaded, setLoaded] = useState<Loaded>({ status: 'loading' });

  useEffect(() => {
    if ('error' in plan) return;
    const controller = new AbortController();
    setLoaded({ status: 'loading' });
    loadHistory(nodeId, plan, controller.signal, site).then(
      (history) => setLoaded({ status: 'ready', ...history }),
      (error: unknown) => {
        if (!isAbort(error)) setLoaded({ status: 'error', error: error as ApiError });
      },
    );
    return () => controller.abort();
  }, [nodeId, plan, site]);

  useEffect(() => {
    // A range that ends now grows with every reading of this node (raw only: means are per bucket).
    if ('error' in plan || !plan.live || plan.interval !== 'raw') return;
    return onLiveReadings((readings) => {
      const mine = readings.filter(
        (r) => r.node_id === nodeId && (!site || r.site_id === site) && Date.parse(r.timestamp) >= plan.start,
      );
      if (mine.length === 0) return;
      setLoaded((current) => {
        if (current.status !== 'ready') return current;
        const known = new Set(current.rows.map((r) => r.timestamp));
        const added = mine.filter((r) => !known.has(r.timestamp));
        if (added.length === 0) return current;
        const rows = [...current.rows, ...added].sort((a, b) => a.timestamp.localeCompare(b.timestamp));
        return { ...current, rows };
      });
    });
  }, [nodeId, plan, site]);

  const connection = useStore(hubStore).connection;
  const failedOffline = loaded.status === 'error' && loaded.error.status === 0;
  useEffect(() => {
    // The hub is back (the live stream reconnected): try again without being asked.
    if (connection === 'open' && failedOffline) setAttempt((n) => n + 1);
  }, [connection, failedOffline]);

  const rows = loaded.status === 'ready' ? loaded.rows : [];
  // The upstream charts one site's series: the one asked for, else the one that heard the node last.
  const { sites } = useStore(sitesStore);
  const seriesSite = rows[0]?.site_id;
  const seriesSiteName = seriesSite ? (siteNames(sites).get(seriesSite) ?? seriesSite) : undefined;
  const metrics = displayMetrics(useStore(displayStore));
  const theme = useStore(themeStore);
  const series = useMemo(
    () =>
      chartSeries(
        rows,
        metrics,
        'error' in plan ? undefined : { start: plan.start, end: plan.end, interval: plan.interval },
      ),
    [rows, metrics, plan],
  );

  let body: ComponentChildren;
  if ('error' in plan) {
    body = <p class="form-error">{plan.error}</p>;
  } else if (loaded.status === 'loading') {
    body = (
      <p class="loading" role="status">
        {t('mesh.loadingHistory')}
      </p>
    );
  } else if (loaded.status === 'error') {
    body = (
      <div class="notice notice-error" role="alert">
        <p>
          {t('mesh.historyFailed')} {plainWords(loaded.error)}
          {loaded.error.status === 0 && ` ${t('mesh.loadsWhenBack')}`}
        </p>
        <button type="button" class="button" onClick={() => setAttempt((n) => n + 1)}>
          {t('common.tryAgain')}
        </button>
      </div>
    );
  } else if (series.present.length === 0) {
    body = (
      <p class="muted" data-testid="no-history">
        {t('mesh.noHistory')}
      </p>
    );
  } else {
    body = <MetricCharts series={series} interval={plan.interval} theme={theme} />;
  }

  return (
    <section class="panel history" aria-labelledby="history-heading">
      <div class="history-head">
        <h2 id="history-heading">{t('mesh.history')}</h2>
        <RangePicker
          choice={choice}
          onChoose={(range) => {
            const query = [site ? `site=${encodeURIComponent(site)}` : '', range].filter(Boolean).join('&');
            navigate(`${location.pathname}${query ? `?${query}` : ''}`, { replace: true });
          }}
        />
      </div>
      {!('error' in plan) && (
        <p class="muted small history-range" data-interval={plan.interval}>
          {formatDateTime(plan.start)} – {formatDateTime(plan.end)}, {t(`mesh.interval.${plan.interval}`)}
          {loaded.status === 'ready' &&
            ` · ${t(plan.interval === 'raw' ? 'mesh.readingCount' : 'mesh.valueCount', { count: loaded.rows.length })}`}
          {loaded.status === 'ready' && loaded.truncated && ` ${t('mesh.truncated')}`}
          {seriesSiteName && (
            <span data-testid="history-site">{` · ${t('mesh.asSiteHeard', { site: seriesSiteName })}`}</span>
          )}
        </p>
      )}
      {body}
      {!('error' in plan) && loaded.status === 'ready' && series.present.length > 0 && (
        <button
          type="button"
          class="button button-secondary"
          data-testid="download-csv"
          onClick={() =>
            download(
              csvFileName(nodeId, plan.start, plan.end, plan.interval),
              historyCsv(rows, series.present),
            )
          }
        >
          {t('mesh.downloadCsv')}
        </button>
      )}
    </section>
  );
}

export type { HistoryPlan };
