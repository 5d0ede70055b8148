/**
 * Nodes that change their number (firmware 2.8 derives it from the public key): the linking
 * rules (src/nodes/renumber.ts) through the node directory actor, the node routes, and what
 * follows a linked node: its readings and rollups (the reading writer) and its texts
 * (messaging's renumberTexts).
 */
import { crc32 } from 'node:zlib';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HubBus, HubEvents } from '../../src/domain/events.js';
import { nodeIdFromNum } from '../../src/domain/node.js';
import { createErrorHandler, notFound } from '../../src/http/error-handler.js';
import { Bus } from '../../src/kernel/bus.js';
import { renumberTexts } from '../../src/messaging/renumber.js';
import { NodeDirectoryActor } from '../../src/nodes/node-directory-actor.js';
import { nodesRoutes } from '../../src/nodes/routes.js';
import { closeDatabase, type Database } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { NodeRepository } from '../../src/store/nodes-repository.js';
import { ReadingWriter } from '../../src/store/reading-writer.js';
import { HOUR, memoryDb, reading, rollup, T0 } from '../store/fixtures.js';

const MINUTE = 60_000;

/** A 32-byte key and the number firmware 2.8 gives it. */
function keyOf(seed: number): { key: Uint8Array; derived: number } {
  const key = new Uint8Array(32).map((_, i) => (seed * 31 + i * 7) & 0xff);
  return { key, derived: crc32(key) >>> 0 };
}

const OLD = 0x1234abcd;

let db: Database;
let bus: HubBus;
let actor: NodeDirectoryActor;
let repo: NodeRepository;
let now: number;
let events: HubEvents['node.renumbered'][];
let mismatches: number;

async function start(quietMs = 15 * MINUTE) {
  actor = new NodeDirectoryActor({
    bus,
    db,
    quietMs,
    now: () => now,
    counters: { renumbered: () => {}, keyMismatch: () => mismatches++ },
  });
  await actor.start();
}

/** Posts updates and waits until the directory has handled them. */
async function heard(...updates: HubEvents['node.updated'][]) {
  for (const u of updates) bus.emit('node.updated', u);
  await actor.stop();
  await actor.start();
}

const node = (num: number, extra: Partial<HubEvents['node.updated']> = {}) => ({
  nodeNum: num,
  nodeId: nodeIdFromNum(num),
  lastHeard: now,
  ...extra,
});

beforeEach(() => {
  db = memoryDb();
  migrate(db);
  bus = new Bus();
  repo = new NodeRepository(db);
  now = T0;
  events = [];
  mismatches = 0;
  bus.on('test', 'node.renumbered', (e) => events.push(e));
});
afterEach(async () => {
  await actor?.stop();
  closeDatabase(db);
});

