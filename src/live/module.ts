/** The dashboard's public live stream, `GET /api/v1/live` (see mount.ts for its events). */
import { z } from 'zod';
import { defineModule } from '../module.js';
import { liveRoutes } from './mount.js';

export const liveModule = defineModule({
  name: 'live',
  settings: z.object({}),
  create(ctx) {
    ctx.mount('/api/v1/live', liveRoutes({ bus: ctx.bus, owner: ctx.owner, hub: ctx.hub }), {
      component: 'hub',
    });
    return {};
  },
});
