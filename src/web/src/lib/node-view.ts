/** A node as the map and the list show it: name, freshness, and its latest readings in words. */
import { cardinal, formatAge, formatCoordinates, formatMetric } from './format.js';
import { type Freshness, freshness } from './freshness.js';
import { displayName, hasPosition, heardBy, lastHeard, type MeshState, type NodeJson } from './mesh-state.js';
import { METRICS } from './metrics.js';

export interface ReadingLine {
  label: string;
  value: string;
}

export interface NodeView {
  id: string;
  name: string;
  shortName: string;
  freshness: Freshness;
  /** `heard 3 min ago`, or `never heard`. */
  heard: string;
  /** The newest reading's time (ms), when there is one. */
  readingAt?: number;
  readings: ReadingLine[];
  position?: { latitude: number; longitude: number; text: string };
  isHub: boolean;
  battery?: number;
  /** Upstream: the names of the sites that heard it, most recently first. */
  sites?: string[];
}

export function readingLines(state: MeshState, nodeId: string): ReadingLine[] {
  const latest = state.latest.get(nodeId);
  if (!latest) return [];
  const lines: ReadingLine[] = [];
  for (const metric of METRICS) {
    const entry = latest.values[metric.key];
    if (!entry) continue;
    const value =
      metric.key === 'wind_direction'
        ? `${formatMetric(metric, entry.value)} (from ${cardinal(entry.value)})`
        : formatMetric(metric, entry.value);
    lines.push({ label: metric.label, value });
  }
  return lines;
}

export function nodeView(
  state: MeshState,
  node: NodeJson,
  nowMs: number,
  hubNodeId: string | undefined,
  siteNames?: ReadonlyMap<string, string>,
): NodeView {
  const heardAt = lastHeard(state, node.node_id);
  const latest = state.latest.get(node.node_id);
  const sites = heardBy(state, node.node_id).map((id) => siteNames?.get(id) ?? id);
  return {
    id: node.node_id,
    name: displayName(node, node.node_id),
    shortName: node.short_name || node.node_id.slice(-4),
    freshness: freshness(heardAt, nowMs),
    heard: heardAt === undefined ? 'never heard' : `heard ${formatAge(heardAt, nowMs)}`,
    ...(latest ? { readingAt: latest.at } : {}),
    readings: readingLines(state, node.node_id),
    ...(hasPosition(node)
      ? {
          position: {
            latitude: node.latitude,
            longitude: node.longitude,
            text: formatCoordinates(node.latitude, node.longitude),
          },
        }
      : {}),
    isHub: node.node_id === hubNodeId,
    ...(typeof node.battery_level === 'number' ? { battery: node.battery_level } : {}),
    ...(sites.length > 0 ? { sites } : {}),
  };
}

/** `Heard by North Farm and Ridge`: the sites as a sentence. */
export function heardByWords(sites: readonly string[]): string {
  const list =
    sites.length <= 1 ? (sites[0] ?? '') : `${sites.slice(0, -1).join(', ')} and ${sites[sites.length - 1]}`;
  return `Heard by ${list}`;
}

/**
 * Meshtastic's DeviceMetrics.battery_level is 0–100, and 101 when the node runs on external
 * power (firmware's "powered" value): a person wants to read "plugged in", not "101 %".
 */
export function batteryLabel(level: number): string {
  return level > 100 ? 'plugged in' : `${level} %`;
}
