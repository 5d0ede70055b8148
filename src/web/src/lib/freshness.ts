/**
 * How recently a node was heard, in four steps the map colours and the list names. A sensor
 * reports every few minutes, so a quarter of an hour of silence is still normal.
 */
import { t } from '../i18n/index.js';

export type Freshness = 'live' | 'recent' | 'stale' | 'silent';

export const FRESHNESS_LIMITS_MS = {
  live: 15 * 60_000,
  recent: 2 * 3_600_000,
  stale: 24 * 3_600_000,
} as const;

/** `heard in the last 15 min`, in the language in use. */
export function freshnessLabel(step: Freshness): string {
  return t(`mesh.freshness.${step}`);
}

export function freshness(lastHeardMs: number | undefined, nowMs: number): Freshness {
  if (lastHeardMs === undefined || !Number.isFinite(lastHeardMs)) return 'silent';
  const age = nowMs - lastHeardMs;
  if (age <= FRESHNESS_LIMITS_MS.live) return 'live';
  if (age <= FRESHNESS_LIMITS_MS.recent) return 'recent';
  if (age <= FRESHNESS_LIMITS_MS.stale) return 'stale';
  return 'silent';
}
