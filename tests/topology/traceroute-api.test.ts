/**
 * Traceroutes over loopback HTTP, the hub on RADIO=tcp against a simulated mesh: answered with a
 * route and SNRs, no answer, refused by the radio's rate limit, the hub's own 30-s limit, roles,
 * bad input (a 4xx problem, nothing stored or sent), and other nodes' traceroutes heard over the
 * radio and MQTT (stored once).
 */
import { Mesh } from '@meshtastic/protobufs';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeIdFromNum } from '../../src/domain/node.js';
import { messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import { mqttOf, type TestHub, waitFor } from '../helpers/hub.js';
import { call, knownNodes, routingFrom, subscriber } from '../messaging/helpers.js';
import { connect, endClients, envelopeOf, meshTopic } from '../mqtt/helpers.js';
import { hubOn, linkEvents, startTopologySim, type TopologySim, tracerouteReply } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await endClients();
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

async function setUp(mode: 'answer' | 'silent', env: Record<string, string> = {}) {
  const sim = await startTopologySim(mode);
  cleanups.push(() => sim.sim.stop());
  const t = await hubOn(sim, env);
  cleanups.push(() => t.stop());
  await knownNodes(t, 6);
  const admin = await subscriber(t, 'root', { roles: ['admin'], nodes: 'none' });
  return { sim, t, admin };
}

function trace(
  t: TestHub,
  token: string | undefined,
  nodeId: string,
  options: { body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  return call(t.baseUrl, 'POST', `/api/v1/nodes/${nodeId}/traceroute`, {
    ...(token ? { token } : {}),
    ...options,
  });
}

async function settled(t: TestHub, id: string) {
  return waitFor(
    async () => {
      const r = await call(t.baseUrl, 'GET', `/api/v1/traceroutes/${id}`);
      return r.body?.status !== 'pending' ? r.body : undefined;
    },
    15_000,
    `traceroute ${id} to settle`,
  );
}

/** A node the simulated mesh reaches through at least one relay, so the route has a hop in between. */
function relayedNode(sim: TopologySim) {
  const out = messagingRoles(sim.network).outOfRange;
  return (
    sim.network.nodes.find((n) => n !== out && n.hopsAway > 0) ?? sim.network.nodes.find((n) => n !== out)!
  );
}

describe('POST /api/v1/nodes/{node_id}/traceroute', () => {
  it('an operator traces a node: 202 pending, then the route out and back with SNR per hop, and the hops become links', async () => {
    const { sim, t } = await setUp('answer');
    const operator = await subscriber(t, 'ops', { roles: ['operator'], nodes: 'none' });
    const links = linkEvents(t);
    const target = relayedNode(sim);
    const hub = nodeIdFromNum(sim.network.radio.num);

    const res = await trace(t, operator, target.id);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ node_id: target.id, origin_id: hub, status: 'pending', source: 'hub' });
    expect(res.headers.get('location')).toBe(`/api/v1/traceroutes/${res.body.id}`);

    const sent = await waitFor(() => sim.traceroutes()[0], 10_000, 'the traceroute on the radio');
    expect(sent.to).toBe(target.num);
    expect(sent.payloadVariant.case === 'decoded' && sent.payloadVariant.value.wantResponse).toBe(true);

    const done = await settled(t, res.body.id);
    expect(done.status).toBe('answered');
    expect(done.answered_at).toEqual(expect.any(String));
    expect(done.route).toHaveLength(target.hopsAway + 1);
    expect(done.route.at(-1).node_id).toBe(target.id);
    expect(done.route_back).toHaveLength(target.hopsAway + 1);
    expect(done.route_back.at(-1).node_id).toBe(hub);
    for (const hop of [...done.route, ...done.route_back]) expect(hop.snr).toEqual(expect.any(Number));

    // The first hop out: its node heard the hub's radio.
    const first = done.route[0];
    const list = await call(t.baseUrl, 'GET', `/api/v1/links?node_id=${first.node_id}`);
    expect(list.body.data).toContainEqual(
      expect.objectContaining({ from: first.node_id, to: hub, snr: first.snr, source: 'traceroute' }),
    );
    expect(links).toContainEqual(
      expect.objectContaining({ from: first.node_id, to: hub, source: 'traceroute' }),
    );

    const listed = await call(t.baseUrl, 'GET', `/api/v1/traceroutes?node_id=${target.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([done]);
    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/meshhub_traceroutes_total\{source="hub",status="answered"\} 1\b/);
  });

  it('a second traceroute within 30 s is 429 with Retry-After, and nothing more goes to the radio', async () => {
    const { sim, t, admin } = await setUp('answer');
    const [a, b] = sim.network.nodes;
    expect((await trace(t, admin, a!.id)).status).toBe(202);
    const again = await trace(t, admin, b!.id);
    expect(again.status).toBe(429);
    expect(again.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(again.body.detail).toMatch(/one traceroute per 30 s/);
    await waitFor(() => sim.traceroutes().length === 1, 10_000, 'the first traceroute on the radio');
    const listed = await call(t.baseUrl, 'GET', '/api/v1/traceroutes');
    expect(listed.body.data.map((x: { node_id: string }) => x.node_id)).toEqual([a!.id]);
  });

  it('a node that never answers ends as no_answer after TRACEROUTE_TIMEOUT', async () => {
    const { sim, t, admin } = await setUp('answer');
    const out = messagingRoles(sim.network).outOfRange!;
    const res = await trace(t, admin, out.id);
    expect(res.status).toBe(202);
    const done = await settled(t, res.body.id);
    expect(done).toMatchObject({
      status: 'no_answer',
      route: [],
      route_back: [],
      error: expect.stringMatching(/no answer within 5 s/),
    });
  });

  it('the radio refusing it (RATE_LIMIT_EXCEEDED) makes it refused', async () => {
    const { sim, t, admin } = await setUp('silent');
    const [a] = sim.network.nodes;
    const res = await trace(t, admin, a!.id);
    expect(res.status).toBe(202);
    const sent = await waitFor(() => sim.traceroutes()[0], 10_000, 'the traceroute on the radio');
    const radio = sim.network.radio.num;
    (await sim.client()).deliver(routingFrom(radio, radio, sent.id, Mesh.Routing_Error.RATE_LIMIT_EXCEEDED));
    const done = await settled(t, res.body.id);
    expect(done).toMatchObject({ status: 'refused', error: expect.stringMatching(/RATE_LIMIT_EXCEEDED/) });
  });

  it('needs a token (401) with role admin or operator (403); bad input is a 400/404/415 problem; nothing is stored or sent', async () => {
    const { sim, t } = await setUp('silent');
    const alice = await subscriber(t, 'alice');
    const operator = await subscriber(t, 'ops', { roles: ['operator'], nodes: 'none' });
    const [a] = sim.network.nodes;
    const hub = nodeIdFromNum(sim.network.radio.num);

    const anonymous = await trace(t, undefined, a!.id);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await trace(t, alice, a!.id)).status).toBe(403);

    const cases: Array<[string, Parameters<typeof trace>[3], number, string]> = [
      ['abc', {}, 400, 'node_id'],
      ['!ABCDEF12', {}, 400, 'node_id'],
      [a!.id, { body: { channel: 9 } }, 400, 'channel'],
      [a!.id, { body: { channel: 0, hops: 3 } }, 400, 'hops'],
      [a!.id, { raw: '{"channel":', headers: { 'content-type': 'application/json' } }, 400, ''],
      [a!.id, { raw: 'channel=1', headers: { 'content-type': 'text/plain' } }, 415, ''],
      [hub, {}, 400, 'node_id'],
      ['!0badc0de', {}, 404, ''],
    ];
    for (const [nodeId, options, status, field] of cases) {
      const res = await trace(t, operator, nodeId, options);
      expect(res.status, `${nodeId} ${JSON.stringify(options)}`).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      if (field) expect(JSON.stringify(res.body.errors)).toContain(field);
    }
    expect((await call(t.baseUrl, 'GET', '/api/v1/traceroutes')).body.data).toEqual([]);
    expect(sim.traceroutes()).toEqual([]);

    // After all that, the operator's first good request goes out: none of them counted.
    expect((await trace(t, operator, a!.id, { body: { channel: 0 } })).status).toBe(202);
  });
});

describe('GET /api/v1/traceroutes', () => {
  it('keeps a traceroute between two other nodes once, heard over the radio and over MQTT in either order', async () => {
    const { sim, t } = await setUp('silent', { MQTT_ALLOW_ANONYMOUS: 'true' });
    const links = linkEvents(t);
    const sightings: Array<[number, string]> = [];
    t.hub.bus.on('test', 'mesh.heard', ({ packet, via }) => {
      if (packet.id === 0x5151 || packet.id === 0x5152) sightings.push([packet.id, via]);
    });
    const [a, b, c, d] = sim.network.nodes;
    const radio = await sim.client();
    const gateway = await connect(`mqtt://127.0.0.1:${mqttOf(t.hub).port}`);
    const uplink = (packet: Mesh.MeshPacket) =>
      gateway.publishAsync(
        meshTopic('LongFast', '!0000cafe'),
        Buffer.from(envelopeOf(packet, { gatewayId: '!0000cafe' })),
        { qos: 1 },
      );
    const heard = (id: number, via: string) => () =>
      sightings.some(([i, v]) => i === id && v === via) || undefined;
    // b traced a through c: the reply from a to b, heard on the radio first, then over MQTT.
    const reply = tracerouteReply(
      a!.num,
      b!.num,
      0x1234,
      { relays: [c!.num], towards: [6.25, -3.5], back: [c!.num], snrBack: [-2, 4] },
      0x5151,
    );
    radio.deliver(reply);
    await waitFor(heard(0x5151, 'radio'), 10_000, 'the radio copy');
    await uplink(reply);
    // c traced d directly: over MQTT first, then on the radio.
    const direct = tracerouteReply(d!.num, c!.num, 0x4321, { relays: [], towards: [1] }, 0x5152);
    await uplink(direct);
    await waitFor(heard(0x5152, 'mqtt'), 10_000, 'the MQTT copy');
    radio.deliver(direct);
    await waitFor(() => sightings.length === 4 || undefined, 10_000, 'every copy');

    const stored = await waitFor(
      async () => (await call(t.baseUrl, 'GET', `/api/v1/traceroutes?node_id=${a!.id}`)).body.data[0],
      10_000,
      'the heard traceroute',
    );
    expect(stored).toMatchObject({
      node_id: a!.id,
      origin_id: b!.id,
      source: 'heard',
      status: 'answered',
      route: [
        { node_id: c!.id, snr: 6.25 },
        { node_id: a!.id, snr: -3.5 },
      ],
      route_back: [
        { node_id: c!.id, snr: -2 },
        { node_id: b!.id, snr: 4 },
      ],
    });
    const all = await call(t.baseUrl, 'GET', '/api/v1/traceroutes');
    expect(all.body.data.map((x: { node_id: string }) => x.node_id)).toEqual([d!.id, a!.id]);
    expect(links).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ from: c!.id, to: b!.id, snr: 6.25, source: 'traceroute' }),
        expect.objectContaining({ from: a!.id, to: c!.id, snr: -3.5, source: 'traceroute' }),
      ]),
    );
  });

  it('pages newest first with the shared cursor and refuses a bad cursor, limit or node id', async () => {
    const { sim, t } = await setUp('silent');
    const client = await sim.client();
    const [a, b] = sim.network.nodes;
    for (let i = 1; i <= 3; i++)
      client.deliver(tracerouteReply(a!.num, b!.num, 100 + i, { relays: [], towards: [i] }, 0x7000 + i));
    await waitFor(
      async () => (await call(t.baseUrl, 'GET', '/api/v1/traceroutes')).body.data.length === 3 || undefined,
      10_000,
      'three traceroutes',
    );
    const first = await call(t.baseUrl, 'GET', '/api/v1/traceroutes?limit=2');
    expect(first.body.data).toHaveLength(2);
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')![1]!;
    const second = await call(t.baseUrl, 'GET', next);
    expect(second.body.data).toHaveLength(1);
    expect(second.headers.get('link')).toBeNull();
    const snrs = [...first.body.data, ...second.body.data].map(
      (x: { route: Array<{ snr: number }> }) => x.route[0]!.snr,
    );
    expect(snrs).toEqual([3, 2, 1]);
    for (const query of ['cursor=nope', 'limit=0', 'node_id=abc']) {
      const res = await call(t.baseUrl, 'GET', `/api/v1/traceroutes?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect((await call(t.baseUrl, 'GET', '/api/v1/traceroutes/not-an-id')).status).toBe(400);
    expect(
      (await call(t.baseUrl, 'GET', '/api/v1/traceroutes/01890000-0000-7000-8000-000000000000')).status,
    ).toBe(404);
  });
});
