/**
 * Links and a traceroute's path on the Leaflet map (loaded with it, by leaflet-map.ts): a line per
 * link between two placed nodes, coloured by SNR (good, fair, poor) and fading with age; a chosen
 * traceroute drawn on top, out solid and back dashed.
 */
import L from 'leaflet';
import { type LinkJson, linkOpacity, snrClass, snrText, type TracerouteJson } from './topology.js';
import './topology.css';

type PositionOf = (nodeId: string) => L.LatLng | undefined;

export class LinkLayer {
  private readonly links = L.layerGroup();
  private readonly trace = L.layerGroup();

  constructor(map: L.Map) {
    const pane = map.createPane('links');
    pane.style.zIndex = '450';
    this.links.addTo(map);
    this.trace.addTo(map);
  }

  /** Redraws every link whose two ends are placed; a pair heard both ways is one line (the newer). */
  showLinks(links: readonly LinkJson[], positionOf: PositionOf, now: number): void {
    this.links.clearLayers();
    const drawn = new Set<string>();
    const newest = [...links].sort((a, b) => Date.parse(b.last_heard) - Date.parse(a.last_heard));
    for (const link of newest) {
      const key = [link.from, link.to].sort().join('-');
      const from = positionOf(link.from);
      const to = positionOf(link.to);
      if (drawn.has(key) || !from || !to) continue;
      drawn.add(key);
      const line = L.polyline([from, to], {
        pane: 'links',
        className: `mesh-link snr-${snrClass(link.snr)}`,
        opacity: linkOpacity(link.last_heard, now),
        weight: 3,
        interactive: true,
      });
      line.bindTooltip(`${link.from} → ${link.to}: ${snrText(link.snr)} (${link.source})`, { sticky: true });
      line.addTo(this.links);
      line.getElement()?.setAttribute('data-link', key);
    }
  }

  /** Draws the traceroute's path out (solid) and back (dashed), between the placed hops. */
  showTrace(trace: TracerouteJson | undefined, positionOf: PositionOf): void {
    this.trace.clearLayers();
    if (trace?.status !== 'answered') return;
    const draw = (start: string, hops: TracerouteJson['route'], back: boolean) => {
      let previous = start;
      for (const hop of hops) {
        const from = positionOf(previous);
        const to = positionOf(hop.node_id);
        if (from && to) {
          const line = L.polyline([from, to], {
            pane: 'links',
            className: `mesh-trace snr-${snrClass(hop.snr)}${back ? ' mesh-trace-back' : ''}`,
            weight: 6,
            ...(back ? { dashArray: '8 8' } : {}),
          });
          line.bindTooltip(`${previous} → ${hop.node_id}: ${snrText(hop.snr)}`, { sticky: true });
          line.addTo(this.trace);
          line.getElement()?.setAttribute('data-trace-hop', `${previous}-${hop.node_id}`);
        }
        previous = hop.node_id;
      }
    };
    draw(trace.origin_id, trace.route, false);
    draw(trace.node_id, trace.route_back, true);
  }
}
