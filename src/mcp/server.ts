/**
 * The hub's MCP server (`meshhub mcp` on stdio, composed in hub/mcp.ts; over Streamable HTTP at
 * /mcp, http.ts, which loads this file on its first request), built on
 * @modelcontextprotocol/sdk with typed (zod) input schemas. Features contribute their tools
 * (McpTools, tool-kit.ts): the mesh tools (mesh-tools.ts), the audit plugin's
 * (plugins/audit/mcp/tools.ts).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Logger } from '../log.js';
import { guarded, type McpToolKit, type McpTools } from './tool-kit.js';

export function createMcpServer(deps: {
  version: string;
  log: Logger;
  tools: readonly McpTools[];
}): McpServer {
  const server = new McpServer({ name: 'meshhub', version: deps.version });
  const kit: McpToolKit = { server, guard: (tool, run) => guarded(deps.log, tool, run) };
  for (const contribute of deps.tools) contribute(kit);
  return server;
}
