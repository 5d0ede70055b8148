/**
 * The dashboard's connection to `GET /api/v1/live`: status in the header, readings and nodes
 * into the mesh store. The upstream's stream says `mode: 'upstream'` in its hello and sends its
 * `sites` after it; that mode also starts the 30-s resync (state/sites.ts). An upstream whose
 * reads need a sign-in (state/read-access.ts) gets no stream until someone signs in, and a
 * signed-in user's stream opens with a ticket; signing in or out reconnects it.
 */
import type { HelloEvent, RadioStatus } from '../api/types.js';
import type { NodeJson } from '../lib/mesh-state.js';
import type { ReadingJson } from '../lib/metrics.js';
import { applyFiring } from '../notifications/live-firings.js';
import { hubStore } from '../state/hub.js';
import { applyNode, applyReadings, refreshMesh } from '../state/mesh.js';
import { liveStreamUrl, serverFacts } from '../state/read-access.js';
import { sessionStore } from '../state/session.js';
import { applySites, startUpstreamRefresh } from '../state/sites.js';
import { ReconnectingStream } from './event-stream.js';

let loadedVersion: string | undefined;

export function startHubLive(): ReconnectingStream {
  const stream = new ReconnectingStream({
    url: liveStreamUrl,
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
      notification: applyFiring,
      ping: () => {},
    },
  });
  void startWhenReadable(stream);
  document.addEventListener('visibilitychange', () => {
    // A phone that slept has a stream it cannot trust: reconnect and resync at once.
    if (
      document.visibilityState === 'visible' &&
      hubStore.get().connection !== 'open' &&
      !hubStore.get().signInToRead
    )
      stream.reconnectNow();
  });
  return stream;
}

/** Opens the stream, on an upstream only once its reads are allowed (again on every sign-in or out). */
async function startWhenReadable(stream: ReconnectingStream): Promise<void> {
  const facts = await serverFacts().catch(() => undefined);
  if (facts?.role !== 'upstream') {
    stream.start();
    return;
  }
  hubStore.set((s) => ({ ...s, mode: 'upstream' }));
  let running = false;
  let token: string | undefined;
  const follow = () => {
    const next = sessionStore.get().session?.token;
    const signInToRead = !facts.publicRead && next === undefined;
    hubStore.set((s) => (s.signInToRead === signInToRead ? s : { ...s, signInToRead }));
    if (signInToRead) {
      if (running) stream.stop();
      running = false;
    } else if (!running) {
      running = true;
      stream.start();
    } else if (next !== token) stream.reconnectNow();
    token = next;
  };
  sessionStore.subscribe(follow);
  follow();
}
