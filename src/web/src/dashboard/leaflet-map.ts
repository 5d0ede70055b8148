/**
 * The Leaflet map of the mesh (loaded only on the dashboard). Each node is a badge with its
 * short name, coloured by freshness; hovering shows its readings, a click, tap or Enter opens
 * them with a link to the node page. Under the tiles lie the app's own world layer (land,
 * borders, place names: world-layer.ts) and a coordinate grid: if no tile loads (no internet,
 * an unreachable tile server), the tiles are dropped and those are the map.
 * Where markers crowd (a coarse zoom), those whose label would overlap another's show as dots,
 * and grid labels under a marker are hidden (map-labels.ts).
 */
import L from 'leaflet';
import 'leaflet/dist/leaflet.css';
import './map.css';
import type { TileJson } from '../api/types.js';
import { t } from '../i18n/index.js';
import { heardByWords, type NodeView } from '../lib/node-view.js';
import { LinkLayer } from '../topology/link-layer.js';
import type { LinkJson, TracerouteJson } from '../topology/topology.js';
import { Graticule } from './graticule.js';
import { type Box, keptLabels, markerLabels, markerWidth, overlaps } from './map-labels.js';
import { WorldLayer } from './world-layer.js';

/** `grid`: tiles were wanted but none loaded; `world`: MAP_TILES=off, the world layer is the map. */
export type Background = 'loading' | 'tiles' | 'grid' | 'world';

export interface MeshMapOptions {
  tiles: TileJson | undefined;
  /** The node page's address (on the upstream it may name a site). */
  nodeHref: (nodeId: string) => string;
  onOpenNode: (href: string) => void;
  onBackground: (background: Background) => void;
}

interface MarkerEntry {
  marker: L.Marker;
  node: NodeView;
  iconKey: string;
  label: string;
}

const MARKER_HEIGHT = 26;
/** A crowded-out marker's size. */
const DOT = 16;

/** Tile failures before the first success that mean "no tiles here". */
const FAILURES_BEFORE_GRID = 3;

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function readingsList(node: NodeView, limit?: number): HTMLElement {
  const list = element('dl', 'popup-readings');
  const lines = limit === undefined ? node.readings : node.readings.slice(0, limit);
  for (const line of lines) {
    list.append(element('dt', undefined, line.label), element('dd', undefined, line.value));
  }
  if (lines.length === 0) list.append(element('dd', 'muted', t('mesh.map.noReadings')));
  return list;
}

function tooltipContent(node: NodeView): HTMLElement {
  const box = element('div', 'map-tooltip');
  box.append(element('strong', undefined, node.name), element('div', 'muted', node.heard));
  if (node.sites) box.append(element('div', 'muted', heardByWords(node.sites)));
  box.append(readingsList(node, 4));
  return box;
}

export class MeshMap {
  private readonly map: L.Map;
  private tileLayer: L.TileLayer | undefined;
  private readonly markers = new Map<string, MarkerEntry>();
  private readonly hoverable = window.matchMedia('(hover: hover)').matches;
  private fitted = false;
  /** The user panned or zoomed: leave the view alone from now on. */
  private userMoved = false;
  private tileLoads = 0;
  private tileErrors = 0;
  private readonly lines: LinkLayer;

