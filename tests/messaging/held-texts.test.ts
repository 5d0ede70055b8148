/**
 * Held texts (issue 16 part 2, docs/held-texts.md) over real HTTP, a real SQLite file and the
 * simulator over TCP, with the gateway on a clock the test moves (FakeClock) and nodes that are
 * away during given windows of the simulator's time (the same clock):
 * - a node away for an hour gets its text once, right after it is heard again;
 * - a text whose hold ends fails with the reason;
 * - 200 held texts to 20 nodes that return together go out paced and in order per node;
 * - a restart while texts are held;
 * - `hold_hours` out of range is refused and stores nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createHub } from '../../hub/main.js';
import { loadConfig } from '../../hub/settings.js';
import { loopbackListeners } from '../../scripts/bench/lib/hub-env.js';
import { createMessagingResponder, messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import { type AwayWindow, awayDuring } from '../../src/mesh/simulator/presence.js';
import type { PacketResponder, SimClient } from '../../src/mesh/simulator/responder.js';
import { pauseAfterSendMs, textAirtimeMs } from '../../src/messaging/airtime.js';
import type { MessageGatewayActor } from '../../src/messaging/gateway-actor.js';
import { startTestHub, type TestHub, testHubOf, waitFor } from '../helpers/hub.js';
import { testSimulator } from '../helpers/simulator.js';
import { FakeClock } from './fake-clock.js';
import { call, FAST_MESSAGING, type Json, knownNodes, stopsAfterEach, subscriber } from './helpers.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const utf8 = new TextEncoder();

const cleanups = stopsAfterEach();

/** Every text the simulated radio was handed, with the (fake) time it arrived. */
class TimedRecorder implements PacketResponder {
  readonly texts: Array<{ to: number; text: string; at: number }> = [];
  constructor(private readonly inner: PacketResponder) {}
  onPacket(packet: Mesh.MeshPacket, client: SimClient) {
    if (packet.payloadVariant.case === 'decoded' && packet.payloadVariant.value.portnum === 1) {
      const text = new TextDecoder().decode(packet.payloadVariant.value.payload);
      this.texts.push({ to: packet.to, text, at: client.now() });
    }
    return this.inner.onPacket(packet, client);
  }
}

async function startSim(
  clock: FakeClock,
  nodeCount: number,
  away: (sim: { nodes: readonly { num: number }[] }) => AwayWindow[],
) {
  const recorder = new TimedRecorder(createMessagingResponder({ failurePercent: 0, delayScale: 0.02 }));
  const sim = testSimulator({
    nodeCount,
    seed: 11,
    // Telemetry every ~1.5 s of real time: a node that returns is heard within that.
    telemetryIntervalMs: 1_500,
    now: () => clock.now(),
    responder: recorder,
    presence: (network) => awayDuring(away(network)),
  });
  const { port } = await sim.start();
  cleanups.push(() => sim.stop());
  return { sim, port, recorder, network: sim.network! };
}

