/**
 * The front page: the live map of the mesh with the list of nodes beside it. On the upstream it
 * shows every site's nodes (each named with the sites that heard it), or one site's (`?site=`).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useNow, useStore, useTitle } from '../hooks.js';
import { atSite, nodeIdFromNum, sortedNodes } from '../lib/mesh-state.js';
import { matchesSearch, nodeView } from '../lib/node-view.js';
import { displayMetrics } from '../lib/units.js';
import { Link } from '../router.js';
import { hubStore } from '../state/hub.js';
import { meshStore, refreshMesh } from '../state/mesh.js';
import { siteNames, sitesStore } from '../state/sites.js';
import './dashboard.css';
import { LoadError, Loading } from '../components/load-states.js';
import { languageStore, t } from '../i18n/index.js';
import { displayStore } from '../state/display.js';
import { useLinks, useTraceroute } from '../topology/topology.js';
import { type MapHandle, MapView } from './map-view.js';
import { Legend, NodeList } from './node-list.js';

export function Dashboard({ focus, site }: { focus?: string; site?: string }) {
  const view = useStore(meshStore);
  const hub = useStore(hubStore);
  const { sites } = useStore(sitesStore);
  const upstream = hub.mode === 'upstream';
  const names = useMemo(() => siteNames(sites), [sites]);
  // A site filter only means something on the upstream.
  const only = upstream ? site : undefined;
  const onlyName = only ? (names.get(only) ?? only) : undefined;
  useTitle(onlyName ? t('mesh.mapOf', { site: onlyName }) : t('header.map'));
  const now = useNow(30_000);
  const mapHandle = useRef<MapHandle | undefined>(undefined);
  const mapSection = useRef<HTMLElement>(null);
  const pendingFocus = useRef(focus);
  const hubNodeId = hub.radio?.myNodeNum !== undefined ? nodeIdFromNum(hub.radio.myNodeNum) : undefined;

  const metrics = displayMetrics(useStore(displayStore));
  const links = useLinks();
  const trace = useTraceroute(new URLSearchParams(location.search).get('traceroute') ?? undefined);
  const [search, setSearch] = useState('');
  // The node views hold words ("heard 3 min ago"): made again when the language changes.
  const language = useStore(languageStore);
  const nodes = useMemo(
    () =>
      sortedNodes(view.mesh, { sensors: true })
        .filter((node) => !only || atSite(view.mesh, node.node_id, only))
        .map((node) => nodeView(view.mesh, node, now, hubNodeId, upstream ? names : undefined, metrics)),
    [view.mesh, now, hubNodeId, upstream, names, only, metrics, language],
  );
  const listed = useMemo(() => nodes.filter((node) => matchesSearch(node, search)), [nodes, search]);

  const show = (id: string) => {
    mapSection.current?.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    mapHandle.current?.focus(id);
  };

  useEffect(() => {
    // "Show on map" from a node page: focus it once the map and the node are there.
    if (pendingFocus.current && mapHandle.current && nodes.some((n) => n.id === pendingFocus.current)) {
      if (mapHandle.current.focus(pendingFocus.current)) pendingFocus.current = undefined;
    }
  });

  let list: ComponentChildren;
  if (view.error && !view.loaded) {
    list = <LoadError error={view.error} onRetry={() => void refreshMesh()} />;
  } else if (!view.loaded) {
    list = <Loading>{t('mesh.loadingNodes')}</Loading>;
  } else if (nodes.length === 0) {
    list = (
      <p class="muted">
        {onlyName
          ? t('mesh.siteNoNodes', { site: onlyName })
          : upstream
            ? t('mesh.noSiteNodes')
            : t('mesh.noNodes')}
      </p>
    );
  } else if (listed.length === 0) {
    list = (
      <p class="muted" data-testid="no-search-match">
        {t('mesh.noMatch', { search: search.trim() })}
      </p>
    );
  } else {
    list = <NodeList nodes={listed} onShow={show} site={only} />;
  }

  return (
    <div class="dashboard">
      <h1 class="visually-hidden">{t('mesh.mapHeading')}</h1>
      <section class="map-panel" ref={mapSection} aria-label={t('header.map')}>
        <MapView
          nodes={nodes}
          links={links}
          trace={trace}
          site={only}
          onReady={(handle) => {
            mapHandle.current = handle;
            if (pendingFocus.current && handle.focus(pendingFocus.current)) pendingFocus.current = undefined;
          }}
        />
      </section>
      <aside class="node-panel" aria-labelledby="nodes-heading">
        <div class="node-panel-head">
          <h2 id="nodes-heading">
            {t('mesh.nodes')}{' '}
            {view.loaded && (
              <span class="count" data-testid="node-count">
                {listed.length === nodes.length
                  ? nodes.length
                  : t('mesh.nOfTotal', { shown: listed.length, total: nodes.length })}
              </span>
            )}
          </h2>
          <Legend />
        </div>
        {view.loaded && nodes.length > 0 && (
          <input
            type="search"
            class="node-search"
            data-testid="node-search"
            placeholder={t('mesh.searchPlaceholder')}
            aria-label={t('mesh.searchLabel')}
            value={search}
            onInput={(event) => setSearch((event.target as HTMLInputElement).value)}
          />
        )}
        {onlyName && (
          <p class="notice-info site-filter" data-testid="site-filter">
            {t('mesh.onlySite', { site: onlyName })} <Link href="/">{t('mesh.showEverySite')}</Link> ·{' '}
            <Link href="/sites">{t('header.sites')}</Link>
          </p>
        )}
        {list}
      </aside>
    </div>
  );
}
