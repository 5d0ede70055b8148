/** Weather readings over HTTP (`/api/v1/weather`), with caches invalidated by every `reading.stored`. */
import { z } from 'zod';
import { defineModule } from '../module.js';
import { weatherRoutes } from './routes.js';
import { WeatherService } from './weather-service.js';

export const weatherModule = defineModule({
  name: 'weather',
  settings: z.object({}),
  create(ctx) {
    const weather = new WeatherService({ db: ctx.db });
    ctx.bus.on(ctx.owner, 'reading.stored', (stored) => weather.invalidate(stored.readings));
    ctx.mount('/api/v1/weather', weatherRoutes(weather), { component: 'weather' });
    return {};
  },
});
