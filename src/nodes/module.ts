/** The node table: every `node.updated` merged into its node's row, served at `/api/v1/nodes`. */
import { z } from 'zod';
import { defineModule } from '../module.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { NodeDirectoryActor } from './node-directory-actor.js';
import { nodesRoutes } from './routes.js';

export const nodesModule = defineModule({
  name: 'nodes',
  settings: z.object({}),
  create(ctx) {
    ctx.mount('/api/v1/nodes', nodesRoutes(new NodeRepository(ctx.db)), { component: 'weather' });
    return { actors: [new NodeDirectoryActor({ bus: ctx.bus, db: ctx.db })] };
  },
});
