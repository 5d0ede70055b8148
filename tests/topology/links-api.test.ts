/**
 * Neighbour links over loopback HTTP: NEIGHBORINFO_APP reports (from the simulated mesh on its
 * own, and one the test sends) become `/api/v1/links` rows and `mesh.link` events, the latest per
 * (from, to, source); the filters and bad input.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { simNeighbours } from '../../src/mesh/simulator/topology-responder.js';
import { waitFor } from '../helpers/hub.js';
import { call, knownNodes } from '../messaging/helpers.js';
import { hubOn, linkEvents, neighbourInfo, startTopologySim } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

describe('GET /api/v1/links', () => {
  it('shows the neighbours the simulated nodes report soon after the hub connects', async () => {
    const sim = await startTopologySim('answer');
    cleanups.push(() => sim.sim.stop());
    const t = await hubOn(sim);
    cleanups.push(() => t.stop());
    const node = sim.network.nodes[0]!;
    const expected = simNeighbours(sim.network, node).map((n) => n.id);
    const links = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${node.id}`);
        const from = r.body.data.filter(
          (l: { from: string; source: string }) => l.from === node.id && l.source === 'neighborinfo',
        );
        return from.length === expected.length ? from : undefined;
      },
      15_000,
      'the simulated neighbour report',
    );
    expect(links.map((l: { to: string }) => l.to).sort()).toEqual([...expected].sort());
    for (const link of links) {
      expect(link).toEqual({
        from: node.id,
        to: expect.any(String),
        snr: expect.any(Number),
        last_heard: expect.any(String),
        source: 'neighborinfo',
      });
    }
  });

  it('a NEIGHBORINFO report is stored as the latest per pair, announced as mesh.link, and filtered by node_id and since', async () => {
    const sim = await startTopologySim('silent');
    cleanups.push(() => sim.sim.stop());
    const t = await hubOn(sim);
    cleanups.push(() => t.stop());
    await knownNodes(t, 6);
    const events = linkEvents(t);
    const [a, b, c, d] = sim.network.nodes;
    const client = await sim.client();
    client.deliver(
      neighbourInfo(
        a!.num,
        [
          { nodeId: b!.num, snr: 7.5 },
          { nodeId: c!.num, snr: -4.25 },
        ],
        0x4242,
      ),
    );
    await waitFor(() => events.length === 2 || undefined, 10_000, 'two mesh.link events');
    expect(events).toEqual([
      { from: a!.id, to: b!.id, snr: 7.5, lastHeard: expect.any(Number), source: 'neighborinfo' },
      { from: a!.id, to: c!.id, snr: -4.25, lastHeard: expect.any(Number), source: 'neighborinfo' },
    ]);

    // A later report of the same pair replaces it: one row per (from, to, source).
    client.deliver(neighbourInfo(a!.num, [{ nodeId: b!.num, snr: 2 }], 0x4243));
    await waitFor(() => events.length === 3 || undefined, 10_000, 'the second report');
    const ofA = await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${a!.id}`);
    expect(ofA.status).toBe(200);
    const toB = ofA.body.data.filter((l: { to: string }) => l.to === b!.id);
    expect(toB).toEqual([expect.objectContaining({ from: a!.id, snr: 2, source: 'neighborinfo' })]);
    expect((await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${d!.id}`)).body.data).toEqual([]);
    // `to` matches node_id too.
    const ofC = await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${c!.id}`);
    expect(ofC.body.data).toEqual([expect.objectContaining({ from: a!.id, to: c!.id })]);

    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await call(t.baseUrl, 'GET', `/api/v1/links?since=${future}`)).body.data).toEqual([]);
    const past = new Date(Date.now() - 3_600_000).toISOString();
    expect(
      (await call(t.baseUrl, 'GET', `/api/v1/links?since=${past}`)).body.data.length,
    ).toBeGreaterThanOrEqual(2);

    // A node that comes back under a new number (firmware 2.8) keeps its links.
    t.hub.bus.emit('node.renumbered', { oldNodeId: a!.id, newNodeId: '!0badc0de', at: Date.now() });
    const moved = await call(t.baseUrl, 'GET', '/api/v1/links?node_id=!0badc0de');
    expect(moved.body.data.map((l: { to: string }) => l.to).sort()).toEqual([b!.id, c!.id].sort());
    expect((await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${a!.id}`)).body.data).toEqual([]);

    for (const query of ['since=yesterday', 'node_id=!xyz', 'node_id=!ABCDEF01']) {
      const res = await call(t.baseUrl, 'GET', `/api/v1/links?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.errors[0].field).toBe(query.split('=')[0]);
    }
  });
});
