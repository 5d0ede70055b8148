import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { nodesRoutes } from '../../src/nodes/routes.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { memoryDb, T0 } from '../store/fixtures.js';

let db: Database;
let repo: NodeRepository;
let app: Hono;

beforeEach(() => {
  db = memoryDb();
  repo = new NodeRepository(db);
  app = new Hono();
  app.route('/api/v1/nodes', nodesRoutes(repo));
  app.onError(createErrorHandler());
  app.notFound(notFound);
});
afterEach(() => closeDatabase(db));

describe('GET /api/v1/nodes', () => {
  it('answers an empty list before any node was heard', async () => {
    const res = await app.request('/api/v1/nodes');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toEqual({ data: [] });
  });

  it('answers every node ordered by node_id, in snake_case, unknown fields omitted', async () => {
    repo.upsert({ nodeNum: 0xbb, nodeId: '!000000bb', lastHeard: T0 + 1_500, snr: -7.25 });
    repo.upsert({
      nodeNum: 0xaa,
      nodeId: '!000000aa',
      shortName: 'HUT',
      longName: 'Mountain hut',
      hwModel: 'RAK4631',
      latitude: 46.5,
      longitude: 8.125,
      altitude: 2100,
      lastHeard: T0,
      batteryLevel: 87,
      snr: 5,
    });
    const res = await app.request('/api/v1/nodes');
    expect(await res.json()).toEqual({
      data: [
        {
          node_id: '!000000aa',
          short_name: 'HUT',
          long_name: 'Mountain hut',
          hw_model: 'RAK4631',
          latitude: 46.5,
          longitude: 8.125,
          altitude: 2100,
          last_heard: '2025-05-01T00:00:00.000Z',
          battery_level: 87,
          snr: 5,
        },
        { node_id: '!000000bb', last_heard: '2025-05-01T00:00:01.500Z', snr: -7.25 },
      ],
    });
  });
});
