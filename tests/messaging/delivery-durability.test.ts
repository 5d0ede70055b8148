/**
 * Durability of the send queue over real HTTP, with the hub on RADIO=tcp against a simulator
 * the test controls: a radio link cut and restored, a hub restart with messages still queued,
 * a burst over the rate limit (nothing of it reaches the radio), acknowledgement timeouts, and
 * inbound texts filed into the right conversation.
 */
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import { messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import { mqttOf, startTestHub, type TestHub, waitFor } from '../helpers/hub.js';
import { connect, endClients, envelopeOf, meshTopic } from '../mqtt/helpers.js';
import {
  type ControlledSim,
  call,
  FAST_MESSAGING,
  type Json,
  knownNodes,
  routingFrom,
  send,
  startControlledSim,
  stopsAfterEach,
  subscriber,
  textFrom,
  waitForStatus,
} from './helpers.js';

const cleanups = stopsAfterEach();

async function hubOn(sim: ControlledSim, env: Record<string, string> = {}): Promise<TestHub> {
  const t = await startTestHub({ ...FAST_MESSAGING, RADIO: `tcp:127.0.0.1:${sim.port}`, ...env });
  cleanups.push(() => t.stop());
  return t;
}

async function controlledSim(options: Parameters<typeof startControlledSim>[0] = {}): Promise<ControlledSim> {
  const sim = await startControlledSim({ failurePercent: 0, delayScale: 0.1, ...options });
  cleanups.push(() => sim.stop());
  return sim;
}

/**
 * A controlled simulated mesh (`simOptions`) and a hub on it (`env`) that knows the mesh's six
 * nodes, with alice signed in as a subscriber.
 */
async function aliceOnMesh(
  simOptions: Parameters<typeof startControlledSim>[0] = {},
  env: Record<string, string> = {},
): Promise<{ sim: ControlledSim; t: TestHub; alice: string }> {
  const sim = await controlledSim(simOptions);
  const t = await hubOn(sim, env);
  await knownNodes(t, 6);
  const alice = await subscriber(t, 'alice');
  return { sim, t, alice };
}

const linkState = (t: TestHub) => t.hub.bus.last('radio.status')!.state;
const textOf = (p: Mesh.MeshPacket) =>
  p.payloadVariant.case === 'decoded' ? new TextDecoder().decode(p.payloadVariant.value.payload) : '';

/** Nodes the simulated mesh reaches (all but the one out of range). */
function reachable(sim: ControlledSim): string[] {
  const { outOfRange } = messagingRoles(sim.network);
  return sim.network.nodes.filter((n) => n !== outOfRange).map((n) => n.id);
}

describe('radio link cut and restored', () => {
  it('keeps messages queued while the link is down and sends them when it returns', async () => {
    const { sim, t, alice: token } = await aliceOnMesh();
    const target = reachable(sim)[0]!;
    // What the gateway hears and says, in order: its link states and this message's changes.
    const heard: string[] = [];
    let messageId = '';
    t.hub.bus.on('test', 'radio.status', (s) => heard.push(`radio ${s.state}`));
    t.hub.bus.on('test', 'message.updated', (c) => {
      if (c.message.id === messageId) heard.push(`message ${c.kind} ${c.message.status}`);
    });

    await sim.cut();
    await waitFor(() => (linkState(t) !== 'connected' ? true : undefined), 5_000, 'link down');
    const res = await send(t, token, target, 'while the radio is away');
    expect(res.status).toBe(202);
    messageId = res.body.id;
    // The radio tries again and finds nothing: the gateway has handled that status with the
    // message due, so it had its chance to send and did not.
    const since = heard.length;
    await waitFor(
      () => (heard.slice(since).includes('radio disconnected') ? true : undefined),
      10_000,
      'a failed reconnect',
    );
    const waiting = await call(t.baseUrl, 'GET', `/api/v1/messages/${res.body.id}`, { token });
    expect(waiting.body).toMatchObject({ status: 'queued', attempts: 0 });
    expect(sim.recorder.texts).toHaveLength(0);

    await sim.restore();
    const delivered = await waitForStatus(t, token, res.body.id, 'delivered', 20_000);
    expect(delivered.attempts).toBe(1);
    expect(delivered.history.map((h: Json) => h.status)).toEqual(['queued', 'sent', 'delivered']);
    expect(sim.recorder.texts).toHaveLength(1);
    // Nothing happened to the message until the link was back.
    const changes = heard.filter((h) => h.startsWith('message'));
    expect(changes).toEqual(['message status sent', 'message status delivered']);
    expect(heard.indexOf('message status sent')).toBeGreaterThan(heard.lastIndexOf('radio configuring'));
  });
});

describe('hub restart', () => {
  it('sends messages that were queued when the hub stopped, and old tokens still work', async () => {
    const { sim, t: first, alice: token } = await aliceOnMesh();
    const target = reachable(sim)[0]!;
    await sim.cut();
    await waitFor(() => (linkState(first) !== 'connected' ? true : undefined), 5_000, 'link down');
    const ids: string[] = [];
    for (const text of ['queued one', 'queued two']) {
      const res = await send(first, token, target, text);
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    await first.hub.stop();

    await sim.restore();
    const second = await hubOn(sim, { DATA_DIR: first.dataDir });
    for (const id of ids) {
      const done = await waitForStatus(second, token, id, 'delivered', 20_000);
      expect(done.history[0].status).toBe('queued');
    }
    expect(sim.recorder.texts.map(textOf)).toEqual(['queued one', 'queued two']);
  });
});

describe('rate limits', () => {
  it('answers a burst over the limit with 429 + Retry-After; none of it reaches the radio', async () => {
    const { sim, t, alice } = await aliceOnMesh(
      {},
      { MESSAGE_RATE_PER_SUBSCRIBER: '3/1h', MESSAGE_RATE_PER_NODE: '4/1h' },
    );
    const bob = await subscriber(t, 'bob');
    const target = reachable(sim)[0]!;
    const burst = await Promise.all(
      Array.from({ length: 6 }, (_, i) => send(t, alice, target, `burst ${i}`)),
    );
    const statuses = burst.map((r) => r.status).sort();
    expect(statuses).toEqual([202, 202, 202, 429, 429, 429]);
    for (const refused of burst.filter((r) => r.status === 429)) {
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.body.detail).toMatch(/you may send at most 3 messages per 1 h/);
    }
    // The node's own limit: bob's first fits (4 of 4), his second does not.
    expect((await send(t, bob, target, 'bob 1')).status).toBe(202);
    const nodeLimited = await send(t, bob, target, 'bob 2');
    expect(nodeLimited.status).toBe(429);
    expect(nodeLimited.body.detail).toMatch(new RegExp(`${target} may receive at most 4 messages per 1 h`));
    // Another node is still open to bob.
    expect((await send(t, bob, reachable(sim)[1]!, 'elsewhere')).status).toBe(202);

    const stored = t.hub.store.db.prepare('SELECT count(*) FROM messages').pluck().get();
    expect(stored).toBe(5);
    // Once all five are delivered nothing is left to send: what reached the radio by then is
    // all that ever will.
    const delivered = t.hub.store.db
      .prepare("SELECT count(*) FROM messages WHERE status = 'delivered'")
      .pluck();
    await waitFor(() => (delivered.get() === 5 ? true : undefined), 15_000, 'five deliveries');
    const accepted = burst.filter((r) => r.status === 202).map((r) => r.body.text as string);
    expect(sim.recorder.texts.map(textOf).sort()).toEqual([...accepted, 'bob 1', 'elsewhere'].sort());
  });
});

describe('acknowledgements', () => {
  it('retries a text without a hold that nobody acknowledges, then fails it with ACK_TIMEOUT', async () => {
    const {
      sim,
      t,
      alice: token,
    } = await aliceOnMesh({ silent: true }, { MESSAGE_ACK_TIMEOUT: '1s', MESSAGE_MAX_RETRIES: '2' });
    const target = sim.network.nodes[0]!;
    // hold_hours 0: no waiting for the node (docs/held-texts.md); with a hold it would stay queued.
    const res = await call(t.baseUrl, 'POST', '/api/v1/messages', {
      token,
      body: { target_node_id: target.id, text: 'hello?', hold_hours: 0 },
    });
    const failed = await waitForStatus(t, token, res.body.id, 'failed', 15_000);
    expect(failed.failure_code).toBe('ACK_TIMEOUT');
    expect(failed.failure_reason).toBe('no acknowledgement within 1 s after 3 attempts [ACK_TIMEOUT]');
    expect(failed.attempts).toBe(3);
    const packets = sim.recorder.texts;
    expect(packets).toHaveLength(3);
    expect(new Set(packets.map((p) => p.id)).size).toBe(3);
    for (const p of packets) {
      expect(p.to).toBe(target.num);
      expect(p.wantAck).toBe(true);
      expect(p.id).toBeGreaterThan(0);
      expect(p.payloadVariant.case === 'decoded' && p.payloadVariant.value.portnum).toBe(
        Portnums.PortNum.TEXT_MESSAGE_APP,
      );
    }
  });

  /** A hub on a silent simulated radio that took one text to a node: the test answers for the mesh. */
  async function oneTextSent(text: string) {
    const { sim, t, alice: token } = await aliceOnMesh({ silent: true }, { MESSAGE_ACK_TIMEOUT: '30s' });
    const node = sim.network.nodes[1]!;
    const radio = sim.network.radio.num;
    const res = await send(t, token, node.id, text);
    await waitFor(() => (sim.recorder.texts.length === 1 ? true : undefined), 5_000, 'the send');
    return { sim, t, token, node, radio, res, packetId: sim.recorder.texts[0]!.id };
  }

  it('fails at once on a permanent error, and a late ACK from the node still counts as delivered', async () => {
    const { sim, t, token, node, radio, res, packetId } = await oneTextSent('check the key');
    sim.recorder.client!.deliver(routingFrom(radio, radio, packetId, Mesh.Routing_Error.PKI_UNKNOWN_PUBKEY));
    const failed = await waitForStatus(t, token, res.body.id, 'failed');
    expect(failed.failure_code).toBe('PKI_UNKNOWN_PUBKEY');
    expect(failed.failure_reason).toBe('the node has no public key to decrypt it [PKI_UNKNOWN_PUBKEY]');
    expect(failed.attempts).toBe(1);
    // Failed: it is held no longer, though its hold (MESSAGE_HOLD_HOURS) had hours to run.
    expect(failed.hold_until).toBeNull();
    expect(failed.next_attempt_at).toBeNull();
    // An ACK for a packet id that is not ours changes nothing; the node's own late ACK does.
    sim.recorder.client!.deliver(routingFrom(node.num, radio, (packetId ^ 1) >>> 0, Mesh.Routing_Error.NONE));
    sim.recorder.client!.deliver(routingFrom(node.num, radio, packetId, Mesh.Routing_Error.NONE));
    const delivered = await waitForStatus(t, token, res.body.id, 'delivered');
    expect(delivered.failure_code).toBeUndefined();
    expect(delivered.history.map((h: Json) => h.status)).toEqual(['queued', 'failed', 'delivered']);
  });

  it("counts NO_RESPONSE from the node as delivered: the node's radio received it, only no app there replied", async () => {
    const { sim, t, token, node, radio, res, packetId } = await oneTextSent('gate shut?');
    sim.recorder.client!.deliver(routingFrom(node.num, radio, packetId, Mesh.Routing_Error.NO_RESPONSE));
    const delivered = await waitForStatus(t, token, res.body.id, 'delivered');
    expect(delivered.failure_code).toBeUndefined();
    expect(delivered.history.at(-1).reason).toBe(
      "the node's radio received it; no app on the node replied [NO_RESPONSE]",
    );
  });
});

describe('inbound texts', () => {
  it('go to the last writer, to an @named subscriber, or are kept for admins; duplicates once', async () => {
    const { sim, t, alice } = await aliceOnMesh({ silent: true });
    const bob = await subscriber(t, 'bob');
    const admin = await subscriber(t, 'root', { roles: ['admin'], nodes: 'none' });
    const [a, b] = sim.network.nodes;
    const radio = sim.network.radio.num;
    expect((await send(t, bob, a!.id, 'bob writes first')).status).toBe(202);
    expect((await send(t, alice, a!.id, 'alice writes last')).status).toBe(202);
    await waitFor(() => (sim.recorder.client ? true : undefined), 5_000, 'the sim session');
    const client = sim.recorder.client!;

    client.deliver(textFrom(a!.num, radio, 'reply to whoever wrote last'));
    const toBob = textFrom(a!.num, radio, '@Bob the gate is open');
    client.deliver(toBob);
    client.deliver(toBob); // heard twice (a relay): stored once
    client.deliver(textFrom(b!.num, radio, 'is anyone listening?'));
    client.deliver(textFrom(a!.num, 0xffffffff, 'channel chatter, not for the hub'));

    const inboxOf = async (token: string) => {
      const r = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${a!.id}`, { token });
      return (r.body.data as Json[]).filter((m) => m.direction === 'inbound').map((m) => m.text);
    };
    await waitFor(async () => ((await inboxOf(bob)).length === 1 ? true : undefined), 5_000, "bob's text");
    expect(await inboxOf(alice)).toEqual(['reply to whoever wrote last']);
    expect(await inboxOf(bob)).toEqual(['@Bob the gate is open']);

    const unmatched = await waitFor(
      async () => {
        const r = await call(t.baseUrl, 'GET', '/api/v1/messages/unmatched', { token: admin });
        return r.body.data.length ? r.body.data : undefined;
      },
      5_000,
      'the unmatched text',
    );
    expect(unmatched).toHaveLength(1);
    expect(unmatched[0]).toMatchObject({
      text: 'is anyone listening?',
      sender_node_id: b!.id,
      status: 'received',
    });
    expect(
      (await call(t.baseUrl, 'GET', `/api/v1/messages/${unmatched[0].id}`, { token: admin })).status,
    ).toBe(200);
    expect(
      (await call(t.baseUrl, 'GET', `/api/v1/messages/${unmatched[0].id}`, { token: alice })).status,
    ).toBe(404);
    const count = t.hub.store.db
      .prepare("SELECT count(*) FROM messages WHERE direction = 'inbound'")
      .pluck()
      .get();
    expect(count).toBe(3);
  });
});

describe('texts and ACKs heard only through an MQTT gateway', () => {
  it('an ACK/NAK over MQTT changes no message, and a text to the hub from an untrusted gateway enters no conversation', async () => {
    const { sim, t, alice } = await aliceOnMesh(
      { silent: true },
      { MQTT_ALLOW_ANONYMOUS: 'true', MESH_TRUSTED_GATEWAYS: '!0000cafe' },
    );
    const [a] = sim.network.nodes;
    const radio = sim.network.radio.num;
    const res = await send(t, alice, a!.id, 'is the gate open?');
    expect(res.status).toBe(202);
    // The simulated mesh stays silent: whatever happens next came in over MQTT, until the test
    // lets the radio hear something.
    const sent = await waitFor(() => sim.recorder.texts[0], 5_000, 'the text on the radio');

    const gateway = await connect(`mqtt://127.0.0.1:${mqttOf(t.hub).port}`);
    const uplink = (packet: Mesh.MeshPacket, gatewayId: string) =>
      gateway.publishAsync(meshTopic('LongFast', gatewayId), Buffer.from(envelopeOf(packet, { gatewayId })), {
        qos: 1,
      });
    const refused = async (reason: string) => {
      const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`meshhub_mqtt_mesh_refused_total{reason="${reason}"}`));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    // An attacker who saw the packet id forges the destination's NAK (NO_CHANNEL fails a text at
    // once), even through a trusted gateway, and its ACK: both refused, before the dedupe.
    const nak = routingFrom(a!.num, radio, sent.id, Mesh.Routing_Error.NO_CHANNEL);
    nak.id = 0x5eed0001;
    await uplink(nak, '!0000cafe');
    const ack = routingFrom(a!.num, radio, sent.id, Mesh.Routing_Error.NONE);
    ack.id = 0x5eed0003;
    await uplink(ack, '!0000beef');
    // The radio hears the real ACK (the same packet the gateway claimed): the message goes
    // queued → sent → delivered, never through `failed`.
    sim.recorder.client!.deliver(ack);
    const delivered = await waitForStatus(t, alice, res.body.id, 'delivered');
    expect(delivered.history.map((h: Json) => h.status)).toEqual(['queued', 'sent', 'delivered']);
    expect(await refused('routing')).toBe(2);
    expect(await refused('routing')).toBe(2);

    // A "reply" through a gateway not in MESH_TRUSTED_GATEWAYS: refused; the conversation has no reply.
    const conversation = async () => {
      const r = await call(t.baseUrl, 'GET', `/api/v1/messages/conversations/${a!.id}`, { token: alice });
      return (r.body.data as Json[]).filter((m) => m.direction === 'inbound').map((m) => m.text);
    };
    const forged = textFrom(a!.num, radio, 'no, it is shut');
    forged.id = 0x5eed0002;
    await uplink(forged, '!0000beef');
    // The radio hears the real reply, with the id the forgery used: it is not taken for a
    // duplicate of the refused copy, and it is the only reply in the conversation.
    const real = textFrom(a!.num, radio, 'yes, it is open');
    real.id = 0x5eed0002;
    sim.recorder.client!.deliver(real);
    expect(
      await waitFor(async () => {
        const texts = await conversation();
        return texts.length ? texts : undefined;
      }),
    ).toEqual(['yes, it is open']);
    expect(await refused('text_to_hub_untrusted')).toBe(1);

    // A reply heard by the trusted gateway (twice, as by two gateways) lands once.
    const trusted = textFrom(a!.num, radio, 'closing it now');
    trusted.id = 0x5eed0004;
    await uplink(trusted, '!0000cafe');
    await uplink(trusted, '!0000cafe');
    const inbound = await waitFor(
      async () => {
        const texts = await conversation();
        return texts.length >= 2 ? texts : undefined;
      },
      5_000,
      'the trusted reply',
    );
    expect([...inbound].sort()).toEqual(['closing it now', 'yes, it is open']);
    await mqttOf(t.hub).settle();
    const count = t.hub.store.db
      .prepare("SELECT count(*) FROM messages WHERE direction = 'inbound'")
      .pluck()
      .get();
    expect(count).toBe(2);
    await endClients();
  });
});

describe('messaging in /metrics', () => {
  it('counts each status reached, retries, failures by reason, time to delivery and the queue', async () => {
    const { sim, t, alice } = await aliceOnMesh({ silent: true });
    const [a, b] = sim.network.nodes;
    const radio = sim.network.radio.num;
    const metrics = async () => (await fetch(`${t.baseUrl}/metrics`)).text();
    const value = (text: string, series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line ? Number(line.split(' ').pop()) : 0;
    };

    const first = await send(t, alice, a!.id, 'delivered, after a retry');
    const attempt1 = await waitFor(() => sim.recorder.texts[0], 5_000, 'the first attempt');
    // A transient NAK: the hub tries again; the destination's ACK of the retry delivers it.
    sim.recorder.client!.deliver(routingFrom(radio, radio, attempt1.id, Mesh.Routing_Error.NO_ROUTE));
    const attempt2 = await waitFor(() => sim.recorder.texts[1], 5_000, 'the retry');
    sim.recorder.client!.deliver(routingFrom(a!.num, radio, attempt2.id, Mesh.Routing_Error.NONE));
    await waitForStatus(t, alice, first.body.id, 'delivered');

    const second = await send(t, alice, b!.id, 'refused for good');
    const attempt3 = await waitFor(() => sim.recorder.texts[2], 5_000, 'the third text');
    sim.recorder.client!.deliver(routingFrom(radio, radio, attempt3.id, Mesh.Routing_Error.NO_CHANNEL));
    await waitForStatus(t, alice, second.body.id, 'failed');

    // With the radio away, a text waits in the queue.
    await sim.cut();
    await waitFor(() => (linkState(t) !== 'connected' ? true : undefined), 10_000, 'the link to drop');
    expect((await send(t, alice, a!.id, 'waits for the radio')).status).toBe(202);

    const text = await metrics();
    expect(value(text, 'meshhub_messages_total{direction="outbound",status="queued"}')).toBe(3);
    expect(value(text, 'meshhub_messages_total{direction="outbound",status="sent"}')).toBe(1);
    expect(value(text, 'meshhub_messages_total{direction="outbound",status="delivered"}')).toBe(1);
    expect(value(text, 'meshhub_messages_total{direction="outbound",status="failed"}')).toBe(1);
    expect(value(text, 'meshhub_message_retries_total')).toBe(1);
    expect(value(text, 'meshhub_message_failures_total{reason="NO_CHANNEL"}')).toBe(1);
    expect(value(text, 'meshhub_message_delivery_seconds_count')).toBe(1);
    expect(value(text, 'meshhub_messages_queued')).toBe(1);
  });
});