/** A whole hub on `clock`: the gateway gets it before it starts. */
async function startHubOn(
  clock: FakeClock,
  simPort: number,
  env: Record<string, string> = {},
  dataDir = mkdtempSync(join(tmpdir(), 'meshhub-held-')),
): Promise<TestHub> {
  const all = {
    ...FAST_MESSAGING,
    MESSAGE_MAX_RETRIES: '0',
    ...loopbackListeners(dataDir),
    RADIO: `tcp:127.0.0.1:${simPort}`,
    LOG_LEVEL: 'silent',
    AUTH_TOKEN_TTL: '48h',
    ...env,
  };
  const hub = await createHub(loadConfig(all), {
    log: pino({ level: 'silent' }),
    defaultMetrics: false,
    env: { ...process.env, ...all },
  });
  hub.actor<MessageGatewayActor>('message-gateway')!.useClock(clock);
  await hub.start();
  const t = testHubOf(hub, dataDir, true);
  cleanups.push(async () => {
    await t.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return t;
}

/**
 * Six simulated nodes on `clock`, one the radio reaches (the wanderer) away from a minute
 * before `start` until `returnAt`.
 */
async function startSimWithWanderer(clock: FakeClock, start: number, returnAt: number) {
  let wanderer = 0;
  const sim = await startSim(clock, 6, (net) => {
    const node = net.nodes.find((n) => n !== messagingRoles(net as never).outOfRange)!;
    wanderer = node.num;
    return [{ nodeNum: node.num, from: start - MINUTE, until: returnAt }];
  });
  return { ...sim, wanderer, nodeId: `!${wanderer.toString(16).padStart(8, '0')}` };
}

/** A hub on `clock` and the simulator at `simPort` that knows all its `nodes` nodes, with alice signed in. */
async function aliceOnHub(clock: FakeClock, simPort: number, nodes = 6, env: Record<string, string> = {}) {
  const t = await startHubOn(clock, simPort, env);
  await knownNodes(t, nodes);
  return { t, token: await subscriber(t, 'alice') };
}

function post(t: TestHub, token: string, body: Record<string, unknown>) {
  return call(t.baseUrl, 'POST', '/api/v1/messages', { token, body });
}

const detail = async (t: TestHub, token: string, id: string) =>
  (await call(t.baseUrl, 'GET', `/api/v1/messages/${id}`, { token })).body;

/** The row as the gateway sees it (attempts, in flight, next attempt). */
function row(t: TestHub, id: string) {
  return t.hub.store.db
    .prepare('SELECT status, attempts, ack_deadline, next_attempt_at FROM messages WHERE public_id = ?')
    .get(id) as { status: string; attempts: number; ack_deadline: number | null; next_attempt_at: number };
}

/** Waits until the text has had `attempts` attempts and none is waiting for its ACK. */
/** Message `id` as GET /api/v1/messages/{id} answers once its status is `status` (waiting for `what`). */
const detailOnceStatus = (t: TestHub, token: string, id: string, status: string, what: string) =>
  waitFor(
    async () => {
      const d = await detail(t, token, id);
      return d.status === status ? d : undefined;
    },
    15_000,
    what,
  );

async function settled(t: TestHub, id: string, attempts: number) {
  return waitFor(
    () => {
      const r = row(t, id);
      return r.attempts >= attempts && r.ack_deadline === null ? r : undefined;
    },
    15_000,
    () => `attempt ${attempts} of ${id} to settle (now ${JSON.stringify(row(t, id))})`,
  );
}

describe('held texts', () => {
  it('a node away for an hour gets its text once, as soon as it is heard again', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const returnAt = start + HOUR;
    const { port, recorder, wanderer, nodeId } = await startSimWithWanderer(clock, start, returnAt);
    const { t, token } = await aliceOnHub(clock, port);
    const heard: number[] = [];
    t.hub.bus.on('test', 'mesh.packet', (p) => {
      if (p.from >>> 0 === wanderer) heard.push(clock.now());
    });

    const res = await post(t, token, { target_node_id: nodeId, text: 'Dinner at the hut at 7?' });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    await settled(t, id, 1);
    const held = await detail(t, token, id);
    expect(held).toMatchObject({ status: 'queued', waiting_for_node: nodeId, attempts: 1 });
    expect(held.history[1]).toMatchObject({ status: 'queued', attempt: 1, code: 'MAX_RETRANSMIT' });
    expect(held.history[1].reason).toMatch(/waiting for .+ to come in range/);

    // The hour away: the slow backoff tries again now and then (5, 10, 20 min later), in vain.
    let attempts = 1;
    for (;;) {
      const next = row(t, id).next_attempt_at;
      if (next >= returnAt) break;
      // A little past it: the gateway's timer fires a few ms after the due time.
      clock.advanceTo(next + 50);
      attempts++;
      await settled(t, id, attempts);
    }
    expect(attempts).toBe(4);
    expect(row(t, id).status).toBe('queued');
    const sentWhileAway = recorder.texts.length;
    expect(heard.filter((at) => at < returnAt)).toEqual([]);

    // Back: the next backoff attempt is a quarter of an hour away; only hearing the node can send it.
    clock.advanceTo(returnAt);
    const nextBackoff = row(t, id).next_attempt_at;
    expect(nextBackoff).toBeGreaterThan(returnAt + 10 * MINUTE);
    const done = await detailOnceStatus(t, token, id, 'delivered', 'the text delivered after the return');
    const afterReturn = recorder.texts.slice(sentWhileAway);
    expect(afterReturn).toHaveLength(1);
    expect(afterReturn[0]!.at).toBeGreaterThanOrEqual(heard[0]!);
    expect(afterReturn[0]!.at).toBeLessThan(nextBackoff);
    expect(done.attempts).toBe(5);
    expect(done.waiting_for_node).toBeNull();
    expect(done.history.filter((h: Json) => h.status === 'delivered')).toHaveLength(1);
    expect(done.history.slice(1, 5).map((h: Json) => h.attempt)).toEqual([1, 2, 3, 4]);
  });

  it('fails a text whose hold ends, with the reason', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const { port, network } = await startSim(clock, 6, () => []);
    const { t, token } = await aliceOnHub(clock, port);
    const away = messagingRoles(network).outOfRange!;
    // A 3 min hold ends before the first backoff attempt (5 min): the hold's end alone fails it.
    const res = await post(t, token, { target_node_id: away.id, text: 'Are you there?', hold_hours: 0.05 });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    await settled(t, id, 1);
    const held = await detail(t, token, id);
    expect(Date.parse(held.hold_until) - Date.parse(held.created_at)).toBe(3 * MINUTE);
    expect(held.status).toBe('queued');

    clock.advanceTo(start + 4 * MINUTE);
    const failed = await detailOnceStatus(t, token, id, 'failed', 'the hold to end');
    expect(failed.failure_code).toBe('HOLD_EXPIRED');
    expect(failed.failure_reason).toMatch(
      /^its 3-minute hold ended: .+ was not reached in 1 attempt \((last heard .+ ago|never heard); last: MAX_RETRANSMIT\) \[HOLD_EXPIRED\]$/,
    );
    expect(failed.attempts).toBe(1);
    expect(failed.history.at(-1)).toMatchObject({ status: 'failed', code: 'HOLD_EXPIRED' });
    // Failed: nothing holds it any more, and it has no next attempt.
    expect(failed.hold_until).toBeNull();
    expect(failed.waiting_for_node).toBeNull();
    expect(failed.next_attempt_at).toBeNull();
  });

  it('sends 200 held texts to 20 nodes that return together paced by airtime, in order per node', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const returnAt = start + 20 * MINUTE;
    const { port, recorder, network } = await startSim(clock, 21, (net) => {
      const outOfRange = messagingRoles(net as never).outOfRange;
      return net.nodes
        .filter((n) => n !== outOfRange)
        .map((n) => ({ nodeNum: n.num, from: start - MINUTE, until: returnAt }));
    });
    const { t, token } = await aliceOnHub(clock, port, 21, { MESSAGE_AIRTIME_PERCENT: '10' });
    const nodes = network.nodes.filter((n) => n !== messagingRoles(network).outOfRange);
    expect(nodes).toHaveLength(20);
    const ids: string[] = [];
    for (let k = 0; k < 10; k++) {
      for (const node of nodes) {
        const res = await post(t, token, { target_node_id: node.id, text: `${node.id} #${k}` });
        expect(res.status).toBe(202);
        ids.push(res.body.id);
      }
    }
    const count = (status: string) =>
      t.hub.store.db.prepare('SELECT count(*) FROM messages WHERE status = ?').pluck().get(status) as number;

    // The clock ticks a second at a time: the airtime pauses end, the nodes return at returnAt.
    let ticking = true;
    const ticker = (async () => {
      while (ticking) {
        clock.advance(1_000);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    cleanups.push(async () => {
      ticking = false;
      await ticker;
    });
    await waitFor(
      () => (count('delivered') === 200 ? true : undefined),
      120_000,
      () => `200 delivered (${count('delivered')})`,
    );
    ticking = false;
    await ticker;

    // Paced: after each text the radio stayed free for 9× its airtime (10 % of the airtime).
    // The times are the gateway's (its clock when it handed each attempt to the radio).
    const attempts = t.hub.store.db
      .prepare(
        'SELECT p.sent_at AS at, m.text FROM message_packets p JOIN messages m ON m.id = p.message_id ORDER BY p.sent_at, p.rowid',
      )
      .all() as Array<{ at: number; text: string }>;
    expect(attempts.length).toBeGreaterThanOrEqual(200);
    for (let i = 1; i < attempts.length; i++) {
      const pause = pauseAfterSendMs(textAirtimeMs(utf8.encode(attempts[i - 1]!.text).length), 10);
      expect(attempts[i]!.at - attempts[i - 1]!.at).toBeGreaterThanOrEqual(Math.floor(pause));
    }
    const sends = recorder.texts;
    // In order per node: each node got #0 … #9, each text after the one before it.
    for (const node of nodes) {
      const got = sends.filter((s) => s.to === node.num).map((s) => s.text);
      const distinct = got.filter((text, i) => text !== got[i - 1]);
      expect(distinct).toEqual(Array.from({ length: 10 }, (_, k) => `${node.id} #${k}`));
    }
    // Many woke at once: every text after the return went out once.
    const afterReturn = sends.filter((s) => s.at >= returnAt);
    expect(new Set(afterReturn.map((s) => s.text)).size).toBe(afterReturn.length);
  }, 180_000);

  it('keeps held texts across a restart, and sends them in order when the node is heard', async () => {
    const clock = new FakeClock();
    const start = clock.now();
    // Back before the first backoff attempt (5 min): only hearing the node can send the texts.
    const returnAt = start + 3 * MINUTE;
    const { port, recorder, nodeId } = await startSimWithWanderer(clock, start, returnAt);
    const { t: first, token } = await aliceOnHub(clock, port);
    const ids: string[] = [];
    for (const text of ['first, before the restart', 'second, before the restart']) {
      const res = await post(first, token, { target_node_id: nodeId, text });
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    await settled(first, ids[0]!, 1);
    expect(await detail(first, token, ids[1]!)).toMatchObject({ status: 'queued', waiting_for_node: nodeId });
    await first.stop();

    const second = await startHubOn(clock, port, {}, first.dataDir);
    // Still held after the restart, with the same hold and reason.
    const held = await detail(second, token, ids[0]!);
    expect(held).toMatchObject({ status: 'queued', waiting_for_node: nodeId, attempts: 1 });
    const before = recorder.texts.length;
    clock.advanceTo(returnAt);
    for (const id of ids) {
      await waitFor(
        async () => ((await detail(second, token, id)).status === 'delivered' ? true : undefined),
        15_000,
        `${id} delivered after the restart`,
      );
    }
    const after = recorder.texts.slice(before);
    expect(after.map((s) => s.text)).toEqual(['first, before the restart', 'second, before the restart']);
    expect(after[0]!.at).toBeLessThan(start + 5 * MINUTE);
  });
});

/** A node that is heard (its telemetry) but whose radio never acknowledges a text: our radio gives up on each. */
class DeafNode implements PacketResponder {
  constructor(
    private readonly inner: PacketResponder,
    private readonly deaf: () => number,
  ) {}
  onPacket(packet: Mesh.MeshPacket, client: SimClient) {
    const decoded = packet.payloadVariant.case === 'decoded' ? packet.payloadVariant.value : undefined;
    if (decoded?.portnum !== Portnums.PortNum.TEXT_MESSAGE_APP || packet.to !== this.deaf())
      return this.inner.onPacket(packet, client);
    const radio = client.network.radio.num;
    const routing = create(Mesh.RoutingSchema, {
      variant: { case: 'errorReason', value: Mesh.Routing_Error.MAX_RETRANSMIT },
    });
    client.after(50, () =>
      client.deliver(
        create(Mesh.MeshPacketSchema, {
          from: radio,
          to: radio,
          payloadVariant: {
            case: 'decoded',
            value: {
              portnum: Portnums.PortNum.ROUTING_APP,
              payload: toBinary(Mesh.RoutingSchema, routing),
              requestId: packet.id,
            },
          },
        }),
      ),
    );
  }
}

describe('a node that is heard but does not acknowledge', () => {
  it('is tried again at the end of the minute after the last attempt, not at the slow backoff, and is not called out of range', async () => {
    const clock = new FakeClock();
    let deaf = 0;
    const responder = new DeafNode(
      createMessagingResponder({ failurePercent: 0, delayScale: 0.02 }),
      () => deaf,
    );
    const recorder = new TimedRecorder(responder);
    const sim = testSimulator({
      nodeCount: 6,
      seed: 11,
      telemetryIntervalMs: 1_500,
      now: () => clock.now(),
      responder: recorder,
    });
    const { port } = await sim.start();
    cleanups.push(() => sim.stop());
    const node = sim.network!.nodes.find((n) => n !== messagingRoles(sim.network!).outOfRange)!;
    deaf = node.num;
    const { t, token } = await aliceOnHub(clock, port);
    const heard: number[] = [];
    t.hub.bus.on('test', 'mesh.packet', (p) => {
      if (p.from >>> 0 === deaf) heard.push(clock.now());
    });

    await waitFor(() => (heard.length > 0 ? true : undefined), 15_000, 'the node heard');
    const res = await post(t, token, { target_node_id: node.id, text: 'Is the gauge working?' });
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    const first = await settled(t, id, 1);
    const failedAt = (
      t.hub.store.db.prepare('SELECT updated_at FROM messages WHERE public_id = ?').get(id) as {
        updated_at: number;
      }
    ).updated_at;
    // Not out of range: it is heard, it just does not acknowledge.
    const held = await detail(t, token, id);
    expect(held).toMatchObject({ status: 'queued', waiting_for_node: node.id });
    expect(held.history.at(-1).reason).toMatch(/was heard .+ ago but is not acknowledging/);
    expect(held.history.at(-1).reason).not.toMatch(/come in range/);
    // Without news the next attempt is the slow backoff's, 5 min on.
    expect(first.next_attempt_at).toBeGreaterThanOrEqual(failedAt + 5 * MINUTE);

    // Heard 30 s after the attempt failed, inside the once-a-minute limit: the text goes at the
    // end of that minute, not at the slow backoff.
    clock.advanceTo(failedAt + 30_000);
    const heardBefore = heard.length;
    await waitFor(() => (heard.length > heardBefore ? true : undefined), 15_000, 'the node heard again');
    const woken = await waitFor(
      () => (row(t, id).next_attempt_at < failedAt + 5 * MINUTE ? row(t, id) : undefined),
      15_000,
      () => `the text brought forward (now ${JSON.stringify(row(t, id))})`,
    );
    expect(woken.next_attempt_at).toBe(failedAt + MINUTE);
    expect((await detail(t, token, id)).next_attempt_at).toBe(new Date(failedAt + MINUTE).toISOString());
    const sentBefore = recorder.texts.length;
    clock.advanceTo(failedAt + MINUTE + 50);
    await settled(t, id, 2);
    const again = recorder.texts.slice(sentBefore);
    expect(again).toHaveLength(1);
    expect(again[0]!.at).toBeLessThan(failedAt + 2 * MINUTE);
  });
});

describe('hold_hours', () => {
  it('is refused out of range with problem details naming it, and nothing is stored', async () => {
    const t = await startTestHub({ ...FAST_MESSAGING, MESSAGE_HOLD_HOURS: '12' });
    cleanups.push(() => t.stop());
    const [node] = await knownNodes(t, 1);
    const token = await subscriber(t, 'alice');
    const cases: Array<[unknown, string]> = [
      [13, "must be at most 12 hours (this hub's MESSAGE_HOLD_HOURS)"],
      [-1, 'must be at least 0 hours'],
      ['6', 'must be a number of hours'],
      [null, 'must be a number of hours'],
    ];
    for (const [hold, message] of cases) {
      const res = await post(t, token, { target_node_id: node!, text: 'hi', hold_hours: hold });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, errors: [{ field: 'hold_hours', message }] });
    }
    const stored = t.hub.store.db.prepare('SELECT count(*) FROM messages').pluck().get();
    expect(stored).toBe(0);
    // Within range: stored with that hold.
    const ok = await post(t, token, { target_node_id: node!, text: 'hi', hold_hours: 12 });
    expect(ok.status).toBe(202);
    const d = await detail(t, token, ok.body.id);
    expect(Date.parse(d.hold_until) - Date.parse(d.created_at)).toBe(12 * HOUR);
  });
});
