/**
 * One node: who it is, its latest values with units, and its history as charts. On the upstream
 * it names the sites that heard it; `?site=` narrows the history to what one of them heard.
 */

import { FreshnessDot } from '../dashboard/node-list.js';
import { useNow, useStore, useTitle } from '../hooks.js';
import {
  cardinal,
  formatAge,
  formatCoordinates,
  formatMetric,
  formatNumber,
  formatTime,
} from '../lib/format.js';
import { freshness } from '../lib/freshness.js';
import {
  displayName,
  hasPosition,
  heardBy,
  isSensorOnly,
  lastHeard,
  nodeIdFromNum,
} from '../lib/mesh-state.js';
import { batteryLabel, renumberedFrom, wasWords } from '../lib/node-view.js';
import { plainWords } from '../lib/problem.js';
import { chatPath, nodePath, siteParam } from '../lib/routes.js';
import { displayMetrics } from '../lib/units.js';
import { Link } from '../router.js';
import { hubStore } from '../state/hub.js';
import { meshStore, refreshMesh } from '../state/mesh.js';
import { siteNames, sitesStore } from '../state/sites.js';
import { TopologyPanel } from '../topology/topology-panel.js';
import { DeviceHealthCharts } from './device-health-charts.js';
import { HistoryCharts } from './history-charts.js';
import './node-page.css';
import { t } from '../i18n/index.js';
import { displayStore } from '../state/display.js';

