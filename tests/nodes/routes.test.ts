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

describe('GET /api/v1/nodes in pages', () => {
  const ids = (body: unknown) => (body as { data: Array<{ node_id: string }> }).data.map((n) => n.node_id);
  const next = (res: Response) => /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1];

  it('pages by node_id with limit and the cursor of the Link header, old ids kept with their node', async () => {
    for (let n = 1; n <= 7; n++) repo.upsert({ nodeNum: n * 0x10, nodeId: '', lastHeard: T0 });
    // !00000030 was once !00000099 (firmware 2.8 renumbering): its old id travels with it.
    repo.upsert({ nodeNum: 0x99, nodeId: '', longName: 'old', lastHeard: T0 - 1 });
    expect(repo.link(0x99, 0x30, T0)).toBe(true);

    const first = await app.request('/api/v1/nodes?limit=3');
    expect(ids(await first.json())).toEqual(['!00000010', '!00000020', '!00000030']);
    const second = await app.request(next(first)!);
    expect(next(first)).toMatch(/^\/api\/v1\/nodes\?limit=3&cursor=/);
    const secondBody = (await second.json()) as { data: Array<{ node_id: string }> };
    expect(ids(secondBody)).toEqual(['!00000040', '!00000050', '!00000060']);
    const last = await app.request(next(second)!);
    expect(ids(await last.json())).toEqual(['!00000070']);
    expect(last.headers.get('link')).toBeNull();

    const all = await app.request('/api/v1/nodes');
    expect(all.headers.get('link')).toBeNull();
    const every = (await all.json()) as { data: Array<{ node_id: string; previous_ids?: string[] }> };
    expect(every.data).toHaveLength(7);
    expect(every.data.find((n) => n.node_id === '!00000030')).toMatchObject({
      previous_ids: ['!00000099'],
      long_name: 'old',
    });
    const third = await app.request(
      `/api/v1/nodes?limit=1&cursor=${new URL(next(first)!, 'http://x').searchParams.get('cursor')}`,
    );
    expect(ids(await third.json())).toEqual(['!00000040']);
  });

  it('answers 400 naming limit or cursor when either is not one it takes', async () => {
    for (const query of ['limit=0', 'limit=10001', 'limit=abc', 'cursor=nope', 'cursor=eyJhIjoiMSJ9']) {
      const res = await app.request(`/api/v1/nodes?${query}`);
      expect(res.status, query).toBe(400);
      expect(JSON.stringify(await res.json())).toContain(query.split('=')[0]!);
    }
  });
});
