/**
 * The dashboard's connection to `GET /api/v1/live`: status in the header, readings and nodes
 * into the mesh store. The upstream's stream says `mode: 'upstream'` in its hello and sends its
 * `sites` after it; that mode also starts the 30-s resync (state/sites.ts).
 */
import type { HelloEvent, RadioStatus } from '../api/types.js';
import type { NodeJson } from '../lib/mesh-state.js';
import type { ReadingJson } from '../lib/metrics.js';
import { hubStore } from '../state/hub.js';
import { applyNode, applyReadings, refreshMesh } from '../state/mesh.js';
import { applySites, startUpstreamRefresh } from '../state/sites.js';
import { ReconnectingStream } from './event-stream.js';

let loadedVersion: string | undefined;

export function startHubLive(): ReconnectingStream {
  const stream = new ReconnectingStream({
    url: async () => '/api/v1/live',
    onState: (connection) => hubStore.set((s) => ({ ...s, connection })),
    events: {
      hello: (data) => {
        const hello = data as HelloEvent;
        loadedVersion ??= hello.version;
        hubStore.set((s) => ({
          ...s,
          version: hello.version,
          startedAt: hello.started_at,
          radio: hello.radio,
          plugins: hello.plugins,
          mode: hello.mode ?? 'hub',
          everConnected: true,
          ...(hello.version !== loadedVersion ? { updatedTo: hello.version } : {}),
        }));
        // After every (re)connection: what happened while we were away is in the snapshot.
        void refreshMesh();
        if (hello.mode === 'upstream') startUpstreamRefresh();
      },
      sites: applySites,
      readings: (data) => {
        const readings = (data as { data?: ReadingJson[] }).data;
        if (Array.isArray(readings)) applyReadings(readings);
      },
      node: (data) => applyNode(data as NodeJson),
      radio: (data) => hubStore.set((s) => ({ ...s, radio: data as RadioStatus })),
      ping: () => {},
    },
  });
  stream.start();
  document.addEventListener('visibilitychange', () => {
    // A phone that slept has a stream it cannot trust: reconnect and resync at once.
    if (document.visibilityState === 'visible' && hubStore.get().connection !== 'open') stream.reconnectNow();
  });
  return stream;
}