export function NodePage({ nodeId, search }: { nodeId: string; search: string }) {
  const view = useStore(meshStore);
  const hub = useStore(hubStore);
  const now = useNow(30_000);
  const { sites } = useStore(sitesStore);
  const catalogue = displayMetrics(useStore(displayStore));
  const upstream = hub.mode === 'upstream';
  const site = upstream ? siteParam(search) : undefined;
  const node = view.mesh.nodes.get(nodeId);
  const latest = view.mesh.latest.get(nodeId);
  const name = displayName(node, nodeId);
  useTitle(name);

  if (!view.loaded) {
    if (view.error) {
      return (
        <section class="panel notice notice-error" role="alert">
          <h1>{nodeId}</h1>
          <p>{plainWords(view.error)}</p>
          <button type="button" class="button" onClick={() => void refreshMesh()}>
            {t('common.tryAgain')}
          </button>
        </section>
      );
    }
    return (
      <p class="loading" role="status">
        {t('common.loading')}
      </p>
    );
  }
  const renumbered = !node && !latest ? renumberedFrom(view.mesh.nodes.values(), nodeId) : undefined;
  if (renumbered) {
    return (
      <section class="panel notice" data-testid="node-renumbered">
        <h1>{t('mesh.newNumberHeading', { id: nodeId })}</h1>
        <p>
          {t('mesh.newNumberBefore')}{' '}
          <Link href={nodePath(renumbered.node_id, site)}>{displayName(renumbered, renumbered.node_id)}</Link>{' '}
          (<code>{renumbered.node_id}</code>) {t('mesh.newNumberAfter')}
        </p>
      </section>
    );
  }
  if (!node && !latest) {
    return (
      <section class="panel notice">
        <h1>{t('mesh.unknownNode')}</h1>
        <p>
          {t('mesh.noNode')} <code>{nodeId}</code>{' '}
          {t(upstream ? 'mesh.unknownToUpstream' : 'mesh.unknownToHub')}{' '}
          <Link href="/">{t('mesh.backToMap')}</Link>
        </p>
      </section>
    );
  }

  const heardAt = lastHeard(view.mesh, nodeId);
  const fresh = freshness(heardAt, now);
  const isHub = hub.radio?.myNodeNum !== undefined && nodeIdFromNum(hub.radio.myNodeNum) === nodeId;
  const facts: Array<[string, string]> = [];
  if (node?.hw_model) facts.push([t('mesh.hardware'), node.hw_model]);
  if (typeof node?.battery_level === 'number')
    facts.push([t('mesh.batteryLabel'), batteryLabel(node.battery_level)]);
  if (typeof node?.snr === 'number') facts.push([t('mesh.signal'), `${formatNumber(node.snr, 1)} dB`]);
  if (typeof node?.altitude === 'number') facts.push([t('mesh.altitude'), `${Math.round(node.altitude)} m`]);
  const metrics = catalogue.filter((m) => latest?.values[m.key]);
  const sensor = isSensorOnly(view.mesh, nodeId);
  const names = siteNames(sites);
  const heard = heardBy(view.mesh, nodeId);

  return (
    <div class="node-page">
      <header class="panel node-header">
        <Link href="/" class="back-link">
          ← {t('header.map')}
        </Link>
        <h1>
          {name}
          {node?.short_name && <span class="chip">{node.short_name}</span>}
          {isHub && <span class="chip chip-hub">{t('mesh.thisHub')}</span>}
          {sensor && <span class="chip chip-sensor">{t('mesh.sensor')}</span>}
        </h1>
        <p class="node-heard">
          <FreshnessDot freshness={fresh} />{' '}
          {heardAt === undefined
            ? t('mesh.neverHeardCap')
            : t('mesh.heardAgoCap', { age: formatAge(heardAt, now) })}
          <span class="muted"> · {nodeId}</span>
          {node?.previous_ids && node.previous_ids.length > 0 && (
            <span class="muted" data-testid="node-was" title={t('mesh.renumberedTitle')}>
              {' · '}
              {wasWords(node.previous_ids)}
            </span>
          )}
        </p>
        <dl class="facts">
          {facts.map(([label, value]) => (
            <div key={label}>
              <dt>{label}</dt>
              <dd>{value}</dd>
            </div>
          ))}
          {heard.length > 0 && (
            <div data-testid="node-page-sites">
              <dt>{t('mesh.siteCount', { count: heard.length })}</dt>
              <dd>
                {heard.map((id, index) => (
                  <span key={id}>
                    {index > 0 && ', '}
                    {id === site ? (
                      <strong aria-current="true">{names.get(id) ?? id}</strong>
                    ) : (
                      <Link href={nodePath(nodeId, id)}>{names.get(id) ?? id}</Link>
                    )}
                  </span>
                ))}
                {site && (
                  <>
                    {' · '}
                    <Link href={nodePath(nodeId)}>{t('mesh.everySite')}</Link>
                  </>
                )}
              </dd>
            </div>
          )}
          {node && hasPosition(node) && (
            <div>
              <dt>{t('mesh.position')}</dt>
              <dd>
                {formatCoordinates(node.latitude, node.longitude)} ·{' '}
                <Link href={`/?node=${encodeURIComponent(nodeId)}`}>{t('mesh.showOnMap')}</Link>
              </dd>
            </div>
          )}
        </dl>
        {sensor && (
          <p class="muted small" data-testid="sensor-note">
            {t('mesh.sensorNote')}
          </p>
        )}
        {!isHub && !sensor && (
          <Link href={chatPath(nodeId)} class="button button-secondary button-small">
            {t('mesh.messageNode')}
          </Link>
        )}
      </header>

      <section class="panel" aria-labelledby="latest-heading">
        <h2 id="latest-heading">{t('mesh.latestValues')}</h2>
        {metrics.length === 0 ? (
          <p class="muted">{t('mesh.noReadings')}</p>
        ) : (
          <ul class="latest-values">
            {metrics.map((metric) => {
              const entry = latest!.values[metric.key]!;
              return (
                <li key={metric.key} class="value-card" data-metric={metric.key}>
                  <span class="value-label">{metric.label}</span>
                  <span class="value-number">{formatMetric(metric, entry.value)}</span>
                  {metric.key === 'wind_direction' && (
                    <span class="value-extra">
                      <span
                        class="wind-arrow"
                        style={{ transform: `rotate(${entry.value + 180}deg)` }}
                        aria-hidden="true"
                      >
                        ↑
                      </span>{' '}
                      {t('mesh.windFrom', { direction: cardinal(entry.value) })}
                    </span>
                  )}
                  <span class="value-time muted small">{formatTime(entry.at, now)}</span>
                </li>
              );
            })}
          </ul>
        )}
      </section>

      <HistoryCharts nodeId={nodeId} search={search} site={site} />
      {!upstream && !sensor && <TopologyPanel nodeId={nodeId} isHub={isHub} />}
      {!upstream && !sensor && <DeviceHealthCharts nodeId={nodeId} search={search} isHub={isHub} />}
    </div>
  );
}
