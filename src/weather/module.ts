/** Weather readings over HTTP (`/api/v1/weather`), with caches invalidated by every `reading.stored`. */
import { z } from 'zod';
import { defineModule } from '../module.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { weatherRoutes } from './routes.js';
import { WeatherService } from './weather-service.js';

export const weatherModule = defineModule({
  name: 'weather',
  settings: z.object({}),
  create(ctx) {
    const nodes = new NodeRepository(ctx.db);
    // Asked by an old id, history answers the renumbered node's (README "Nodes that change their number").
    const weather = new WeatherService({ db: ctx.db, resolveNodeId: (id) => nodes.resolve(id) });
    ctx.bus.on(ctx.owner, 'reading.stored', (stored) => weather.invalidate(stored.readings));
    // The ingest writer moves the readings during this emit; drop what was cached once it has.
    ctx.bus.on(ctx.owner, 'node.renumbered', () => setImmediate(() => weather.invalidate()));
    ctx.mount('/api/v1/weather', weatherRoutes(weather), { component: 'weather' });
    return {};
  },
});
