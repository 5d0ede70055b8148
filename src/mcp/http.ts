/**
 * MCP over Streamable HTTP (issue 29; README "MCP over HTTP"): `POST /mcp` on the hub's port
 * serves the same MCP server as `meshhub mcp` on stdio (server.ts), to callers with a bearer
 * token of the hub (src/auth/require-auth.ts: 401 with WWW-Authenticate and a problem body, never
 * a tool list). The tools are the mesh tools (mesh-tools.ts, over the running hub's database)
 * and what each contributor (`mcp.tools`, events.ts) gives this caller: the audit plugin's
 * decide by the caller's roles, as its HTTP API does.
 *
 * Stateless, JSON answers: every POST builds a server and a transport for that request and
 * answers one JSON body (no session id, no SSE stream; GET and DELETE are 405). Nothing is kept
 * between requests, so nothing grows on a Pi, and a restart loses no client state.
 *
 * Refusals are problem details: the body bounded (413), JSON only (415, 400), a message that is
 * not JSON-RPC 2.0 (400); the SDK's own HTTP refusals (406 without `Accept: application/json,
 * text/event-stream`) are turned into problems too. Off (MCP_HTTP_ENABLED=false): 404.
 */
import type { IncomingMessage } from 'node:http';
import { Hono, type MiddlewareHandler } from 'hono';
import { limitBody, readJsonBody } from '../auth/request-body.js';
import type { AuthEnv } from '../auth/require-auth.js';
import { AUTH_PROBLEMS, BODY_PROBLEMS, COMMON_PROBLEMS, problem } from '../http/openapi.js';
import { describeRoutes } from '../http/openapi-route.js';
import { ProblemError } from '../http/problem.js';
import { clientAddress } from '../live/live-routes.js';
import type { Logger } from '../log.js';
import type { McpHttpCaller, McpToolsOffer } from './events.js';
import { mcpRequestBodySchema, mcpResponseBodySchema } from './schemas.js';
import type { McpTools } from './tool-kit.js';

export const MCP_HTTP_PATH = '/mcp';

/** The SDK's server and transport, loaded on the first request: a hub that never serves /mcp never holds them. */
const importSdk = () =>
  Promise.all([
    import('./server.js'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  ]);
let sdk: ReturnType<typeof importSdk> | undefined;

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const mcpOperations = describeRoutes(MCP_HTTP_PATH, [
  {
    method: 'post',
    path: '/',
    operationId: 'mcp',
    tag: 'mcp',
    summary: 'One MCP (Model Context Protocol) message over Streamable HTTP, answered as JSON',
    description:
      'Stateless: no Mcp-Session-Id; send `Accept: application/json, text/event-stream`. The tools a caller sees depend on its roles (the audit tools need an audit reader role). Off unless MCP_HTTP_ENABLED.',
    security: 'bearer',
    body: { schema: mcpRequestBodySchema, description: 'A JSON-RPC 2.0 message or a batch.' },
    responses: {
      200: { description: 'The JSON-RPC answer(s).', body: mcpResponseBodySchema },
      202: { description: 'Only notifications were sent: nothing to answer.' },
      400: COMMON_PROBLEMS.badInput,
      401: AUTH_PROBLEMS.unauthorized,
      404: problem('MCP over HTTP is off (MCP_HTTP_ENABLED=false).'),
      406: problem('The Accept header lacks application/json or text/event-stream.'),
      ...BODY_PROBLEMS,
      429: problem('A rate limit of the audit routes was reached (Retry-After says when to try again).'),
      503: AUTH_PROBLEMS.idpDown,
    },
  },
]);

export interface McpHttpDeps {
  enabled: boolean;
  maxBodyBytes: number;
  version: string;
  log: Logger;
  /** The hub's bearer check (ctx.auth.require()). */
  authenticate: MiddlewareHandler<AuthEnv>;
  /** The running hub's mesh tools (one database connection: the hub's). */
  meshTools: McpTools;
  /** What other modules offered (`mcp.tools`), asked per request. */
  offers: () => readonly McpToolsOffer[];
  /** Counts a request by its outcome (ok, refused, failed). */
  counted?: (outcome: 'ok' | 'refused' | 'failed') => void;
}

/** The tools/call names of the message(s), for contributors that rate-limit a tool by itself. */
function toolCallsOf(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.flatMap((m) => {
    const message = m as { method?: unknown; params?: { name?: unknown } } | null;
    return message?.method === 'tools/call' && typeof message.params?.name === 'string'
      ? [message.params.name]
      : [];
  });
}

/** The SDK's JSON-RPC refusal (`{ error: { message } }`) as a problem with the same status. */
async function problemOf(response: Response): Promise<ProblemError> {
  let detail = 'the MCP request was refused';
  try {
    const body = (await response.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === 'string') detail = body.error.message;
  } catch {
    // No JSON body: the generic detail.
  }
  return new ProblemError(response.status, detail);
}

export function mcpHttpRoutes(deps: McpHttpDeps): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const count = deps.counted ?? (() => {});
  if (!deps.enabled) {
    app.all('/', () => {
      throw new ProblemError(404, 'MCP over HTTP is off; set MCP_HTTP_ENABLED=true to serve it at /mcp');
    });
    return app;
  }
  // The token first: a caller without one learns nothing, not even how big a body may be.
  app.use('*', deps.authenticate);
  app.post('/', limitBody(deps.maxBodyBytes), async (c) => {
    let outcome: 'ok' | 'refused' | 'failed' = 'refused';
    try {
      const body = await readJsonBody(c);
      const parsed = mcpRequestBodySchema.safeParse(body);
      if (!parsed.success) {
        throw new ProblemError(400, 'the body is not a JSON-RPC 2.0 message (or a batch of them)');
      }
      const caller: McpHttpCaller = {
        identity: c.get('identity'),
        client: clientAddress((c.env as { incoming?: IncomingMessage } | undefined)?.incoming) ?? 'unknown',
        toolCalls: toolCallsOf(body),
      };
      const contributed: McpTools[] = [];
      for (const offer of deps.offers()) {
        const tools = await offer.contribution(caller);
        if (tools) contributed.push(tools);
      }
      sdk ??= importSdk();
      const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await sdk;
      const server = createMcpServer({
        version: deps.version,
        log: deps.log,
        tools: [...contributed, deps.meshTools],
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      outcome = 'failed';
      try {
        await server.connect(transport);
        const response = await transport.handleRequest(c.req.raw, { parsedBody: body });
        outcome = response.status < 400 ? 'ok' : 'refused';
        if (response.status >= 400) throw await problemOf(response);
        // The JSON answer is complete before handleRequest resolves: nothing is left to stream.
        return response;
      } finally {
        await server.close().catch(() => undefined);
      }
    } finally {
      count(outcome);
    }
  });
  // Stateless: no SSE stream to open (GET) and no session to end (DELETE).
  app.all('/', () => {
    throw new ProblemError(405, 'MCP over HTTP here is stateless: POST each message to /mcp', {
      headers: { allow: 'POST' },
    });
  });
  return app;
}
