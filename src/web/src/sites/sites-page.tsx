/**
 * `/sites` (upstream only, loaded on first use): every site that sends its data to this
 * upstream, its health in plain words, how many nodes it hears, and a link to those nodes on
 * the map.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo } from 'preact/hooks';
import type { SiteJson } from '../api/types.js';
import { useNow, useStore, useTitle } from '../hooks.js';
import { durationWords, formatAge, formatDateTime } from '../lib/format.js';
import { mapPath } from '../lib/routes.js';
import { siteHealth, siteLabel } from '../lib/site-health.js';
import { Link } from '../router.js';
import { refreshSites, sitesStore } from '../state/sites.js';
import './sites.css';
import { LoadError, Loading } from '../components/load-states.js';
import { t } from '../i18n/index.js';

function when(iso: string | null, nowMs: number): string {
  const at = iso ? Date.parse(iso) : Number.NaN;
  return Number.isFinite(at) ? `${formatAge(at, nowMs)} (${formatDateTime(at)})` : t('mesh.sites.neverShort');
}

function SiteCard({ site, now }: { site: SiteJson; now: number }) {
  const health = siteHealth(site, now);
  const label = siteLabel(site);
  return (
    <li class="panel site-card" data-site-id={site.site_id} data-health={health.state}>
      <div class="site-card-head">
        <h2 class="site-name">{label}</h2>
        {label !== site.site_id && <code class="muted small">{site.site_id}</code>}
      </div>
      <p class={`pill pill-${health.tone} site-health`} data-testid="site-health">
        <span class="dot" aria-hidden="true" />
        {health.words}
      </p>
      <dl class="site-facts">
        <div>
          <dt>{t('mesh.nodes')}</dt>
          <dd data-testid="site-node-count">{site.node_count}</dd>
        </div>
        <div>
          <dt>{t('mesh.sites.lastContact')}</dt>
          <dd>{when(site.last_contact_at, now)}</dd>
        </div>
        <div>
          <dt>{t('mesh.sites.lastData')}</dt>
          <dd>{when(site.last_batch_at, now)}</dd>
        </div>
        {typeof site.lag_s === 'number' && (
          <div>
            <dt title={t('mesh.sites.newestTitle')}>{t('mesh.sites.newest')}</dt>
            <dd>{t('mesh.sites.old', { age: durationWords(site.lag_s * 1000) })}</dd>
          </div>
        )}
      </dl>
      {site.node_count > 0 ? (
        <Link href={mapPath(site.site_id)} class="button button-secondary button-small">
          {t('mesh.sites.showNodes', { count: site.node_count })}
        </Link>
      ) : (
        <p class="muted small">{t('mesh.sites.noNode')}</p>
      )}
    </li>
  );
}

export function SitesPage({ upstream }: { upstream: boolean }) {
  useTitle(t('header.sites'));
  const view = useStore(sitesStore);
  const now = useNow(15_000) + view.clockOffsetMs;
  useEffect(() => {
    if (upstream) void refreshSites();
  }, [upstream]);
  const sites = useMemo(
    () =>
      [...view.sites].sort((a, b) =>
        siteLabel(a).localeCompare(siteLabel(b), undefined, { sensitivity: 'base' }),
      ),
    [view.sites],
  );

  if (!upstream) {
    return (
      <section class="panel notice">
        <h1>{t('mesh.sites.noSitesHeading')}</h1>
        <p>
          {t('mesh.sites.noSitesText')} <Link href="/">{t('common.goToMap')}</Link>.
        </p>
      </section>
    );
  }

  let body: ComponentChildren;
  if (view.error && !view.loaded) {
    body = <LoadError error={view.error} onRetry={() => void refreshSites()} />;
  } else if (!view.loaded) {
    body = <Loading>{t('mesh.sites.loading')}</Loading>;
  } else if (sites.length === 0) {
    body = (
      <p class="muted">
        {t('mesh.sites.noneRegistered')}{' '}
        <code>meshhub upstream site add &lt;site_id&gt; --public-key &lt;file&gt;</code>.
      </p>
    );
  } else {
    body = (
      <ul class="site-list" aria-label={t('header.sites')}>
        {sites.map((site) => (
          <SiteCard key={site.site_id} site={site} now={now} />
        ))}
      </ul>
    );
  }

  return (
    <div class="sites-page">
      <h1>{t('header.sites')}</h1>
      <p class="muted">
        {t('mesh.sites.intro')}
        {view.loaded && ` ${t('mesh.sites.count', { count: sites.length })}.`}
      </p>
      {body}
    </div>
  );
}
