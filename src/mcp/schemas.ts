/**
 * `POST /mcp` in zod, for the OpenAPI document: one JSON-RPC 2.0 message of the Model Context
 * Protocol (or a batch), and its answer. The protocol's own schema (the SDK's) checks the
 * messages themselves; this only describes them.
 */
import { z } from 'zod';

const id = z.union([z.string(), z.number().int()]);

export const jsonRpcMessageSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: id.optional().meta({ description: 'Present on requests; notifications have none.' }),
    method: z
      .string()
      .meta({ description: 'initialize, tools/list, tools/call, notifications/initialized, …' }),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ description: 'A JSON-RPC 2.0 request or notification of the Model Context Protocol.' });

export const mcpRequestBodySchema = z.union([jsonRpcMessageSchema, z.array(jsonRpcMessageSchema).min(1)]);

export const jsonRpcResponseSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    id,
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string() }).optional(),
  })
  .meta({ description: 'The answer to a JSON-RPC request (a tool’s result, or a protocol error).' });

export const mcpResponseBodySchema = z.union([jsonRpcResponseSchema, z.array(jsonRpcResponseSchema)]);
