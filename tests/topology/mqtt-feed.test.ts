/**
 * Traceroutes and links on MQTT, as an integration (Home Assistant, Node-RED) subscribed to the
 * hub sees them: each ended traceroute on `meshhub/traceroutes/<node_id>` (not retained), each
 * link's latest state retained on `meshhub/links/<from>/<to>/<source>`, the same JSON as the API;
 * a renumbered node's old link topics cleared and its new ones published; pruned links cleared.
 */
import type { MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import type { TopologyFeed } from '../../src/topology/mqtt-feed.js';
import { TopologyActor } from '../../src/topology/topology-actor.js';
import { mqttOf, type TestHub, waitFor } from '../helpers/hub.js';
import { call, knownNodes, PASSWORD, subscriber } from '../messaging/helpers.js';
import { collect, connect, endClients } from '../mqtt/helpers.js';
import { hubOn, neighbourInfo, startTopologySim } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await endClients();
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function setUp(mode: 'answer' | 'silent') {
  const sim = await startTopologySim(mode);
  cleanups.push(() => sim.sim.stop());
  const t = await hubOn(sim);
  cleanups.push(() => t.stop());
  await knownNodes(t, 6);
  const admin = await subscriber(t, 'root', { roles: ['admin'], nodes: 'none' });
  await subscriber(t, 'ha', { roles: ['integration'], nodes: 'none' });
  return { sim, t, admin };
}

function integration(t: TestHub): Promise<MqttClient> {
  return connect(`mqtt://127.0.0.1:${mqttOf(t.hub).port}`, { username: 'ha', password: PASSWORD });
}

const parsed = (messages: Array<{ topic: string; payload: string; retain: boolean }>) =>
  messages.map((m) => ({
    topic: m.topic,
    retain: m.retain,
    body: m.payload === '' ? '' : JSON.parse(m.payload),
  }));

describe('traceroutes and links on MQTT', () => {
  it('publishes an answered traceroute to an integration, as GET /api/v1/traceroutes/{id} shows it', async () => {
    const { sim, t, admin } = await setUp('answer');
    const client = await integration(t);
    const feed = collect(client, 'meshhub/traceroutes/#');
    await feed.ready;
    const out = messagingRoles(sim.network).outOfRange;
    const target = sim.network.nodes.find((n) => n !== out)!;
    const res = await call(t.baseUrl, 'POST', `/api/v1/nodes/${target.id}/traceroute`, { token: admin });
    expect(res.status).toBe(202);
    const got = await waitFor(() => feed.messages[0], 15_000, 'the traceroute on MQTT');
    const stored = await call(t.baseUrl, 'GET', `/api/v1/traceroutes/${res.body.id}`);
    expect(stored.body.status).toBe('answered');
    expect(parsed([got])).toEqual([
      { topic: `meshhub/traceroutes/${target.id}`, retain: false, body: stored.body },
    ]);
    // One message per traceroute: the pending state is not published.
    expect(feed.messages).toHaveLength(1);
  });

  it('keeps each link retained as /api/v1/links lists it, moves it with a renumbered node, and clears pruned ones', async () => {
    const { sim, t } = await setUp('silent');
    const [a, b, c] = sim.network.nodes;
    const radio = await sim.client();
    radio.deliver(
      neighbourInfo(
        a!.num,
        [
          { nodeId: b!.num, snr: 7.5 },
          { nodeId: c!.num, snr: -4 },
        ],
        0x7001,
      ),
    );
    const listed = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${a!.id}`);
        return r.body.data.length === 2 ? r.body.data : undefined;
      },
      10_000,
      'the two links stored',
    );

    // A client subscribing afterwards gets the state retained, exactly as the API lists it.
    const first = await integration(t);
    const retained = collect(first, 'meshhub/links/#');
    await retained.ready;
    await waitFor(() => retained.messages.length === 2 || undefined, 10_000, 'two retained links');
    const byTopic = (link: { from: string; to: string; source: string }) =>
      `meshhub/links/${link.from}/${link.to}/${link.source}`;
    expect(parsed(retained.messages).sort((x, y) => x.topic.localeCompare(y.topic))).toEqual(
      listed
        .map((l: { from: string; to: string; source: string }) => ({
          topic: byTopic(l),
          retain: true,
          body: l,
        }))
        .sort((x: { topic: string }, y: { topic: string }) => x.topic.localeCompare(y.topic)),
    );

    // a renumbered: its old topics are cleared, the new ones published.
    const newId = '!0badc0de';
    t.hub.bus.emit('node.renumbered', { oldNodeId: a!.id, newNodeId: newId, at: Date.now() });
    await waitFor(
      () => retained.messages.filter((m) => m.payload === '').length === 2 || undefined,
      10_000,
      'the old topics cleared',
    );
    const later = collect(await integration(t), 'meshhub/links/#');
    await later.ready;
    await waitFor(() => later.messages.length === 2 || undefined, 10_000, 'the links under the new id');
    expect(later.messages.map((m) => m.topic).sort()).toEqual(
      [`meshhub/links/${newId}/${b!.id}/neighborinfo`, `meshhub/links/${newId}/${c!.id}/neighborinfo`].sort(),
    );

    // Pruning (TOPOLOGY_RETENTION_DAYS) clears what it deletes: an actor whose clock is a year on
    // prunes at start, on the hub's database.
    const gone: string[] = [];
    const feed: TopologyFeed = {
      traceroute: () => {},
      link: () => {},
      linkGone: (link) => gone.push(`${link.from}/${link.to}/${link.source}`),
    };
    class Probe extends TopologyActor {
      override readonly name = 'topology-probe';
    }
    const probe = new Probe({
      bus: t.hub.bus,
      db: t.hub.store.db,
      log: pino({ level: 'silent' }),
      metrics: { counter: () => ({ inc: () => {} }) as never },
      settings: { TRACEROUTE_TIMEOUT: 5_000, TOPOLOGY_RETENTION_DAYS: 30 },
      feed,
      now: () => Date.now() + 365 * 86_400_000,
    });
    await probe.start();
    await probe.stop();
    expect(gone.sort()).toEqual([`${newId}/${b!.id}/neighborinfo`, `${newId}/${c!.id}/neighborinfo`].sort());
    expect((await call(t.baseUrl, 'GET', '/api/v1/links')).body.data).toEqual([]);
  });
});
