/**
 * A node's device health on its page: battery, voltage, channel utilisation, air utilisation TX
 * and SNR over the range the history charts show (the same range picker in the URL and the same
 * interval plan, lib/history-plan.ts), drawn with the weather charts' MetricChart; its uptime as
 * text ("up 3 d 4 h"); and on the hub's own node, its airtime against the budget.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { AirtimeJson, HealthSampleJson } from '../../../device-health/schemas.js';
import { isAbort, request } from '../api/client.js';
import { useStore } from '../hooks.js';
import { t } from '../i18n/index.js';
import { chartSeries } from '../lib/chart-series.js';
import { formatNumber } from '../lib/format.js';
import { planHistory, rangeFromQuery } from '../lib/history-plan.js';
import type { MetricInfo, ReadingJson } from '../lib/metrics.js';
import { themeStore } from '../state/display.js';
import { readToken } from '../state/read-access.js';
import { loadPages, PAGE_LIMIT } from './history-loader.js';
import { MetricCharts } from './metric-chart.js';

type HealthKey = 'battery_level' | 'voltage' | 'channel_utilization' | 'air_util_tx' | 'snr';
const same = (v: number) => v;
const metric = (key: HealthKey, unit: string, digits: number): MetricInfo =>
  // The weather charts' MetricInfo, keyed by a device health field (chartSeries reads rows by key);
  // its label a getter, so it follows the language.
  ({
    key,
    get label() {
      return t(`mesh.health.${key}`);
    },
    unit,
    digits,
    csvColumn: key,
    chart: 'line',
    display: same,
  }) as unknown as MetricInfo;

export const HEALTH_METRICS: readonly MetricInfo[] = [
  metric('battery_level', '%', 0),
  metric('voltage', 'V', 2),
  metric('channel_utilization', '%', 1),
  metric('air_util_tx', '%', 2),
  metric('snr', 'dB', 1),
];

/** `up 3 d 4 h`, `up 2 h 5 min`, `up 40 s`. */
export function uptimeText(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3_600);
  const m = Math.floor((seconds % 3_600) / 60);
  const span =
    d > 0
      ? `${d} d ${h} h`
      : h > 0
        ? `${h} h ${m} min`
        : m > 0
          ? `${m} min`
          : `${Math.max(0, Math.floor(seconds))} s`;
  return t('mesh.uptime', { span });
}

type Loaded = { status: 'loading' } | { status: 'ready'; rows: HealthSampleJson[] } | { status: 'error' };

export function DeviceHealthCharts({
  nodeId,
  search,
  isHub,
}: {
  nodeId: string;
  search: string;
  isHub: boolean;
}) {
  const plan = useMemo(() => planHistory(rangeFromQuery(search), Date.now()), [search]);
  const [loaded, setLoaded] = useState<Loaded>({ status: 'loading' });
  const [latest, setLatest] = useState<HealthSampleJson | undefined>(undefined);
  const [airtime, setAirtime] = useState<AirtimeJson['data'] | undefined>(undefined);
  const theme = useStore(themeStore);

  useEffect(() => {
    if ('error' in plan) return;
    const controller = new AbortController();
    const params = new URLSearchParams({
      start: new Date(plan.start).toISOString(),
      end: new Date(plan.end).toISOString(),
      interval: plan.interval,
      limit: String(PAGE_LIMIT),
    });
    setLoaded({ status: 'loading' });
    loadPages<HealthSampleJson>(
      `/api/v1/nodes/${encodeURIComponent(nodeId)}/device-health?${params}`,
      controller.signal,
    ).then(
      ({ rows }) => setLoaded({ status: 'ready', rows }),
      (error: unknown) => {
        if (!isAbort(error)) setLoaded({ status: 'error' });
      },
    );
    return () => controller.abort();
  }, [nodeId, plan]);

  useEffect(() => {
    const controller = new AbortController();
    const options = { signal: controller.signal, token: readToken() };
    request<{ data: HealthSampleJson[] }>(
      `/api/v1/device-health/latest?node_id=${encodeURIComponent(nodeId)}`,
      options,
    ).then(
      (r) => setLatest(r.body.data[0]),
      () => undefined,
    );
    if (isHub)
      request<AirtimeJson>('/api/v1/radio/airtime', options).then(
        (r) => setAirtime(r.body.data),
        () => undefined,
      );
    return () => controller.abort();
  }, [nodeId, isHub]);

  const rows = loaded.status === 'ready' ? loaded.rows : [];
  const series = useMemo(
    () =>
      chartSeries(
        rows as unknown as ReadingJson[],
        HEALTH_METRICS,
        'error' in plan ? undefined : { start: plan.start, end: plan.end, interval: plan.interval },
      ),
    [rows, plan],
  );
  if ('error' in plan) return null;

  return (
    <section class="panel device-health" aria-labelledby="device-health-heading" data-testid="device-health">
      <h2 id="device-health-heading">{t('mesh.deviceHealth')}</h2>
      {latest?.uptime_seconds !== undefined && (
        <p class="muted small" data-testid="uptime">
          {uptimeText(latest.uptime_seconds)}
          {latest.noise_floor !== undefined &&
            ` · ${t('mesh.noiseFloor', { value: formatNumber(latest.noise_floor, 0) })}`}
        </p>
      )}
      {airtime && <AirtimeBar airtime={airtime} />}
      {loaded.status === 'loading' && (
        <p class="loading" role="status">
          {t('mesh.loadingHealth')}
        </p>
      )}
      {loaded.status === 'error' && <p class="form-error">{t('mesh.healthFailed')}</p>}
      {loaded.status === 'ready' && series.present.length === 0 && (
        <p class="muted" data-testid="no-device-health">
          {t('mesh.noHealth')}
        </p>
      )}
      {series.present.length > 0 && <MetricCharts series={series} interval={plan.interval} theme={theme} />}
    </section>
  );
}

/** The hub's own use of airtime over the last hour against the budget its send queue paces to. */
function AirtimeBar({ airtime }: { airtime: AirtimeJson['data'] }) {
  const budget = airtime.budget_percent;
  return (
    <div class="airtime" data-testid="airtime">
      <p class="small">
        {t('mesh.airtime', { value: formatNumber(airtime.used_percent, 2) })}
        {budget !== undefined && ` ${t('mesh.airtimeBudget', { value: formatNumber(budget, 0) })}`} (
        {t('mesh.textsSent', { count: airtime.sent_packets })})
        {airtime.radio?.channel_utilization !== undefined &&
          ` · ${t('mesh.channelInUse', { value: formatNumber(airtime.radio.channel_utilization, 1) })}`}
        {airtime.radio?.air_util_tx !== undefined &&
          ` · ${t('mesh.radioTx', { value: formatNumber(airtime.radio.air_util_tx, 2) })}`}
      </p>
      {budget !== undefined && (
        <meter
          class="airtime-bar"
          min={0}
          max={budget}
          value={Math.min(budget, airtime.used_percent)}
          aria-label={t('mesh.airtimeLabel')}
        />
      )}
    </div>
  );
}
