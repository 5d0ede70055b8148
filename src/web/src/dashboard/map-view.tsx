/** The map panel: loads Leaflet and the tile source, then keeps the markers in step with the mesh. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { getJson } from '../api/client.js';
import type { TileJson } from '../api/types.js';
import { t } from '../i18n/index.js';
import type { NodeView } from '../lib/node-view.js';
import { nodePath } from '../lib/routes.js';
import { navigate } from '../router.js';
import type { LinkJson, TracerouteJson } from '../topology/topology.js';
import type { Background, MeshMap } from './leaflet-map.js';

let tileSource: Promise<TileJson | undefined> | undefined;
function loadTileSource(): Promise<TileJson | undefined> {
  // Without a tile source the map still works, on its grid; ask again on the next visit.
  tileSource ??= getJson<TileJson>('/api/v1/map/tilejson').catch(() => {
    tileSource = undefined;
    return undefined;
  });
  return tileSource;
}

export interface MapHandle {
  focus(nodeId: string): boolean;
}

export function MapView({
  nodes,
  site,
  onReady,
  links = [],
  trace,
}: {
  nodes: readonly NodeView[];
  /** Links between nodes and a traceroute's path, drawn over the markers. */
  links?: readonly LinkJson[];
  trace?: TracerouteJson | undefined;
  /** The upstream's site filter: node pages open on that site, and the view fits its nodes. */
  site?: string | undefined;
  onReady: (handle: MapHandle) => void;
}) {
  const container = useRef<HTMLDivElement>(null);
  const map = useRef<MeshMap | undefined>(undefined);
  const latestNodes = useRef(nodes);
  const latestTopology = useRef({ links, trace });
  const latestSite = useRef(site);
  const shownSite = useRef(site);
  const [background, setBackground] = useState<Background>('loading');
  const [failed, setFailed] = useState(false);
  latestNodes.current = nodes;
  latestSite.current = site;
  latestTopology.current = { links, trace };

  useEffect(() => {
    let cancelled = false;
    Promise.all([import('./leaflet-map.js'), loadTileSource()]).then(
      ([{ MeshMap }, tiles]) => {
        if (cancelled || !container.current) return;
        const created = new MeshMap(container.current, {
          tiles,
          nodeHref: (id) => nodePath(id, latestSite.current),
          onOpenNode: (href) => navigate(href),
          onBackground: setBackground,
        });
        map.current = created;
        created.update(latestNodes.current);
        created.showTopology(latestTopology.current.links, latestTopology.current.trace, Date.now());
        onReady({ focus: (id) => created.focus(id) });
      },
      () => {
        if (!cancelled) setFailed(true);
      },
    );
    const observer = new ResizeObserver(() => map.current?.resize());
    if (container.current) observer.observe(container.current);
    return () => {
      cancelled = true;
      observer.disconnect();
      map.current?.destroy();
      map.current = undefined;
    };
  }, []);

  useEffect(() => {
    map.current?.update(nodes);
    if (shownSite.current !== site && map.current) {
      // Another site's nodes (or every site's): show them all.
      shownSite.current = site;
      map.current.fitToNodes();
    }
  }, [nodes, site]);

  useEffect(() => {
    map.current?.showTopology(links, trace, Date.now());
  }, [nodes, links, trace]);

  return (
    <div class={`map-wrap map-${background}`} data-testid="map" data-background={background}>
      {failed && (
        <p class="map-notice" role="alert">
          {t('mesh.map.loadFailed')}{' '}
          <button type="button" class="link-button" onClick={() => location.reload()}>
            {t('common.reload')}
          </button>
        </p>
      )}
      {background === 'grid' && !failed && (
        <p class="map-notice" role="status" data-testid="tiles-unavailable">
          {t('mesh.map.noBackground')}{' '}
          <button type="button" class="link-button" onClick={() => map.current?.retryTiles()}>
            {t('common.tryAgain')}
          </button>
        </p>
      )}
      {/* Leaflet adds its own classes to this element: its attributes must never change after mount. */}
      <div ref={container} class="map" />
    </div>
  );
}
