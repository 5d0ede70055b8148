/** Latitude and longitude lines with labels, under the tiles: what the map shows when no tiles load. */
import L from 'leaflet';
import { gridLabel, gridStep, gridValues } from '../lib/graticule-steps.js';

export class Graticule extends L.Layer {
  private readonly group = L.layerGroup();
  private readonly paneName: string;

  constructor(pane: string) {
    super();
    this.paneName = pane;
  }

  override onAdd(map: L.Map): this {
    this.group.addTo(map);
    map.on('moveend', this.redraw, this);
    this.redraw();
    return this;
  }

  override onRemove(map: L.Map): this {
    map.off('moveend', this.redraw, this);
    this.group.remove();
    return this;
  }

  private redraw(): void {
    const map = (this as unknown as { _map?: L.Map })._map;
    if (!map) return;
    this.group.clearLayers();
    const view = map.getBounds();
    const south = Math.max(-85, view.getSouth());
    const north = Math.min(85, view.getNorth());
    const west = view.getWest();
    const east = view.getEast();
    // About one line per 110 px each way, so labels never run into each other on a phone.
    const size = map.getSize();
    const latStep = gridStep(north - south, Math.max(2, Math.floor(size.y / 110)));
    const lonStep = gridStep(east - west, Math.max(2, Math.floor(size.x / 110)));
    const line = { pane: this.paneName, interactive: false, className: 'graticule-line', weight: 1 };
    const label = (at: L.LatLngExpression, text: string, kind: 'lat' | 'lon') =>
      L.marker(at, {
        pane: this.paneName,
        interactive: false,
        keyboard: false,
        // The anchor offsets the text from its line (CSS transforms would fight Leaflet's positioning).
        icon: L.divIcon({
          className: 'graticule-label',
          html: text,
          iconSize: [0, 0],
          iconAnchor: kind === 'lat' ? [-6, 16] : [-4, 44],
        }),
      });
    for (const lat of gridValues(south, north, latStep)) {
      L.polyline(
        [
          [lat, west - lonStep],
          [lat, east + lonStep],
        ],
        line,
      ).addTo(this.group);
      label([lat, west], gridLabel(lat, latStep, 'lat'), 'lat').addTo(this.group);
    }
    for (const lon of gridValues(west, east, lonStep)) {
      L.polyline(
        [
          [south - latStep, lon],
          [north + latStep, lon],
        ],
        line,
      ).addTo(this.group);
      label([south, lon], gridLabel(lon, lonStep, 'lon'), 'lon').addTo(this.group);
    }
  }
}
