/**
 * What a feature needs to contribute tools to the hub's MCP server (mesh-tools.ts, the audit
 * plugin's plugins/audit/mcp/tools.ts): the tool kit, the error a model can fix, the date schema
 * and the guard that turns failures into error results. It has no value import of
 * @modelcontextprotocol/sdk, so a hub with MCP over HTTP off never loads the SDK (about 10 MB of
 * memory); server.ts, which does, is loaded by `meshhub mcp` and by the first /mcp request.
 *
 * Bad arguments and refusals are MCP error results the model can read and fix, never a crash;
 * an unexpected failure is logged (stderr: stdout is the protocol's) and the client gets no detail.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
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

export async function guarded<T>(log: Logger, tool: string, run: () => T | Promise<T>): Promise<ToolResult> {
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
