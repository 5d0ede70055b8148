/**
 * Fetches a node's history for a plan, following `Link: <…>; rel="next"` until the range is
 * complete (raw readings page at up to 10 000 a request; a year of 5-minute readings is 11
 * pages). Bounded: a chart needs no more than MAX_ROWS points.
 */
import { request } from '../api/client.js';
import type { HistoryPlan } from '../lib/history-plan.js';
import { nextLink } from '../lib/link-header.js';
import type { ReadingJson } from '../lib/metrics.js';
import { readToken } from '../state/read-access.js';

export const PAGE_LIMIT = 10_000;
export const MAX_ROWS = 200_000;

export interface LoadedHistory {
  rows: ReadingJson[];
  /** More rows existed than MAX_ROWS: the chart shows the first MAX_ROWS. */
  truncated: boolean;
}

export async function loadHistory(
  nodeId: string,
  plan: HistoryPlan,
  signal: AbortSignal,
  /** The upstream: only what this site heard. */
  site?: string,
): Promise<LoadedHistory> {
  const params = new URLSearchParams({
    node_id: nodeId,
    start: new Date(plan.start).toISOString(),
    end: new Date(plan.end).toISOString(),
    interval: plan.interval,
    limit: String(PAGE_LIMIT),
    ...(site ? { site } : {}),
  });
  return loadPages<ReadingJson>(`/api/v1/weather/history?${params}`, signal);
}

/** Every page from `firstPath` on (following `Link: rel="next"`), at most MAX_ROWS rows: any paged history. */
export async function loadPages<T>(
  firstPath: string,
  signal: AbortSignal,
): Promise<{ rows: T[]; truncated: boolean }> {
  let path: string | undefined = firstPath;
  const rows: T[] = [];
  while (path) {
    const response: { body: { data: T[] }; headers: Headers } = await request(path, {
      signal,
      token: readToken(),
    });
    const page = Array.isArray(response.body?.data) ? response.body.data : [];
    rows.push(...page);
    path = nextLink(response.headers.get('link'));
    if (rows.length >= MAX_ROWS)
      return { rows: rows.slice(0, MAX_ROWS), truncated: path !== undefined || rows.length > MAX_ROWS };
  }
  return { rows, truncated: false };
}
