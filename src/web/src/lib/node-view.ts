/** A node as the map and the list show it: name, freshness, and its latest readings in words. */
import { t } from '../i18n/index.js';
import { cardinal, formatAge, formatCoordinates, formatMetric, joinWords } from './format.js';
import { type Freshness, freshness } from './freshness.js';
import {
  displayName,
  hasPosition,
  heardBy,
  isSensorOnly,
  lastHeard,
  type MeshState,
  type NodeJson,
} from './mesh-state.js';
import { METRICS, type MetricInfo, type MetricKey } from './metrics.js';

export interface ReadingLine {
  key: MetricKey;
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
  /** Known only from its readings (HTTP or MQTT ingestion): no radio heard it, it cannot be messaged. */
  sensor: boolean;
  battery?: number;
  /** Upstream: the names of the sites that heard it, most recently first. */
  sites?: string[];
  /** The ids it had before firmware 2.8 renumbered it (its history is under `id` now). */
  previousIds?: string[];
}

/** The node's newest values in words, in the units of `metrics` (lib/units.ts displayMetrics). */
export function readingLines(
  state: MeshState,
  nodeId: string,
  metrics: readonly MetricInfo[] = METRICS,
): ReadingLine[] {
  const latest = state.latest.get(nodeId);
  if (!latest) return [];
  const lines: ReadingLine[] = [];
  for (const metric of metrics) {
    const entry = latest.values[metric.key];
    if (!entry) continue;
    const value =
      metric.key === 'wind_direction'
        ? `${formatMetric(metric, entry.value)} (${t('mesh.windFrom', { direction: cardinal(entry.value) })})`
        : formatMetric(metric, entry.value);
    lines.push({ key: metric.key, label: metric.label, value });
  }
  return lines;
}

export function nodeView(
  state: MeshState,
  node: NodeJson,
  nowMs: number,
  hubNodeId: string | undefined,
  siteNames?: ReadonlyMap<string, string>,
  metrics: readonly MetricInfo[] = METRICS,
): NodeView {
  const heardAt = lastHeard(state, node.node_id);
  const latest = state.latest.get(node.node_id);
  const sites = heardBy(state, node.node_id).map((id) => siteNames?.get(id) ?? id);
  return {
    id: node.node_id,
    name: displayName(node, node.node_id),
    shortName: node.short_name || node.node_id.slice(-4),
    freshness: freshness(heardAt, nowMs),
    heard:
      heardAt === undefined ? t('mesh.neverHeard') : t('mesh.heardAgo', { age: formatAge(heardAt, nowMs) }),
    ...(latest ? { readingAt: latest.at } : {}),
    readings: readingLines(state, node.node_id, metrics),
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
    sensor: isSensorOnly(state, node.node_id),
    ...(typeof node.battery_level === 'number' ? { battery: node.battery_level } : {}),
    ...(sites.length > 0 ? { sites } : {}),
    ...(node.previous_ids && node.previous_ids.length > 0 ? { previousIds: node.previous_ids } : {}),
  };
}

/** `was !abcd1234` (`was !a and !b`): the ids of a renumbered node, as the list and its page say it. */
export function wasWords(previousIds: readonly string[]): string {
  return t('mesh.was', { ids: joinWords(previousIds) });
}

/** The node that had `nodeId` before it was renumbered, if any. */
export function renumberedFrom<N extends { node_id: string; previous_ids?: string[] }>(
  nodes: Iterable<N>,
  nodeId: string,
): N | undefined {
  for (const node of nodes) if (node.previous_ids?.includes(nodeId)) return node;
  return undefined;
}

/** The node list's search: every word of it in the name, the short name or the id (case ignored). */
export function matchesSearch(node: Pick<NodeView, 'id' | 'name' | 'shortName'>, search: string): boolean {
  const words = search.toLocaleLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const text = `${node.name}\n${node.shortName}\n${node.id}`.toLocaleLowerCase();
  return words.every((word) => text.includes(word));
}

/** `Heard by North Farm and Ridge`: the sites as a sentence. */
export function heardByWords(sites: readonly string[]): string {
  return t('mesh.heardBy', { sites: joinWords(sites) });
}

/**
 * Meshtastic's DeviceMetrics.battery_level is 0–100, and 101 when the node runs on external
 * power (firmware's "powered" value): a person wants to read "plugged in", not "101 %".
 */
export function batteryLabel(level: number): string {
  return level > 100 ? t('mesh.pluggedIn') : `${level} %`;
}
