/**
 * Firings as they happen, from the live stream's `notification` events (live/hub-live.ts): the
 * notifications page shows them at once, so a browser whose push service cannot be reached (a LAN
 * without internet) still sees every firing while the page is open.
 */
import type { FiringJson } from '../../../notifications/schemas.js';
import { createStore } from '../lib/store.js';

export type { FiringJson };

/** The newest first, at most this many. */
const KEEP = 100;

export const liveFiringsStore = createStore<{ firings: FiringJson[] }>({ firings: [] });

export function applyFiring(data: unknown): void {
  const f = data as FiringJson;
  if (typeof f?.id !== 'number' || typeof f.message !== 'string') return;
  liveFiringsStore.set((s) =>
    s.firings.some((x) => x.id === f.id) ? s : { firings: [f, ...s.firings].slice(0, KEEP) },
  );
}
