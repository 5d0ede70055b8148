/**
 * Traceroutes and neighbour links (issue 27): the hub traces a route on request, keeps the
 * traceroutes it hears, and learns links from NEIGHBORINFO_APP and traceroute hops
 * (topology-actor.ts). Routes: routes.ts; settings: settings.ts.
 */
import { defineModule } from '../module.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { mqttTopologyFeed } from './mqtt-feed.js';
import { linkRoutes, TRACEROUTE_ROLES, tracerouteRequestRoutes, tracerouteRoutes } from './routes.js';
import { topologySettings } from './settings.js';
import { TopologyActor } from './topology-actor.js';

export const topologyModule = defineModule({
  name: 'topology',
  settings: topologySettings,
  create(ctx) {
    const actor = new TopologyActor({
      bus: ctx.bus,
      db: ctx.db,
      log: ctx.log,
      settings: ctx.settings,
      metrics: ctx.metrics,
      feed: mqttTopologyFeed(ctx.mqtt),
    });
    const repo = () => actor.repository;
    ctx.mount(
      '/api/v1/nodes/:node_id/traceroute',
      tracerouteRequestRoutes({
        repo,
        nodes: new NodeRepository(ctx.db),
        myNodeNum: () => ctx.bus.last('radio.status')?.myNodeNum,
        request: (nodeId, channel) => actor.request(nodeId, channel),
        requireRole: ctx.auth.require(TRACEROUTE_ROLES),
      }),
      { component: 'hub' },
    );
    ctx.mount('/api/v1/traceroutes', tracerouteRoutes({ repo }), { component: 'hub' });
    ctx.mount('/api/v1/links', linkRoutes({ repo }), { component: 'hub' });
    return { actors: [actor] };
  },
});
