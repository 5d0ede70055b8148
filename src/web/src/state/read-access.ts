/**
 * Reading the upstream needs a signed-in user unless it runs with UPSTREAM_PUBLIC_READ (README
 * "The upstream's reads"); a hub's reads need none. `GET /api/version` (open on both) says which
 * server this is before the live stream opens: on an upstream that needs a sign-in, the stream
 * waits for one and the map, node and sites pages show the sign-in form instead of errors.
 */
import { getJson, request } from '../api/client.js';
import type { ServerMode } from '../api/types.js';
import { hubStore } from './hub.js';
import { currentToken } from './session.js';

export interface ServerFacts {
  role: ServerMode;
  /** An upstream whose reads are open to anonymous callers. */
  publicRead: boolean;
}

/** Which server this is; a failed request is asked again next time. */
export async function serverFacts(): Promise<ServerFacts> {
  const body = await getJson<{ role?: string; public_read?: boolean }>('/api/version');
  return { role: body?.role === 'upstream' ? 'upstream' : 'hub', publicRead: body?.public_read === true };
}

/** The bearer token for a read: the signed-in user's on the upstream (a hub's reads are open). */
export function readToken(): string | undefined {
  return hubStore.get().mode === 'upstream' ? currentToken() : undefined;
}

/** The live stream's URL: on the upstream, a signed-in user's comes with a single-use ticket. */
export async function liveStreamUrl(): Promise<string> {
  const token = readToken();
  if (!token) return '/api/v1/live';
  const { body } = await request<{ ticket: string }>('/api/v1/live/tickets', { method: 'POST', token });
  return `/api/v1/live?ticket=${encodeURIComponent(body.ticket)}`;
}
