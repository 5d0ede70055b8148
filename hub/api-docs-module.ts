/**
 * The mesh API's machine-readable description: `GET /api/v1/openapi.json`, and with API_DOCS=true
 * an interactive page at `/api/v1/docs` (off by default, as the audit spec has its framework's).
 * The document is built from the same zod schemas the routes validate with.
 */
import { z } from 'zod';
import { openApiRoutes } from '../src/http/api-docs.js';
import { defineModule } from '../src/module.js';
import { meshOpenApiDocument } from './openapi.js';

export const apiDocsModule = defineModule({
  name: 'api-docs',
  settings: z.object({}),
  create(ctx) {
    ctx.mount('/api/v1', openApiRoutes(meshOpenApiDocument(ctx.hub.version), { docs: ctx.hub.apiDocs }), {
      component: 'hub',
    });
    return {};
  },
});
