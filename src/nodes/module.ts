/**
 * The node table: every `node.updated` merged into its node's row, served at `/api/v1/nodes`;
 * nodes renumbered by firmware 2.8 linked to their old number (renumber.ts).
 */
import { defineModule } from '../module.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { NodeDirectoryActor } from './node-directory-actor.js';
import { nodesRoutes } from './routes.js';
import { nodesSettings } from './settings.js';

export const nodesModule = defineModule({
  name: 'nodes',
  settings: nodesSettings,
  create(ctx) {
    ctx.mount('/api/v1/nodes', nodesRoutes(new NodeRepository(ctx.db)), { component: 'weather' });
    const renumbered = ctx.metrics.counter({
      name: 'nodes_renumbered_total',
      help: 'Nodes linked to the node they were before firmware 2.8 renumbered them (same public key)',
    });
    const keyMismatches = ctx.metrics.counter({
      name: 'node_key_mismatches_total',
      help: 'NodeInfo carrying a public key other than the one kept for its node number (not taken)',
    });
    return {
      actors: [
        new NodeDirectoryActor({
          bus: ctx.bus,
          db: ctx.db,
          log: ctx.log,
          quietMs: ctx.settings.NODE_RENUMBER_QUIET,
          counters: { renumbered: () => renumbered.inc(), keyMismatch: () => keyMismatches.inc() },
        }),
      ],
    };
  },
});
