/**
 * The mesh API (issue 16, part 1; docs/mesh-api.md): the hub's radio re-exposed to the official
 * Meshtastic apps on TCP. Its code is loaded only when MESH_API is on: an idle hub without it
 * keeps its memory (issue 17). It taps the radio link for its mirror, and clients' packets take
 * turns in the messaging gateway's airtime-paced queue (`messaging.sendPaced`), never straight
 * to the radio.
 */
import '../messaging/events.js';
import { defineModule } from '../module.js';
import { meshApiSettings } from './settings.js';

/** The mesh API bounds each send itself (mesh-api-actor.ts); the bus only must not cut it shorter. */
const PACED_SEND_ASK_MS = 10 * 60_000;

export const meshApiModule = defineModule({
  name: 'mesh-api',
  settings: meshApiSettings,
  async create(ctx) {
    if (!ctx.settings.MESH_API) return { actors: [] };
    const { RadioMirror, createMeshApiActor } = await import('./index.js');
    const mirror = new RadioMirror({
      onListenerError: (err) => ctx.log.error({ err }, 'mesh API listener failed'),
    });
    ctx.radio.tap(mirror);
    const actor = createMeshApiActor({
      settings: ctx.settings,
      bus: ctx.bus,
      log: ctx.log,
      db: ctx.db,
      registry: ctx.metrics.core.registry,
      mirror,
      airtime: {
        sendPaced: (payloadBytes, transmit) =>
          ctx.bus.ask('messaging.sendPaced', { payloadBytes, transmit }, { timeoutMs: PACED_SEND_ASK_MS }),
      },
    });
    return { actors: [actor] };
  },
});
