/**
 * `/api/v1/nodes`: the mesh nodes the hub has heard of, for the map dashboard. The spec leaves the
 * node record "not shown"; ours carries what NodeInfo, Position and DeviceMetrics tell, in the
 * API's snake_case, with unknown fields omitted and `last_heard` as ISO 8601 UTC (schemas.ts).
 */
import { Hono } from 'hono';
import type { MeshNode } from '../domain/node.js';
import { describeRoutes } from '../http/openapi-route.js';
import type { NodeRepository } from '../store/nodes-repository.js';
import type { NodeJson } from './schemas.js';
import { nodeListSchema } from './schemas.js';

export type { NodeJson };

export function nodeJson(node: MeshNode): NodeJson {
  const out: NodeJson = { node_id: node.nodeId };
  if (node.shortName !== undefined) out.short_name = node.shortName;
  if (node.longName !== undefined) out.long_name = node.longName;
  if (node.hwModel !== undefined) out.hw_model = node.hwModel;
  if (node.latitude !== undefined) out.latitude = node.latitude;
  if (node.longitude !== undefined) out.longitude = node.longitude;
  if (node.altitude !== undefined) out.altitude = node.altitude;
  if (node.lastHeard !== undefined) {
    const heard = new Date(node.lastHeard);
    if (!Number.isNaN(heard.getTime())) out.last_heard = heard.toISOString();
  }
  if (node.batteryLevel !== undefined) out.battery_level = node.batteryLevel;
  if (node.snr !== undefined) out.snr = node.snr;
  return out;
}

/** The OpenAPI operations of the routes below (src/http/openapi-route.ts). */
export const nodesOperations = describeRoutes('/api/v1/nodes', [
  {
    method: 'get',
    path: '/',
    operationId: 'listNodes',
    tag: 'nodes',
    summary: 'Every node the hub has heard of, ordered by node_id',
    responses: { 200: { description: 'The nodes; unknown fields left out.', body: nodeListSchema } },
  },
]);

export function nodesRoutes(repo: NodeRepository): Hono {
  const app = new Hono();
  app.get('/', (c) => c.json({ data: repo.list().map(nodeJson) }));
  return app;
}
