/** The dashboard's public live stream, `GET /api/v1/live` (see live-routes.ts for its events). */
import { defineModule } from '../module.js';
import { liveRoutes } from './live-routes.js';
import { liveSettings } from './settings.js';

export const liveModule = defineModule({
  name: 'live',
  settings: liveSettings,
  create(ctx) {
    const limits = { maxClientsPerAddress: ctx.settings.LIVE_MAX_STREAMS_PER_ADDRESS };
    ctx.mount('/api/v1/live', liveRoutes({ bus: ctx.bus, owner: ctx.owner, hub: ctx.hub, limits }), {
      component: 'hub',
    });
    return {};
  },
});
