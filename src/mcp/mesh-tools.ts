/**
 * The mesh side of the MCP server (issue 13): latest_readings, reading_history and list_nodes,
 * answered from the weather service and the node repository over the hub's database.
 */
import { z } from 'zod';
import { nodeJson } from '../nodes/routes.js';
import type { Database } from '../store/database.js';
import { NodeRepository } from '../store/nodes-repository.js';
import { WeatherService } from '../weather/weather-service.js';
import { isoDate, type McpTools, ToolInputError } from './tool-kit.js';

export function meshTools(db: Database): McpTools {
  return ({ server, guard }) => {
    const weather = new WeatherService({ db });
    const nodeId = z.string().regex(/^![0-9a-f]{8}$/, 'must be a node id: ! and 8 lower-case hex digits');

    server.registerTool(
      'latest_readings',
      {
        description:
          'The newest environmental reading of every mesh node (or one node): °C, %, Pa, m/s, degrees, µg/m³.',
        inputSchema: { node_id: nodeId.optional() },
      },
      (args) => guard('latest_readings', () => JSON.parse(weather.latestJson(args.node_id))),
    );

    server.registerTool(
      'reading_history',
      {
        description: 'Readings of one node over a time range: raw, or hourly / daily means.',
        inputSchema: {
          node_id: nodeId,
          start: isoDate,
          end: isoDate.optional().describe('Default: now'),
          interval: z.enum(['raw', '1h', '1d']).optional().describe('Default raw'),
          limit: z.number().int().min(1).max(1_000).optional().describe('Default 200'),
        },
      },
      (args) =>
        guard('reading_history', () => {
          const start = Date.parse(args.start);
          const end = args.end ? Date.parse(args.end) : Date.now();
          if (end <= start) throw new ToolInputError('end must be after start');
          const page = weather.history({
            nodeId: args.node_id,
            start,
            end,
            interval: args.interval ?? 'raw',
            limit: args.limit ?? 200,
          });
          const body = typeof page.body === 'string' ? page.body : Buffer.from(page.body).toString('utf8');
          return { ...JSON.parse(body), more: page.nextAfter !== undefined };
        }),
    );

    server.registerTool(
      'list_nodes',
      {
        description: 'Every known mesh node: id, names, hardware, position, last heard, battery, SNR.',
        inputSchema: {},
      },
      () => guard('list_nodes', () => ({ data: new NodeRepository(db).list().map(nodeJson) })),
    );
  };
}
