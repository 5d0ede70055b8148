/**
 * The upstream's sites (`GET /api/v1/sites`), and the upstream's periodic resync. Batches that
 * another upstream process applied behind the same load balancer never reach this process's
 * live stream, so in upstream mode the sites and the mesh snapshot are fetched again every
 * 30 s (while the page is visible, and at once when it becomes visible again).
 */
import { request } from '../api/client.js';
import type { SiteJson } from '../api/types.js';
import type { ApiError } from '../lib/problem.js';
import { siteLabel } from '../lib/site-health.js';
import { createStore } from '../lib/store.js';
import { refreshMesh } from './mesh.js';
import { readToken } from './read-access.js';

export interface SitesView {
  sites: SiteJson[];
  loaded: boolean;
  error?: ApiError;
  /** The upstream's clock minus this browser's (from the answer's Date header): health is judged on the upstream's. */
  clockOffsetMs: number;
}

export const UPSTREAM_REFRESH_MS = 30_000;

export const sitesStore = createStore<SitesView>({ sites: [], loaded: false, clockOffsetMs: 0 });

function validSites(data: unknown): SiteJson[] | undefined {
  if (!Array.isArray(data)) return undefined;
  return data.filter(
    (s): s is SiteJson => !!s && typeof s === 'object' && typeof (s as SiteJson).site_id === 'string',
  );
}

/** The sites the live stream sent after `hello`. */
export function applySites(data: unknown): void {
  const sites = validSites((data as { data?: unknown } | undefined)?.data);
  if (sites) sitesStore.set((s) => ({ ...s, sites, loaded: true, error: undefined }));
}

let inFlight: Promise<void> | undefined;

export function refreshSites(): Promise<void> {
  inFlight ??= (async () => {
    try {
      const asked = Date.now();
      const { body, headers } = await request<{ data?: unknown }>('/api/v1/sites', { token: readToken() });
      const serverNow = Date.parse(headers.get('date') ?? '');
      // Date has whole seconds: an offset under a few seconds is noise, not a wrong clock.
      const offset = Number.isFinite(serverNow) ? serverNow - (asked + Date.now()) / 2 : 0;
      sitesStore.set((s) => ({
        sites: validSites(body?.data) ?? s.sites,
        loaded: true,
        clockOffsetMs: Math.abs(offset) > 5_000 ? offset : 0,
      }));
    } catch (error) {
      sitesStore.set((s) => ({ ...s, error: error as ApiError }));
    } finally {
      inFlight = undefined;
    }
  })();
  return inFlight;
}

/** site_id → the name people read. */
export function siteNames(sites: readonly SiteJson[]): Map<string, string> {
  return new Map(sites.map((site) => [site.site_id, siteLabel(site)]));
}

let timer: ReturnType<typeof setInterval> | undefined;

/** Starts the upstream's 30-s resync (once; the first `hello` that says `upstream` calls it). */
export function startUpstreamRefresh(): void {
  if (timer) return;
  void refreshSites();
  const resync = () => {
    void refreshSites();
    void refreshMesh();
  };
  timer = setInterval(() => {
    if (document.visibilityState !== 'hidden') resync();
  }, UPSTREAM_REFRESH_MS);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') resync();
  });
}
