/**
 * A node that changes its number keeping its key, end to end: a whole hub over loopback HTTP, a
 * real SQLite file, and the simulator on the stream protocol, whose first node in range takes the
 * number firmware 2.8 derives from its key a few seconds in (SIM_RENUMBER_AFTER_MINUTES's option).
 * Before: it sends readings and answers a text. After: a text to its old number goes unanswered
 * and is held; once the old number has been quiet for NODE_RENUMBER_QUIET, the node is linked,
 * its readings answer under the new id, the conversation continues there, and the held text
 * reaches the node exactly once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { HubEvents } from '../../src/domain/events.js';
import { nodeIdFromNum } from '../../src/domain/node.js';
import { createMessagingResponder } from '../../src/mesh/simulator/messaging-responder.js';
import { awayDuring } from '../../src/mesh/simulator/presence.js';
import { startTestHub, waitFor } from '../helpers/hub.js';
import { testSimulator } from '../helpers/simulator.js';
import {
  call,
  FAST_MESSAGING,
  type Json,
  RecordingResponder,
  send,
  subscriber,
  waitForStatus,
} from '../messaging/helpers.js';

/** Stopped after each test, last started first. */
const running: Array<{ stop(): Promise<void> }> = [];
afterEach(async () => {
  while (running.length > 0) await running.pop()!.stop();
});

const HOUR = 3_600_000;

describe('a node that changes its number keeping its key', () => {
  it('keeps its readings, its conversation and its held text under the new number', async () => {
    const recorder = new RecordingResponder(
      createMessagingResponder({ failurePercent: 0, delayScale: 0.02 }),
    );
    const sim = testSimulator({
      seed: 7,
      telemetryIntervalMs: 1_000,
      // Ten minutes of history: readings from before the upgrade, without a replay so large that
      // the node table's mailbox (drop-oldest, 5000) sheds the upgraded node's one NodeInfo on a
      // slow machine, as it did under CI with two hours. The backfill is on a 5-minute grid, so
      // five minutes gave one point, less than a minute old when the hub started within a
      // minute after a grid line: no reading "from before" (it failed that way).
      backfillMs: 10 * 60_000,
      responder: recorder,
      presence: awayDuring([]),
      renumberAfterMs: 6_000,
    });
    const { port } = await sim.start();
    running.push(sim);
    const move = sim.renumbering!;
    const oldId = nodeIdFromNum(move.oldNum);
    const newId = nodeIdFromNum(move.newNum);

    const t = await startTestHub({
      ...FAST_MESSAGING,
      RADIO: `tcp:127.0.0.1:${port}`,
      NODE_RENUMBER_QUIET: '4s',
      MESSAGE_MAX_RETRIES: '0',
      MESSAGE_ACK_TIMEOUT: '1s',
    });
    running.push(t);
    const renumbered: HubEvents['node.renumbered'][] = [];
    t.hub.bus.on('test', 'node.renumbered', (e) => renumbered.push(e));
    const token = await subscriber(t, 'ana');

    // Before: the node is heard under its old number, with readings; a text to it gets through.
    await waitFor(
      async () => (await call(t.baseUrl, 'GET', `/api/v1/nodes/${oldId}`)).status === 200,
      10_000,
      'the old node',
    );
    const first = await send(t, token, oldId, 'before the upgrade');
    expect(first.status).toBe(202);
    await waitForStatus(t, token, first.body.id, 'delivered');

    // The node upgrades: its new number is heard, the old one falls silent.
    await waitFor(
      async () =>
        ((await call(t.baseUrl, 'GET', '/api/v1/nodes')).body.data as Json[]).some(
          (n) => n.node_id === newId,
        ) || renumbered.length > 0,
      15_000,
      'the new number to be heard',
    );
    const held = await send(t, token, oldId, 'held for the old number');
    expect(held.status).toBe(202);

    // Linked once; the held text goes to the new number and is delivered.
    const delivered = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', `/api/v1/messages/${held.body.id}`, { token });
        return r.body.status === 'delivered' ? r.body : undefined;
      },
      30_000,
      () =>
        `the held text to be delivered (links: ${JSON.stringify(renumbered)}, row: ${JSON.stringify(
          t.hub.store.db
            .prepare(
              'SELECT node_id, status, attempts, held_since, next_attempt_at, ack_deadline, failure_code FROM messages WHERE public_id = ?',
            )
            .get(held.body.id),
        )}, nodes: ${JSON.stringify(t.hub.store.db.prepare('SELECT node_id, last_heard, hex(public_key) k FROM nodes').all())}, now ${Date.now()})`,
    );
    expect(renumbered).toEqual([{ oldNodeId: oldId, newNodeId: newId, at: expect.any(Number) }]);
    expect(delivered.target_node_id).toBe(newId);
    const reached = recorder.texts.filter(
      (p) =>
        p.payloadVariant.case === 'decoded' &&
        new TextDecoder().decode(p.payloadVariant.value.payload) === 'held for the old number',
    );
    expect(reached).toHaveLength(1);

    // The node answers under its new id, with its old one in previous_ids; the old id finds it.
    const nodes = (await call(t.baseUrl, 'GET', '/api/v1/nodes')).body.data as Json[];
    expect(nodes.map((n) => n.node_id)).not.toContain(oldId);
    expect(nodes.find((n) => n.node_id === newId)?.previous_ids).toEqual([oldId]);
    const byOld = await call(t.baseUrl, 'GET', `/api/v1/nodes/${oldId}`);
    expect(byOld.status).toBe(200);
    expect(byOld.body.node_id).toBe(newId);

    // Its readings from before the upgrade are under the new id; asking by the old id answers the same.
    const range = `start=${new Date(Date.now() - 3 * HOUR).toISOString()}&end=${new Date(Date.now() + HOUR).toISOString()}`;
    const history = await call(
      t.baseUrl,
      'GET',
      `/api/v1/weather/history?node_id=${newId}&interval=raw&${range}&limit=10000`,
    );
    expect(history.status).toBe(200);
    const before = (history.body.data as Json[]).filter((r) => Date.parse(r.timestamp) < move.at! - 60_000);
    expect(before.length).toBeGreaterThan(0);
    expect(new Set((history.body.data as Json[]).map((r) => r.node_id))).toEqual(new Set([newId]));
    const historyByOld = await call(
      t.baseUrl,
      'GET',
      `/api/v1/weather/history?node_id=${oldId}&interval=raw&${range}&limit=10000`,
    );
    expect(historyByOld.body.data.length).toBeGreaterThanOrEqual(history.body.data.length);

    // One conversation, under the new id, with both texts.
    const conversations = (await call(t.baseUrl, 'GET', '/api/v1/messages/conversations', { token })).body
      .data as Json[];
    expect(conversations.map((c) => c.node_id)).toEqual([newId]);
    const texts = (await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${newId}`, { token })).body
      .data as Json[];
    expect(texts.map((m) => m.text)).toEqual(
      expect.arrayContaining(['before the upgrade', 'held for the old number']),
    );
  }, 60_000);
});
