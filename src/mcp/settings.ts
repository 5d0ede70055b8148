/** Settings of MCP over Streamable HTTP (`POST /mcp` on the hub's port; README "MCP over HTTP"). */
import { z } from 'zod';
import { flag, int } from '../config/fields.js';

export const mcpHttpSettings = z.object({
  /**
   * Serves the MCP server (the mesh tools, and the audit tools with PLUGINS=audit) at `/mcp` on
   * HTTP_PORT, for callers with a bearer token of the hub. Off by default: `/mcp` answers 404.
   */
  MCP_HTTP_ENABLED: flag.default(false),
  /** The largest JSON-RPC request body `/mcp` reads, in bytes (413 past it). */
  MCP_HTTP_MAX_BODY_BYTES: int(1_024, 1_048_576).default(65_536),
});

export type McpHttpSettings = z.infer<typeof mcpHttpSettings>;
