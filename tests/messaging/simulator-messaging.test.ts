/**
 * The simulator's messaging, seen by a bare stream-protocol client (as an app in TCP mode):
 * implicit ACK from our radio, then the destination's ACK; MAX_RETRANSMIT for the node out of
 * range; NO_RESPONSE / MAX_RETRANSMIT when texts fail; replies addressed to our radio.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { describe, expect, it } from 'vitest';
import {
  createMessagingResponder,
  type MessagingResponderOptions,
  messagingRoles,
  SIM_REPLIES,
} from '../../src/mesh/simulator/messaging-responder.js';
import { testSimulator } from '../helpers/simulator.js';
import { RawClient, waitFor } from '../mesh/helpers.js';
import { stopsAfterEach } from './helpers.js';

const cleanups = stopsAfterEach();

async function connect(options: MessagingResponderOptions) {
  const sim = testSimulator({
    seed: 3,
    telemetryIntervalMs: 3_600_000,
    responder: createMessagingResponder(options),
  });
  const { port } = await sim.start();
  const client = await RawClient.connect(port);
  cleanups.push(async () => {
    await client.close();
    await sim.stop();
  });
  await client.handshake(4242);
  return { sim, client, network: sim.network! };
}

function sendText(client: RawClient, to: number, id: number, text: string) {
  client.send({
    payloadVariant: {
      case: 'packet',
      value: {
        to,
        id,
        wantAck: true,
        payloadVariant: {
          case: 'decoded',
          value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode(text) },
        },
      },
    },
  });
}

function routingFor(client: RawClient, requestId: number) {
  return client.packets().flatMap((p) => {
    if (p.payloadVariant.case !== 'decoded') return [];
    const data = p.payloadVariant.value;
    if (data.portnum !== Portnums.PortNum.ROUTING_APP || data.requestId !== requestId) return [];
    const routing = fromBinary(Mesh.RoutingSchema, data.payload);
    return [
      { from: p.from, to: p.to, reason: routing.variant.case === 'errorReason' ? routing.variant.value : -1 },
    ];
  });
}

describe('simulated messaging', () => {
  it('acknowledges like firmware: implicit ACK from our radio, then the destination; repliers answer', async () => {
    const { client, network } = await connect({ failurePercent: 0, delayScale: 0.05 });
    const radio = network.radio.num;
    const node = messagingRoles(network).repliers[0]!;
    sendText(client, node.num, 0x1234, 'How is the creek?');
    const acks = await waitFor(
      () => (routingFor(client, 0x1234).length === 2 ? routingFor(client, 0x1234) : undefined),
      'two ACKs',
    );
    expect(acks).toEqual([
      { from: radio, to: radio, reason: Mesh.Routing_Error.NONE },
      { from: node.num, to: radio, reason: Mesh.Routing_Error.NONE },
    ]);
    const reply = await waitFor(
      () =>
        client
          .packets()
          .find(
            (p) =>
              p.payloadVariant.case === 'decoded' &&
              p.payloadVariant.value.portnum === Portnums.PortNum.TEXT_MESSAGE_APP,
          ),
      'a reply',
    );
    expect(reply.from).toBe(node.num);
    expect(reply.to).toBe(radio);
    const data = reply.payloadVariant.case === 'decoded' ? reply.payloadVariant.value : undefined;
    expect(data?.replyId).toBe(0x1234);
    expect(SIM_REPLIES).toContain(new TextDecoder().decode(data?.payload));
  });

  it('never reaches the node out of range, nor an unknown node: MAX_RETRANSMIT from our radio', async () => {
    const { client, network } = await connect({ failurePercent: 0, delayScale: 0.05 });
    const radio = network.radio.num;
    sendText(client, messagingRoles(network).outOfRange!.num, 0x2001, 'hello?');
    sendText(client, 0x00c0ffee, 0x2002, 'hello?');
    for (const id of [0x2001, 0x2002]) {
      const [nak] = await waitFor(
        () => (routingFor(client, id).length ? routingFor(client, id) : undefined),
        'a NAK',
      );
      expect(nak).toEqual({ from: radio, to: radio, reason: Mesh.Routing_Error.MAX_RETRANSMIT });
    }
  });

  it('fails texts with real error reasons at the configured rate', async () => {
    const { client, network } = await connect({ failurePercent: 100, delayScale: 0.05 });
    const targets = network.nodes.filter((n) => n !== messagingRoles(network).outOfRange);
    const ids = targets.flatMap((n, i) => [0x3000 + 2 * i, 0x3001 + 2 * i].map((id) => ({ n, id })));
    for (const { n, id } of ids) sendText(client, n.num, id, 'x');
    const reasons = await waitFor(() => {
      const last = ids.map(({ id }) =>
        routingFor(client, id).find((r) => r.reason !== Mesh.Routing_Error.NONE),
      );
      return last.every(Boolean) ? last.map((r) => r!.reason) : undefined;
    }, 'a failure for every text');
    expect(new Set(reasons)).toEqual(
      new Set([Mesh.Routing_Error.MAX_RETRANSMIT, Mesh.Routing_Error.NO_RESPONSE]),
    );
  });
});
