/**
 * MCP over Streamable HTTP (issue 29; README "MCP over HTTP"): the hub's MCP server at `/mcp`,
 * behind the hub's bearer tokens, off unless MCP_HTTP_ENABLED. Modules above this one (the audit
 * plugin) offer their tools with the `mcp.tools` event (events.ts) from their `create`; this
 * module is created before every plugin, so it hears each offer.
 */
import { defineModule } from '../module.js';
import type { McpToolsOffer } from './events.js';
import { MCP_HTTP_PATH, mcpHttpRoutes } from './http.js';
import { meshTools } from './mesh-tools.js';
import { mcpHttpSettings } from './settings.js';

export const mcpHttpModule = defineModule({
  name: 'mcp',
  settings: mcpHttpSettings,
  create(ctx) {
    const offers: McpToolsOffer[] = [];
    const enabled = ctx.settings.MCP_HTTP_ENABLED;
    if (enabled) {
      // As `meshhub mcp` warns on stdio: say at every start what this gives a connected model.
      ctx.log.warn(
        { path: MCP_HTTP_PATH },
        'MCP over HTTP is on: a client with a bearer token of this hub (and the language model behind it) reads the mesh nodes and readings, and the audit events its roles allow',
      );
      ctx.bus.on(ctx.owner, 'mcp.tools', (offer) => {
        offers.push(offer);
        ctx.log.info({ contributor: offer.name }, 'MCP over HTTP serves these tools too');
      });
    }
    const requests = ctx.metrics.counter({
      name: 'mcp_http_requests_total',
      help: 'Requests to /mcp past the bearer check, by outcome (ok, refused: a 4xx, failed)',
      labelNames: ['outcome'],
    });
    ctx.mount(
      MCP_HTTP_PATH,
      mcpHttpRoutes({
        enabled,
        maxBodyBytes: ctx.settings.MCP_HTTP_MAX_BODY_BYTES,
        version: ctx.hub.version,
        log: ctx.log,
        authenticate: ctx.auth.require(),
        meshTools: meshTools(ctx.db),
        offers: () => offers,
        counted: (outcome) => requests.inc({ outcome }),
      }),
    );
    return undefined;
  },
});
