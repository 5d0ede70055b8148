/**
 * Upstream sync, the site side (issue 12, docs/sync.md): a core module that does nothing unless
 * SYNC_UPSTREAM_URL is set. Then the outbox triggers are created before any actor starts (so no
 * record written at start-up misses its outbox entry), and the sync actor pushes the outbox to
 * the upstream and holds the downlink. Without an upstream the triggers are dropped: a hub that
 * does not sync writes no outbox.
 */
import { defineModule } from '../../src/module.js';
import { disableOutbox, enableOutbox } from './outbox-schema.js';
import { syncConfigFrom, syncSettings } from './settings.js';

export const syncModule = defineModule({
  name: 'sync',
  settings: syncSettings,
  async create(ctx) {
    const config = syncConfigFrom(ctx.settings);
    if (!config) {
      disableOutbox(ctx.db);
      return {};
    }
    enableOutbox(ctx.db);
    // Loaded only when the hub syncs: the push, the downlink socket (ws), request signing (jose)
    // and the protocol's schemas cost an idle hub that does not sync several MB (docs/edge-fitness.md).
    const [{ redactedUrl, SyncPushActor }, { SyncMetrics }] = await Promise.all([
      import('./push-actor.js'),
      import('./metrics.js'),
    ]);
    ctx.log.info(
      { upstream: redactedUrl(config.upstream), site: config.siteId },
      'sync with the upstream enabled',
    );
    const actor = new SyncPushActor({
      config,
      db: ctx.db,
      bus: ctx.bus,
      log: ctx.log,
      signer: ctx.auth.signer,
      metrics: new SyncMetrics(ctx.metrics),
    });
    return { actors: [actor] };
  },
});
