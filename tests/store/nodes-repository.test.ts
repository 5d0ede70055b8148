import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { memoryDb, T0 } from './fixtures.js';

let db: Database;
let repo: NodeRepository;

beforeEach(() => {
  db = memoryDb();
  repo = new NodeRepository(db);
});
afterEach(() => closeDatabase(db));

describe('NodeRepository', () => {
  it('creates a node from its first update and reads it back', () => {
    const node = repo.upsert({
      nodeNum: 0xa1b2c3d4,
      nodeId: '!a1b2c3d4',
      shortName: 'ALP',
      lastHeard: T0,
      snr: 6.5,
    });
    expect(node).toEqual({
      nodeNum: 0xa1b2c3d4,
      nodeId: '!a1b2c3d4',
      shortName: 'ALP',
      lastHeard: T0,
      snr: 6.5,
    });
    expect(repo.get('!a1b2c3d4')).toEqual(node);
    expect(repo.get('!00000000')).toBeUndefined();
  });

  it('merges only the fields an update carries: names and position survive a bare update', () => {
    const hut = {
      nodeNum: 1,
      nodeId: '!00000001',
      shortName: 'HUT',
      longName: 'Mountain hut',
      hwModel: 'RAK4631',
      latitude: 46.5,
      longitude: 8.1,
      altitude: 2100,
    };
    repo.upsert({ ...hut, batteryLevel: 90 });
    repo.upsert({ nodeNum: 1, nodeId: '!00000001', lastHeard: T0, snr: -3 });
    repo.upsert({ nodeNum: 1, nodeId: '!00000001', batteryLevel: 85, latitude: Number.NaN, shortName: '' });
    expect(repo.get('!00000001')).toEqual({ ...hut, lastHeard: T0, batteryLevel: 85, snr: -3 });
  });

  it('takes a new value for a field it carries, zero included', () => {
    repo.upsert({ nodeNum: 2, nodeId: '!00000002', latitude: 46.5, longitude: 8.1, altitude: 500 });
    repo.upsert({
      nodeNum: 2,
      nodeId: '!00000002',
      latitude: 0,
      longitude: 0,
      altitude: 0,
      longName: 'Null Island',
    });
    expect(repo.get('!00000002')).toMatchObject({
      latitude: 0,
      longitude: 0,
      altitude: 0,
      longName: 'Null Island',
    });
  });

  it('moves lastHeard only forward', () => {
    repo.upsert({ nodeNum: 3, nodeId: '!00000003', lastHeard: T0 + 5_000 });
    repo.upsert({ nodeNum: 3, nodeId: '!00000003', lastHeard: T0 + 1_000 }); // a late relayed packet
    expect(repo.get('!00000003')?.lastHeard).toBe(T0 + 5_000);
    repo.upsert({ nodeNum: 3, nodeId: '!00000003', lastHeard: T0 + 9_000 });
    expect(repo.get('!00000003')?.lastHeard).toBe(T0 + 9_000);
  });

  it('derives the node id from the node number', () => {
    repo.upsert({ nodeNum: 0xff, nodeId: '!WRONG' });
    expect(repo.get('!000000ff')).toMatchObject({ nodeNum: 0xff });
    expect(repo.get('!WRONG')).toBeUndefined();
  });

  it('lists every node ordered by node id', () => {
    for (const num of [0xc0, 0x0a, 0xb0]) repo.upsert({ nodeNum: num, nodeId: '' });
    expect(repo.list().map((n) => n.nodeId)).toEqual(['!0000000a', '!000000b0', '!000000c0']);
  });
});