  constructor(
    container: HTMLElement,
    private readonly options: MeshMapOptions,
  ) {
    this.map = L.map(container, { center: [20, 0], zoom: 2, worldCopyJump: true, zoomSnap: 0.5 });
    this.map.attributionControl.setPrefix('<a href="https://leafletjs.com">Leaflet</a>');
    L.control.scale({ imperial: false }).addTo(this.map);
    // Below the grid (150) and the tiles (200): tiles cover the world layer wherever they load.
    this.map.createPane('world').style.zIndex = '120';
    this.map.createPane('world-labels').style.zIndex = '160';
    this.map.attributionControl.addAttribution(
      'Natural Earth · <a href="https://simplemaps.com/data/world-cities">SimpleMaps</a>',
    );
    new WorldLayer('world', 'world-labels').addTo(this.map);
    this.map.on('worldlayerload', () => this.declutter());
    const grid = this.map.createPane('grid');
    grid.style.zIndex = '150';
    new Graticule('grid').addTo(this.map);
    // After the grid's own moveend (registered above), so its new labels are there to check.
    this.map.on('moveend', () => this.declutter());
    this.addFitControl();
    this.lines = new LinkLayer(this.map);
    for (const event of ['wheel', 'mousedown', 'touchstart', 'keydown'] as const) {
      container.addEventListener(
        event,
        () => {
          this.userMoved = true;
        },
        { passive: true },
      );
    }
    // Leaflet handles Escape only while the map itself has focus; a focused marker needs it too.
    container.addEventListener('keydown', (event) => {
      if (event.key !== 'Escape') return;
      const open = [...this.markers.values()].find((e) => e.marker.isPopupOpen());
      if (!open) return;
      this.map.closePopup();
      (open.marker.getElement() as HTMLElement | undefined)?.focus();
    });
    if (options.tiles?.tiles[0]) this.addTiles(options.tiles);
    else options.onBackground(options.tiles ? 'world' : 'grid');
  }

  private addTiles(tiles: TileJson): void {
    const template = tiles.tiles[0]!;
    const osm = /openstreetmap\.org\//.test(template);
    const attribution = osm
      ? '© <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'
      : escapeHtml(tiles.attribution ?? '');
    const [west, south, east, north] = tiles.bounds ?? [];
    const layer = L.tileLayer(template, {
      attribution,
      minNativeZoom: tiles.minzoom,
      maxNativeZoom: tiles.maxzoom,
      maxZoom: Math.max(18, tiles.maxzoom),
      ...(west !== undefined && south !== undefined && east !== undefined && north !== undefined
        ? { bounds: L.latLngBounds([south, west], [north, east]) }
        : {}),
    });
    this.tileLoads = 0;
    this.tileErrors = 0;
    this.options.onBackground('loading');
    layer.on('tileload', () => {
      if (layer !== this.tileLayer) return;
      this.tileLoads++;
      if (this.tileLoads === 1) this.options.onBackground('tiles');
    });
    layer.on('tileerror', () => {
      if (layer !== this.tileLayer) return;
      this.tileErrors++;
      if (this.tileLoads === 0 && this.tileErrors >= FAILURES_BEFORE_GRID) this.dropTiles();
    });
    layer.addTo(this.map);
    this.tileLayer = layer;
  }

  /** Stops asking for tiles that do not come; the world layer and grid underneath show. */
  private dropTiles(): void {
    // remove() alone: Leaflet unhooks the layer's map listeners on the layer's own 'remove' event.
    this.tileLayer?.remove();
    this.tileLayer = undefined;
    this.options.onBackground('grid');
  }

  retryTiles(): void {
    if (this.options.tiles?.tiles[0] && !this.tileLayer) this.addTiles(this.options.tiles);
  }

  private addFitControl(): void {
    const FitControl = L.Control.extend({
      onAdd: () => {
        const button = element('button', 'map-fit-button', t('mesh.map.showAll'));
        button.type = 'button';
        button.title = t('mesh.map.showAllTitle');
        L.DomEvent.disableClickPropagation(button);
        button.addEventListener('click', () => this.fitToNodes());
        const bar = element('div', 'leaflet-bar');
        bar.append(button);
        return bar;
      },
    });
    new FitControl({ position: 'topright' }).addTo(this.map);
  }

  private icon(node: NodeView, text: string): L.DivIcon {
    const label = element('span', 'node-marker-label', text);
    const width = markerWidth(text);
    return L.divIcon({
      html: label,
      className: `node-marker fresh-${node.freshness}${node.isHub ? ' node-marker-hub' : ''}`,
      iconSize: [width, MARKER_HEIGHT],
      iconAnchor: [width / 2, MARKER_HEIGHT / 2],
      popupAnchor: [0, -12],
      tooltipAnchor: [0, -12],
    });
  }