describe('linking a renumbered node', () => {
  it('links the old number to the derived one once the old number is quiet, and says so once', async () => {
    const { key, derived } = keyOf(1);
    await start();
    await heard(
      node(OLD, {
        shortName: 'HUT',
        longName: 'Mountain hut',
        latitude: 46.5,
        longitude: 8.1,
        publicKey: key,
      }),
    );
    now += 20 * MINUTE;
    await heard(node(derived, { shortName: 'HUT2', publicKey: key }));

    expect(events).toEqual([{ oldNodeId: nodeIdFromNum(OLD), newNodeId: nodeIdFromNum(derived), at: now }]);
    const nodes = repo.list();
    expect(nodes.map((n) => n.nodeId)).toEqual([nodeIdFromNum(derived)]);
    // The new row keeps what it says itself; what only the old one knew fills the gaps.
    expect(nodes[0]).toMatchObject({ shortName: 'HUT2', longName: 'Mountain hut', latitude: 46.5 });
    expect(nodes[0]!.previousIds).toEqual([nodeIdFromNum(OLD)]);

    // Heard again (and again): no second link, no second event.
    now += MINUTE;
    await heard(node(derived, { publicKey: key }), node(derived, { snr: 3 }));
    expect(events).toHaveLength(1);
  });

  it('waits while the old number is still heard, and links on a later sighting of the new one', async () => {
    const { key, derived } = keyOf(2);
    await start(15 * MINUTE);
    await heard(node(OLD, { publicKey: key }));
    now += 5 * MINUTE;
    await heard(node(derived, { publicKey: key }));
    expect(events).toEqual([]);
    expect(repo.list()).toHaveLength(2);

    // A telemetry packet (no key) of the new number, once the old one has been quiet long enough.
    now += 11 * MINUTE;
    await heard(node(derived, { batteryLevel: 80 }));
    expect(events.map((e) => e.oldNodeId)).toEqual([nodeIdFromNum(OLD)]);
  });

  it('does not link a key of the wrong length, an all-zero key, or a number not derived from the key', async () => {
    const short = new Uint8Array(16).fill(7);
    const zero = new Uint8Array(32);
    const { key } = keyOf(3);
    await start(0);
    await heard(
      node(OLD, { publicKey: short }),
      node(OLD + 1, { publicKey: zero }),
      node(OLD + 2, { publicKey: key }),
    );
    now += HOUR;
    await heard(
      node(crc32(short) >>> 0, { publicKey: short }),
      node(crc32(zero) >>> 0, { publicKey: zero }),
      // The key of a known node under a number that is not its CRC-32: a clone or a spoof.
      node(0x0badcafe, { publicKey: key }),
    );
    expect(events).toEqual([]);
    expect(repo.list()).toHaveLength(6);
  });

  it('keeps the first key of a number: a node whose key changes is not renumbered, and cannot take a history', async () => {
    const first = keyOf(4);
    const other = keyOf(5);
    await start(0);
    await heard(node(OLD, { publicKey: first.key }), node(OLD + 1, { publicKey: other.key }));
    now += HOUR;
    // OLD now claims the other key; then the other key's derived number appears.
    await heard(node(OLD, { publicKey: other.key }));
    expect(mismatches).toBe(1);
    expect(repo.publicKey(OLD)).toEqual(first.key);
    now += HOUR;
    await heard(node(other.derived, { publicKey: other.key }));
    // Only the node that really had the other key is linked.
    expect(events.map((e) => e.oldNodeId)).toEqual([nodeIdFromNum(OLD + 1)]);
    expect(repo.get(nodeIdFromNum(OLD))).toBeDefined();
  });

  it('does not flip-flop when both numbers are heard alternately with the same key', async () => {
    const { key, derived } = keyOf(6);
    await start(15 * MINUTE);
    for (let i = 0; i < 6; i++) {
      now += 2 * MINUTE;
      await heard(node(OLD, { publicKey: key }));
      now += 2 * MINUTE;
      await heard(node(derived, { publicKey: key }));
    }
    expect(events).toEqual([]);
    // The old number falls silent: one link, old → derived.
    now += HOUR;
    await heard(node(derived, { publicKey: key }));
    expect(events.map((e) => [e.oldNodeId, e.newNodeId])).toEqual([
      [nodeIdFromNum(OLD), nodeIdFromNum(derived)],
    ]);
    // The old number speaks again: a node of its own, never linked a second time, never the other way.
    for (let i = 0; i < 3; i++) {
      now += HOUR;
      await heard(node(OLD, { publicKey: key }));
      now += HOUR;
      await heard(node(derived, { publicKey: key }));
    }
    expect(events).toHaveLength(1);
    expect(
      repo
        .list()
        .map((n) => n.nodeId)
        .sort(),
    ).toEqual([nodeIdFromNum(OLD), nodeIdFromNum(derived)].sort());
  });
});

describe('GET /api/v1/nodes with renumbered nodes', () => {
  let app: Hono;
  beforeEach(async () => {
    app = new Hono();
    app.route('/api/v1/nodes', nodesRoutes(repo));
    app.onError(createErrorHandler());
    app.notFound(notFound);
    const { key, derived } = keyOf(7);
    await start(0);
    await heard(node(OLD, { longName: 'Mill', publicKey: key }));
    now += HOUR;
    await heard(node(derived, { publicKey: key }));
  });

  it('lists previous_ids and answers an old id with the node under its new id', async () => {
    const newId = nodeIdFromNum(keyOf(7).derived);
    const list = (await (await app.request('/api/v1/nodes')).json()) as { data: unknown[] };
    expect(list.data).toEqual([
      expect.objectContaining({ node_id: newId, long_name: 'Mill', previous_ids: [nodeIdFromNum(OLD)] }),
    ]);

    const byOld = await app.request(`/api/v1/nodes/${nodeIdFromNum(OLD)}`);
    expect(byOld.status).toBe(200);
    expect(byOld.headers.get('content-location')).toBe(`/api/v1/nodes/${newId}`);
    expect(await byOld.json()).toMatchObject({ node_id: newId, previous_ids: [nodeIdFromNum(OLD)] });

    const byNew = await app.request(`/api/v1/nodes/${newId}`);
    expect(byNew.status).toBe(200);
    expect(byNew.headers.get('content-location')).toBeNull();
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    const unknown = await app.request('/api/v1/nodes/!00000001');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
    const bad = await app.request('/api/v1/nodes/hut');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { errors?: { field?: string }[] }).errors?.[0]?.field ?? '').toContain(
      'node_id',
    );
  });
});

