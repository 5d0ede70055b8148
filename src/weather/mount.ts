import type { RouteProvider } from '../http/routes.js';
import type { Database } from '../store/database.js';
import { weatherRoutes } from './routes.js';
import { WeatherService } from './weather-service.js';

/** /api/v1/weather, with its caches invalidated by every `reading.stored`. */
export function weatherRouteProvider(db: () => Database): RouteProvider {
  return ({ bus, owner }) => {
    const weather = new WeatherService({ db: db() });
    bus.on(owner, 'reading.stored', (stored) => weather.invalidate(stored.readings));
    return { path: '/api/v1/weather', app: weatherRoutes(weather), component: 'weather' };
  };
}