  private popupContent(node: NodeView): HTMLElement {
    const box = element('div', 'map-popup');
    box.append(element('h2', 'popup-title', node.name));
    box.append(
      element(
        'p',
        'muted',
        `${node.shortName} · ${node.id}${node.isHub ? ` · ${t('mesh.map.hubRadio')}` : ''}`,
      ),
    );
    const heard = element('p', 'popup-heard');
    heard.append(
      element('span', `fresh-dot fresh-${node.freshness}`),
      document.createTextNode(` ${node.heard}`),
    );
    box.append(heard);
    if (node.sites) box.append(element('p', 'popup-sites', heardByWords(node.sites)));
    box.append(readingsList(node));
    if (node.position) box.append(element('p', 'popup-coords', node.position.text));
    const link = element('a', 'button button-small', t('mesh.map.openNodePage'));
    link.href = this.options.nodeHref(node.id);
    link.addEventListener('click', (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
      event.preventDefault();
      this.options.onOpenNode(link.href);
    });
    box.append(link);
    return box;
  }

  /** Adds, moves, recolours and removes markers to match `nodes` (only those with a position are drawn). */
  update(nodes: readonly NodeView[]): void {
    const seen = new Set<string>();
    const labels = markerLabels(nodes.filter((n) => n.position));
    for (const node of nodes) {
      if (!node.position) continue;
      seen.add(node.id);
      const latLng = L.latLng(node.position.latitude, node.position.longitude);
      const text = labels.get(node.id) ?? node.shortName;
      const iconKey = `${text}|${node.freshness}|${node.isHub}`;
      const label = `${node.name}, ${node.heard}`;
      let entry = this.markers.get(node.id);
      if (!entry) {
        const marker = L.marker(latLng, {
          icon: this.icon(node, text),
          title: label,
          keyboard: true,
          riseOnHover: true,
        });
        entry = { marker, node, iconKey, label: text };
        const current = entry;
        marker.bindPopup(() => this.popupContent(current.node), { maxWidth: 280, minWidth: 200 });
        if (this.hoverable) {
          // Registered before bindTooltip, so it runs first: near the top edge the readings open downwards.
          marker.on('mouseover', () => {
            const tooltip = marker.getTooltip();
            if (!tooltip) return;
            const below = this.map.latLngToContainerPoint(marker.getLatLng()).y < 180;
            tooltip.options.direction = below ? 'bottom' : 'top';
            tooltip.options.offset = below ? L.point(0, 26) : L.point(0, 0);
          });
          marker.bindTooltip(() => tooltipContent(current.node), { direction: 'top', opacity: 1 });
        }
        marker.on('popupopen', () => marker.closeTooltip());
        marker.addTo(this.map);
        this.markers.set(node.id, entry);
      } else {
        entry.node = node;
        if (!entry.marker.getLatLng().equals(latLng)) entry.marker.setLatLng(latLng);
        if (entry.iconKey !== iconKey) {
          entry.marker.setIcon(this.icon(node, text));
          entry.iconKey = iconKey;
          entry.label = text;
        }
        if (entry.marker.isPopupOpen()) entry.marker.getPopup()?.setContent(this.popupContent(node));
      }
      const el = entry.marker.getElement();
      if (el) {
        el.dataset.nodeId = node.id;
        el.dataset.freshness = node.freshness;
        el.title = label;
        el.setAttribute('aria-label', t('mesh.map.pressEnter', { label }));
      }
    }
    for (const [id, entry] of this.markers) {
      if (!seen.has(id)) {
        entry.marker.remove();
        this.markers.delete(id);
      }
    }
    if (!this.fitted && this.markers.size > 0) {
      this.fitted = true;
      this.fitToNodes();
    }
    this.declutter();
  }

