/**
 * How a feature or plugin above src/mcp adds its tools to MCP over HTTP (README "MCP over HTTP")
 * without the core naming it: in its `create`, it emits `mcp.tools` once with a contribution;
 * the MCP module (created before every plugin) keeps it and asks it, for every request, which
 * tools this caller gets. Merged into the hub's event map (src/domain/events.ts).
 */
import type { VerifiedIdentity } from '../auth/jwt-verifier.js';
import type { McpTools } from './tool-kit.js';

/** Who is calling `/mcp`, as the hub's one verifier saw the bearer token. */
export interface McpHttpCaller {
  identity: VerifiedIdentity;
  /** The TCP peer (rate limits count per address). */
  client: string;
  /** The tools/call names in the request (a tool may count against its own rate-limit tier). */
  toolCalls: readonly string[];
}

/**
 * The tools this caller gets from one contributor (undefined: none, e.g. a role without access
 * to that feature). May throw a ProblemError (a 429 of a rate limit) to refuse the whole request.
 */
export type McpHttpContribution = (caller: McpHttpCaller) => Promise<McpTools | undefined>;

export interface McpToolsOffer {
  /** The contributor, for the log. */
  name: string;
  contribution: McpHttpContribution;
}

declare module '../domain/events.js' {
  interface HubEvents {
    /** A module offers its tools to MCP over HTTP (emitted once, in its `create`). */
    'mcp.tools': McpToolsOffer;
  }
}
