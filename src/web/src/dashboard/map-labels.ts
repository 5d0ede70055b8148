/**
 * What each map marker says, and which markers keep their label when they crowd each other.
 * Plain functions (no Leaflet), so the rules are tested without a browser.
 */
import type { Freshness } from '../lib/freshness.js';
import type { NodeView } from '../lib/node-view.js';

/** The longest label a marker carries; a longer site name is cut with an ellipsis. */
export const MAX_LABEL_CHARS = 12;

function shorten(text: string): string {
  const chars = [...text];
  return chars.length <= MAX_LABEL_CHARS ? text : `${chars.slice(0, MAX_LABEL_CHARS - 1).join('')}…`;
}

/**
 * Each placed node's marker label: its short name, unless other nodes on the map share it. On the
 * upstream two sites' radios are often both "HUB": each is then labelled by the site that heard
 * it (its own site), and where that does not tell them apart either, by the end of its node id.
 */
export function markerLabels(
  nodes: readonly Pick<NodeView, 'id' | 'shortName' | 'sites'>[],
): Map<string, string> {
  const labels = new Map<string, string>();
  const byName = new Map<string, Array<(typeof nodes)[number]>>();
  for (const node of nodes) {
    const same = byName.get(node.shortName);
    if (same) same.push(node);
    else byName.set(node.shortName, [node]);
  }
  for (const [name, same] of byName) {
    if (same.length === 1) {
      labels.set(same[0]!.id, name);
      continue;
    }
    const bySite = same.map((node) => (node.sites?.[0] ? shorten(node.sites[0]) : undefined));
    const distinct = bySite.every((label, i) => label !== undefined && bySite.indexOf(label) === i);
    same.forEach((node, i) => {
      labels.set(node.id, distinct ? bySite[i]! : node.id.replace(/^!/, '').slice(-4));
    });
  }
  return labels;
}

/** Pixel width of a marker that shows `label` (12-px bold text, padding and border). */
export function markerWidth(label: string): number {
  return Math.max(46, Math.round([...label].length * 8.5 + 18));
}

export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export function overlaps(a: Box, b: Box): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

const FRESH_RANK: Record<Freshness, number> = { live: 0, recent: 1, stale: 2, silent: 3 };

export interface LabelCandidate {
  id: string;
  box: Box;
  isHub: boolean;
  freshness: Freshness;
  label: string;
}

/**
 * The markers that keep their label: the hub's radio first, then the most recently heard, then by
 * label; a marker whose label would overlap one already kept shows as a dot (still there, still
 * focusable, its name in its tooltip and popup).
 */
export function keptLabels(candidates: readonly LabelCandidate[]): Set<string> {
  const order = [...candidates].sort(
    (a, b) =>
      Number(b.isHub) - Number(a.isHub) ||
      FRESH_RANK[a.freshness] - FRESH_RANK[b.freshness] ||
      a.label.localeCompare(b.label) ||
      a.id.localeCompare(b.id),
  );
  const kept = new Set<string>();
  const placed: Box[] = [];
  for (const candidate of order) {
    if (placed.some((box) => overlaps(box, candidate.box))) continue;
    kept.add(candidate.id);
    placed.push(candidate.box);
  }
  return kept;
}