describe('what follows a renumbered node', () => {
  it('moves raw readings, adds rollups bucket by bucket and merges the latest row', () => {
    const writer = new ReadingWriter(db);
    writer.write([
      reading('!0000000a', T0, { temperatureC: 10, pressurePa: 100_000 }),
      reading('!0000000a', T0 + 10 * MINUTE, { temperatureC: 12 }),
    ]);
    writer.write([reading('!0000000b', T0 + 20 * MINUTE, { temperatureC: 20 })]);
    expect(writer.renumber('!0000000a', '!0000000b')).toBe(2);

    const raw = db.prepare('SELECT node_id, ts FROM readings ORDER BY ts').all();
    expect(raw).toEqual([
      { node_id: '!0000000b', ts: T0 },
      { node_id: '!0000000b', ts: T0 + 10 * MINUTE },
      { node_id: '!0000000b', ts: T0 + 20 * MINUTE },
    ]);
    const [hour] = rollup(db, 'readings_hourly', '!0000000b');
    expect(hour).toMatchObject({ temperature_c_sum: 42, temperature_c_count: 3 });
    expect(rollup(db, 'readings_hourly', '!0000000a')).toEqual([]);
    expect(rollup(db, 'readings_daily', '!0000000b')[0]).toMatchObject({ temperature_c_count: 3 });
    const latest = db.prepare('SELECT * FROM readings_latest').all();
    expect(latest).toEqual([
      expect.objectContaining({ node_id: '!0000000b', temperature_c: 20, pressure_pa: 100_000 }),
    ]);
    // The writer's memory follows too: a later reading of the new id merges with what moved.
    writer.write([reading('!0000000b', T0 + 30 * MINUTE, { humidityPercent: 50 })]);
    writer.close(); // a clean stop: the latest row is written
    expect(db.prepare('SELECT pressure_pa, humidity_percent FROM readings_latest').get()).toEqual({
      pressure_pa: 100_000,
      humidity_percent: 50,
    });
  });

  it('re-addresses queued texts and merges conversations, keeping the newer latest text and adding unread counts', () => {
    const insert = db.prepare(
      `INSERT INTO messages (public_id, owner, node_id, direction, sender_node_id, target_node_id, text, status,
         next_attempt_at, created_at, updated_at, held_since)
       VALUES (?, 'ana', ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
    );
    insert.run(
      'm1',
      '!0000000a',
      'outbound',
      null,
      '!0000000a',
      'held for the old number',
      'queued',
      T0,
      T0,
      T0,
    );
    insert.run(
      'm2',
      '!0000000a',
      'inbound',
      '!0000000a',
      null,
      'old hello',
      'received',
      T0 - 1,
      T0 - 1,
      null,
    );
    const conv = db.prepare(
      `INSERT INTO conversations (owner, node_id, nickname, latest_message_id, latest_text, latest_at, unread_count)
       VALUES ('ana', ?, ?, ?, ?, ?, ?)`,
    );
    conv.run('!0000000a', 'Ana', 1, 'held for the old number', T0, 1);
    conv.run('!0000000b', null, 3, 'newer', T0 + HOUR, 2);

    // Held: its next attempt an hour away (the pause for a node that does not answer).
    db.prepare("UPDATE messages SET next_attempt_at = ? WHERE public_id = 'm1'").run(T0 + HOUR);
    expect(renumberTexts(db, '!0000000a', '!0000000b', T0 + 1)).toEqual({
      messages: 2,
      conversations: 1,
      due: 1,
    });
    expect(db.prepare("SELECT next_attempt_at FROM messages WHERE public_id = 'm1'").get()).toEqual({
      next_attempt_at: T0 + 1,
    });
    expect(
      db
        .prepare('SELECT public_id, node_id, target_node_id, sender_node_id FROM messages ORDER BY public_id')
        .all(),
    ).toEqual([
      { public_id: 'm1', node_id: '!0000000b', target_node_id: '!0000000b', sender_node_id: null },
      { public_id: 'm2', node_id: '!0000000b', target_node_id: null, sender_node_id: '!0000000b' },
    ]);
    expect(
      db.prepare('SELECT node_id, nickname, latest_text, unread_count FROM conversations').all(),
    ).toEqual([{ node_id: '!0000000b', nickname: 'Ana', latest_text: 'newer', unread_count: 3 }]);
  });
});