  /**
   * Markers whose label would overlap another's show as dots (the hub's radio and the most
   * recently heard keep theirs); grid labels that a marker or another grid label covers are hidden.
   */
  private declutter(): void {
    const entries = [...this.markers.values()];
    const boxes = new Map<string, Box>();
    for (const entry of entries) {
      const at = this.map.latLngToContainerPoint(entry.marker.getLatLng());
      const half = markerWidth(entry.label) / 2;
      boxes.set(entry.node.id, {
        left: at.x - half,
        right: at.x + half,
        top: at.y - MARKER_HEIGHT / 2,
        bottom: at.y + MARKER_HEIGHT / 2,
      });
    }
    const kept = keptLabels(
      entries.map((e) => ({
        id: e.node.id,
        box: boxes.get(e.node.id)!,
        isHub: e.node.isHub,
        freshness: e.node.freshness,
        label: e.label,
      })),
    );
    const container = this.map.getContainer();
    const origin = container.getBoundingClientRect();
    const inMap = (r: DOMRect): Box => ({
      left: r.left - origin.left,
      right: r.right - origin.left,
      top: r.top - origin.top,
      bottom: r.bottom - origin.top,
    });
    // The zoom buttons, "Show all", the scale and the attribution cover grid labels too.
    const covered: Box[] = [...container.querySelectorAll('.leaflet-control')].map((el) =>
      inMap(el.getBoundingClientRect()),
    );
    for (const entry of entries) {
      const dot = !kept.has(entry.node.id);
      // A dot lies under every labelled badge.
      if ((entry.marker.options.zIndexOffset ?? 0) !== (dot ? -1000 : 0))
        entry.marker.setZIndexOffset(dot ? -1000 : 0);
      const box = boxes.get(entry.node.id)!;
      const el = entry.marker.getElement();
      if (el && el.classList.contains('node-marker-dot') !== dot) {
        // Leaflet sized and centred the badge inline: a dot is DOT px, centred the same way.
        const [width, height] = dot ? [DOT, DOT] : [box.right - box.left, MARKER_HEIGHT];
        el.classList.toggle('node-marker-dot', dot);
        el.style.width = `${width}px`;
        el.style.height = `${height}px`;
        el.style.marginLeft = `${-width / 2}px`;
        el.style.marginTop = `${-height / 2}px`;
      }
      if (!dot) covered.push(box);
      else {
        const at = { x: (box.left + box.right) / 2, y: (box.top + box.bottom) / 2 };
        covered.push({
          left: at.x - DOT / 2,
          right: at.x + DOT / 2,
          top: at.y - DOT / 2,
          bottom: at.y + DOT / 2,
        });
      }
    }
    const text = document.createRange();
    for (const label of container.querySelectorAll<HTMLElement>('.world-place-name, .graticule-label')) {
      label.style.visibility = '';
      // The label's box is 0×0 (its anchor); its text overflows it.
      text.selectNodeContents(label);
      const r = text.getBoundingClientRect();
      if (r.width === 0) continue; // not shown (tiles cover the grid)
      const box = inMap(r);
      if (covered.some((other) => overlaps(box, other))) label.style.visibility = 'hidden';
      else covered.push(box);
    }
  }

  /** Draws the links between placed nodes and, when given, a traceroute's path (src/web/src/topology). */
  showTopology(links: readonly LinkJson[], trace: TracerouteJson | undefined, now: number): void {
    const positionOf = (id: string) => this.markers.get(id)?.marker.getLatLng();
    this.lines.showLinks(links, positionOf, now);
    this.lines.showTrace(trace, positionOf);
  }

  fitToNodes(): void {
    const points = [...this.markers.values()].map((e) => e.marker.getLatLng());
    if (points.length === 0) return;
    if (points.length === 1) this.map.setView(points[0]!, 14);
    else {
      this.map.fitBounds(L.latLngBounds(points), {
        paddingTopLeft: [44, 52],
        paddingBottomRight: [44, 36],
        maxZoom: 16,
      });
    }
  }

  /** Centres the node and opens its readings; false when it is not on the map. */
  focus(nodeId: string): boolean {
    const entry = this.markers.get(nodeId);
    if (!entry) return false;
    this.map.setView(entry.marker.getLatLng(), Math.max(this.map.getZoom(), 14));
    entry.marker.openPopup();
    return true;
  }

  resize(): void {
    this.map.invalidateSize();
    // The panel changed size (a notice appeared, the phone turned): keep every node in view.
    if (this.fitted && !this.userMoved) this.fitToNodes();
  }

  destroy(): void {
    this.map.remove();
    this.markers.clear();
  }
}
