/** The mesh the dashboard and node pages show: a snapshot from the API, kept current by the live stream. */
import { getJson } from '../api/client.js';
import {
  EMPTY_MESH,
  type MeshState,
  mergeNode,
  mergeReadings,
  type NodeJson,
  snapshot,
} from '../lib/mesh-state.js';
import type { ReadingJson } from '../lib/metrics.js';
import type { ApiError } from '../lib/problem.js';
import { createStore } from '../lib/store.js';
import { readToken } from './read-access.js';

export interface MeshView {
  mesh: MeshState;
  loaded: boolean;
  error?: ApiError;
}

export const meshStore = createStore<MeshView>({ mesh: EMPTY_MESH, loaded: false });

const readingListeners = new Set<(readings: ReadingJson[]) => void>();

/** Live readings as they are stored (the node page extends its charts with them). */
export function onLiveReadings(listener: (readings: ReadingJson[]) => void): () => void {
  readingListeners.add(listener);
  return () => readingListeners.delete(listener);
}

let inFlight: Promise<void> | undefined;

export function refreshMesh(): Promise<void> {
  inFlight ??= (async () => {
    try {
      const [nodes, latest] = await Promise.all([
        getJson<{ data: NodeJson[] }>('/api/v1/nodes', { token: readToken() }),
        getJson<{ data: ReadingJson[] }>('/api/v1/weather/latest', { token: readToken() }),
      ]);
      meshStore.set((view) => ({
        mesh: snapshot(
          Array.isArray(nodes?.data) ? nodes.data : [],
          Array.isArray(latest?.data) ? latest.data : [],
          view.mesh,
        ),
        loaded: true,
      }));
    } catch (error) {
      meshStore.set((view) => ({ ...view, error: error as ApiError }));
    } finally {
      inFlight = undefined;
    }
  })();
  return inFlight;
}

export function applyReadings(readings: ReadingJson[]): void {
  meshStore.set((view) => ({ ...view, mesh: mergeReadings(view.mesh, readings) }));
  for (const listener of readingListeners) listener(readings);
}

export function applyNode(node: NodeJson): void {
  meshStore.set((view) => ({ ...view, mesh: mergeNode(view.mesh, node) }));
}
