/**
 * The hub's MCP server (`meshhub mcp` on stdio, composed in hub/mcp.ts; over Streamable HTTP at
 * /mcp, http.ts), built on
 * @modelcontextprotocol/sdk with typed (zod) input schemas. Features contribute their tools
 * (McpTools): the mesh tools (mesh-tools.ts), the audit plugin's (plugins/audit/mcp/tools.ts).
 *
 * Bad arguments and refusals are MCP error results the model can read and fix, never a crash;
 * an unexpected failure is logged (stderr: stdout is the protocol's) and the client gets no detail.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Logger } from '../log.js';

/** A tool's input the model can fix: the message is the error result. */
export class ToolInputError extends Error {}

export const isoDate = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 date-time with Z or an offset' })
  .describe('ISO 8601 date-time, e.g. 2026-11-01T00:00:00Z');

const json = (value: unknown) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(value, null, 2) }],
});
const failure = (message: string) => ({ content: [{ type: 'text' as const, text: message }], isError: true });

export type ToolResult = ReturnType<typeof json> | ReturnType<typeof failure>;

/** What a feature registers its tools with. */
export interface McpToolKit {
  readonly server: McpServer;
  /** Runs a tool: its value as JSON text, input mistakes and refusals (status < 500) as error results. */
  guard<T>(tool: string, run: () => T | Promise<T>): Promise<ToolResult>;
}

/** A feature's tools: registered on the server in the order the contributions are given. */
export type McpTools = (kit: McpToolKit) => void;

async function guarded<T>(log: Logger, tool: string, run: () => T | Promise<T>): Promise<ToolResult> {
  try {
    return json(await run());
  } catch (error) {
    if (error instanceof ToolInputError) return failure(error.message);
    const status = (error as { status?: number }).status;
    if (typeof status === 'number' && status < 500) return failure((error as Error).message);
    log.error({ err: error, tool }, 'an MCP tool failed');
    return failure('the tool failed; see the server log');
  }
}

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
