/**
 * Traceroutes and links in the browser: the calls (`/api/v1/links`, `/api/v1/traceroutes`,
 * `POST /api/v1/nodes/{id}/traceroute`), the SNR classes the map and the node page colour by,
 * and how a link fades with age. On the upstream there are none (the hub's own feature).
 */
import { useEffect, useState } from 'preact/hooks';
import type { LinkJson, TracerouteJson } from '../../../topology/schemas.js';
import { getJson, request } from '../api/client.js';
import { useStore } from '../hooks.js';
import { tokenRoles } from '../lib/jwt.js';
import { hubStore } from '../state/hub.js';
import { sessionStore } from '../state/session.js';

export type { LinkJson, TracerouteJson };

/** The roles that may send a traceroute (src/topology/routes.ts TRACEROUTE_ROLES). */
const TRACEROUTE_ROLES = ['admin', 'operator'];
/** How often the map asks for links again. */
const LINKS_EVERY_MS = 60_000;
/** A link this old is drawn at its faintest. */
const FADED_AFTER_MS = 24 * 3_600_000;

export type SnrClass = 'good' | 'fair' | 'poor' | 'unknown';

/** Good ≥ 5 dB, fair ≥ −5 dB, poor below: LoRa still decodes well under 0 dB, down to about −15 dB at LongFast. */
export function snrClass(snr: number | undefined): SnrClass {
  if (snr === undefined) return 'unknown';
  if (snr >= 5) return 'good';
  if (snr >= -5) return 'fair';
  return 'poor';
}

/** 1 for a link heard just now, down to 0.25 a day later and after. */
export function linkOpacity(lastHeard: string, now: number): number {
  const age = Math.max(0, now - Date.parse(lastHeard));
  return Math.max(0.25, 1 - (0.75 * age) / FADED_AFTER_MS);
}

export const snrText = (snr: number | undefined) =>
  snr === undefined ? 'SNR ?' : `${snr.toFixed(2).replace(/\.?0+$/, '')} dB`;

/** Whether the signed-in user may send traceroutes (the hub checks again). */
export function useCanTrace(): string | undefined {
  const { session } = useStore(sessionStore);
  if (!session) return undefined;
  return tokenRoles(session.token).some((r) => TRACEROUTE_ROLES.includes(r)) ? session.token : undefined;
}

/** The hub's links, asked for again every minute; none on the upstream. */
export function useLinks(nodeId?: string): LinkJson[] {
  const { mode } = useStore(hubStore);
  const [links, setLinks] = useState<LinkJson[]>([]);
  useEffect(() => {
    if (mode !== 'hub') return;
    let stopped = false;
    const load = () =>
      getJson<{ data: LinkJson[] }>(`/api/v1/links${nodeId ? `?node_id=${encodeURIComponent(nodeId)}` : ''}`)
        .then((body) => {
          if (!stopped) setLinks(body.data);
        })
        .catch(() => {});
    void load();
    const timer = setInterval(load, LINKS_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [mode, nodeId]);
  return links;
}

export function getTraceroute(id: string): Promise<TracerouteJson> {
  return getJson<TracerouteJson>(`/api/v1/traceroutes/${encodeURIComponent(id)}`);
}

export function listTraceroutes(nodeId: string, limit = 5): Promise<TracerouteJson[]> {
  return getJson<{ data: TracerouteJson[] }>(
    `/api/v1/traceroutes?node_id=${encodeURIComponent(nodeId)}&limit=${limit}`,
  ).then((body) => body.data);
}

export async function sendTraceroute(nodeId: string, token: string): Promise<TracerouteJson> {
  return (
    await request<TracerouteJson>(`/api/v1/nodes/${encodeURIComponent(nodeId)}/traceroute`, {
      method: 'POST',
      token,
    })
  ).body;
}

/**
 * What `load` answers, once it does (`initial` until then, and again whenever `key` changes);
 * a failed load leaves `initial`. `set` replaces it (a page's own changes).
 */
export function useLoaded<T>(
  key: string | undefined,
  load: (key: string) => Promise<T>,
  initial: T,
): [T, (update: (current: T) => T) => void] {
  const [value, setValue] = useState<T>(initial);
  useEffect(() => {
    setValue(initial);
    if (!key) return;
    let stopped = false;
    load(key)
      .then((loaded) => {
        if (!stopped) setValue(loaded);
      })
      .catch(() => {});
    return () => {
      stopped = true;
    };
  }, [key]);
  return [value, setValue];
}

/** The traceroute a map address names (`/?traceroute=<id>`), once loaded. */
export function useTraceroute(id: string | undefined): TracerouteJson | undefined {
  return useLoaded<TracerouteJson | undefined>(id, getTraceroute, undefined)[0];
}

/** The map's address showing a traceroute's path. */
export const traceroutePath = (trace: Pick<TracerouteJson, 'id' | 'node_id'>) =>
  `/?node=${encodeURIComponent(trace.node_id)}&traceroute=${encodeURIComponent(trace.id)}`;
