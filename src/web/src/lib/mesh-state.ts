/**
 * The dashboard's picture of the mesh: every node (from `/api/v1/nodes`) and each node's newest
 * value of every metric (from `/api/v1/weather/latest`), kept current by the live stream.
 * Merges never go backwards: a late or replayed reading does not hide a newer value, and a
 * node's `last_heard` only moves forward (as the hub's own node table does).
 *
 * On the upstream (issue 12) `/api/v1/nodes` has one item per site that heard a node: the
 * picture keeps one node per id (the most recently heard item) and, beside it, which sites
 * heard it and when.
 */
import type { NodeJson } from '../api/types.js';
import { METRIC_KEYS, type MetricKey, type ReadingJson } from './metrics.js';

export type { NodeJson };

export interface LatestReading {
  nodeId: string;
  /** The newest reading's time (ms). */
  at: number;
  values: Partial<Record<MetricKey, { value: number; at: number }>>;
  /** Upstream only: the sites whose readings these are (a sensor posted to a site is no site's mesh node). */
  sites?: ReadonlySet<string>;
}

export interface MeshState {
  nodes: ReadonlyMap<string, NodeJson>;
  latest: ReadonlyMap<string, LatestReading>;
  /** Upstream only: node id → the sites that heard it → when each last did (ms; NaN unknown). */
  sites: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

export const EMPTY_MESH: MeshState = { nodes: new Map(), latest: new Map(), sites: new Map() };

const time = (iso: string | undefined): number => (iso === undefined ? Number.NaN : Date.parse(iso));

function withSite(sites: ReadonlySet<string> | undefined, site: unknown): ReadonlySet<string> | undefined {
  if (typeof site !== 'string' || sites?.has(site)) return sites;
  return new Set(sites).add(site);
}

function mergeReading(entry: LatestReading | undefined, reading: ReadingJson): LatestReading | undefined {
  const at = time(reading.timestamp);
  if (!Number.isFinite(at)) return entry;
  const next: LatestReading = entry
    ? { nodeId: entry.nodeId, at: Math.max(entry.at, at), values: { ...entry.values } }
    : { nodeId: reading.node_id, at, values: {} };
  const sites = withSite(entry?.sites, reading.site_id);
  if (sites) next.sites = sites;
  for (const key of METRIC_KEYS) {
    const value = reading[key];
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    const known = next.values[key];
    if (!known || known.at <= at) next.values[key] = { value, at };
  }
  return next;
}

function mergeNodeInto(nodes: Map<string, NodeJson>, update: NodeJson): void {
  const known = nodes.get(update.node_id);
  const merged: NodeJson = { ...known, node_id: update.node_id };
  for (const [key, value] of Object.entries(update) as Array<[keyof NodeJson, unknown]>) {
    if (value === undefined || value === null) continue;
    if (
      key === 'last_heard' &&
      known?.last_heard !== undefined &&
      !(time(value as string) > time(known.last_heard))
    ) {
      continue;
    }
    (merged as unknown as Record<string, unknown>)[key] = value;
  }
  nodes.set(update.node_id, merged);
}

function mergeReadingsInto(latest: Map<string, LatestReading>, readings: readonly ReadingJson[]): void {
  for (const reading of readings) {
    if (typeof reading?.node_id !== 'string') continue;
    const merged = mergeReading(latest.get(reading.node_id), reading);
    if (merged) latest.set(reading.node_id, merged);
  }
}

/** Readings merged field by field: each metric keeps its newest value. */
export function mergeReadings(state: MeshState, readings: readonly ReadingJson[]): MeshState {
  if (readings.length === 0) return state;
  const latest = new Map(state.latest);
  mergeReadingsInto(latest, readings);
  return { ...state, latest };
}

/** Notes that `node.site_id` heard the node (upstream items only); false when nothing changed. */
function noteSite(sites: Map<string, ReadonlyMap<string, number>>, node: NodeJson): boolean {
  if (typeof node.site_id !== 'string') return false;
  const heard = time(node.last_heard);
  const known = sites.get(node.node_id);
  const before = known?.get(node.site_id);
  if (before !== undefined && !(heard > before)) return false;
  sites.set(node.node_id, new Map(known).set(node.site_id, heard));
  return true;
}

/** A node update (all of a node, or the few fields one packet told): present fields win, except an older last_heard. */
export function mergeNode(state: MeshState, update: NodeJson): MeshState {
  if (typeof update?.node_id !== 'string') return state;
  const nodes = new Map(state.nodes);
  mergeNodeInto(nodes, update);
  const sites = new Map(state.sites);
  return { ...state, nodes, ...(noteSite(sites, update) ? { sites } : {}) };
}

/** Items with no last_heard first, then oldest first: merged in this order, the most recently heard wins. */
const byHeard = (a: NodeJson, b: NodeJson): number =>
  (time(a.last_heard) || -Infinity) - (time(b.last_heard) || -Infinity) || 0;

/**
 * A fresh snapshot replaces the picture; what the stream told while it was in flight and is
 * newer than the snapshot (a reading, a last_heard) is kept.
 */
export function snapshot(
  nodes: readonly NodeJson[],
  latest: readonly ReadingJson[],
  previous: MeshState,
): MeshState {
  const nodeMap = new Map<string, NodeJson>();
  const sites = new Map<string, ReadonlyMap<string, number>>();
  const items = nodes.filter((node) => typeof node?.node_id === 'string');
  // One item per site that heard the node (upstream): the most recently heard one's fields win,
  // the others fill in only what it lacks (a position its site has not heard yet).
  if (items.some((node) => node.site_id !== undefined)) items.sort(byHeard);
  for (const node of items) {
    mergeNodeInto(nodeMap, node);
    noteSite(sites, node);
  }
  const latestMap = new Map<string, LatestReading>();
  mergeReadingsInto(latestMap, latest);
  for (const [id, before] of previous.nodes) {
    if (nodeMap.has(id) && before.last_heard !== undefined) {
      mergeNodeInto(nodeMap, { node_id: id, last_heard: before.last_heard });
    }
  }
  for (const [id, before] of previous.latest) {
    const now = latestMap.get(id);
    if (!now || before.at <= now.at) continue;
    const values = { ...now.values };
    for (const key of METRIC_KEYS) {
      const old = before.values[key];
      if (old && old.at > (values[key]?.at ?? -Infinity)) values[key] = old;
    }
    const sites = [...(before.sites ?? [])].reduce(withSite, now.sites);
    latestMap.set(id, { nodeId: id, at: before.at, values, ...(sites ? { sites } : {}) });
  }
  return { nodes: nodeMap, latest: latestMap, sites };
}

/** The sites that heard the node, most recently first (none on a hub). */
export function heardBy(state: MeshState, nodeId: string): string[] {
  const sites = state.sites.get(nodeId);
  if (!sites) return [];
  return [...sites]
    .sort(([a, at], [b, bt]) => (bt || -Infinity) - (at || -Infinity) || a.localeCompare(b))
    .map(([site]) => site);
}

/** When the node was last heard: its node record, or its newest reading if that is newer. */
export function lastHeard(state: MeshState, nodeId: string): number | undefined {
  const heard = time(state.nodes.get(nodeId)?.last_heard);
  const reading = state.latest.get(nodeId)?.at;
  const candidates = [heard, reading ?? Number.NaN].filter(Number.isFinite);
  return candidates.length ? Math.max(...candidates) : undefined;
}

export function hasPosition(node: NodeJson): node is NodeJson & { latitude: number; longitude: number } {
  return (
    typeof node.latitude === 'number' &&
    typeof node.longitude === 'number' &&
    Number.isFinite(node.latitude) &&
    Number.isFinite(node.longitude) &&
    Math.abs(node.latitude) <= 90 &&
    Math.abs(node.longitude) <= 180 &&
    // Firmware sends 0,0 for "no fix" on some boards; nobody runs a sensor at Null Island.
    !(node.latitude === 0 && node.longitude === 0)
  );
}

export function displayName(node: NodeJson | undefined, nodeId: string): string {
  return node?.long_name || node?.short_name || nodeId;
}

/**
 * A sensor known only from its readings (posted over HTTP or MQTT ingestion): no radio heard it,
 * so `/api/v1/nodes` has no record of it and it cannot be messaged.
 */
export function isSensorOnly(state: MeshState, nodeId: string): boolean {
  return !state.nodes.has(nodeId) && state.latest.has(nodeId);
}

/**
 * Whether the node belongs under the upstream's `?site=` filter: the site heard it, or, for a
 * sensor known only from its readings, the site reported them.
 */
export function atSite(state: MeshState, nodeId: string, site: string): boolean {
  if (state.sites.get(nodeId)?.has(site)) return true;
  return isSensorOnly(state, nodeId) && !!state.latest.get(nodeId)?.sites?.has(site);
}

/**
 * Nodes in a stable order (by name), so the list does not jump as readings arrive; with
 * `sensors`, also the sensors known only from their readings (the map's list shows them).
 */
export function sortedNodes(state: MeshState, options: { sensors?: boolean } = {}): NodeJson[] {
  const sensors = options.sensors
    ? [...state.latest.keys()].filter((id) => !state.nodes.has(id)).map((id) => ({ node_id: id }))
    : [];
  return [...state.nodes.values(), ...sensors].sort(
    (a, b) =>
      displayName(a, a.node_id).localeCompare(displayName(b, b.node_id), undefined, {
        sensitivity: 'base',
      }) || a.node_id.localeCompare(b.node_id),
  );
}

export function nodeIdFromNum(num: number): string {
  return `!${(num >>> 0).toString(16).padStart(8, '0')}`;
}
