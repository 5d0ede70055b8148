/**
 * The simulator learns messaging: texts a client sends (TEXT_MESSAGE_APP with want_ack) are
 * answered as real firmware and real people would answer them.
 *
 * - Delivered: our radio hears a relay repeat the packet after ~0.5–1.5 s and reports the
 *   implicit ACK (ROUTING_APP from our own node, error_reason NONE, request_id = the packet id);
 *   the destination's own ACK follows ~1–4 s later (ROUTING_APP from the destination).
 * - Lost (`failurePercent` of texts): MAX_RETRANSMIT from our own radio after its
 *   retransmissions (~3–6 s), or NO_RESPONSE from the destination after the implicit ACK.
 * - One node is permanently out of range (MAX_RETRANSMIT every time); so is any node the mesh
 *   does not know, and a node that is away for now (presence.ts: people come and go).
 * - About half the nodes have someone carrying them who answers delivered texts with a short
 *   line after a few seconds, addressed to our radio, so the chat is alive in the demo.
 * Outcomes are drawn from the packet id, so a replayed packet behaves the same; delays are
 * multiplied by `delayScale` (tests use small values).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { isPresent, type SimNetwork, type SimNode } from './nodes.js';
import { hash32, seededRandom } from './random.js';
import type { PacketResponder, SimClient } from './responder.js';

export interface MessagingResponderOptions {
  /** Percent of texts to reachable nodes that fail (0–100). Default 10. */
  failurePercent?: number;
  /** Multiplies every delay. Default 1. */
  delayScale?: number;
}

export interface SimMessagingRoles {
  /** The node no text ever reaches. */
  outOfRange: SimNode | undefined;
  /** Nodes whose people answer delivered texts. */
  repliers: SimNode[];
}

export const SIM_REPLIES = [
  'Copy that, thanks!',
  'On my way back now.',
  'All good up here.',
  'Water is rising at the creek, will keep an eye on it.',
  'Battery swapped, station is running again.',
  'Got it. Back before dark.',
  'Signal is weak here, will move up the ridge.',
  'Roger. Need anything from the village?',
  'Checked the sensor, it was full of leaves 🍂',
  'Thanks, see you at the hut.',
] as const;

/** Which simulated nodes are out of range and which reply: a pure function of the network. */
export function messagingRoles(network: SimNetwork): SimMessagingRoles {
  const nodes = network.nodes;
  const outOfRange = nodes.length >= 3 ? nodes[hash32(network.seed, 0x6f6f72) % nodes.length] : undefined;
  const candidates = nodes.filter((n) => n !== outOfRange);
  let repliers = candidates.filter((n) => hash32(network.seed, n.num, 0x7270) % 2 === 0);
  if (repliers.length === 0 && candidates[0]) repliers = [candidates[0]];
  if (repliers.length === candidates.length && candidates.length > 1) repliers = repliers.slice(1);
  return { outOfRange, repliers };
}

/** The payload of a ROUTING_APP report answering `requestId` (an ACK when `errorReason` is NONE). */
export function routingReport(requestId: number, errorReason: Mesh.Routing_Error) {
  const routing = create(Mesh.RoutingSchema, { variant: { case: 'errorReason', value: errorReason } });
  return {
    case: 'decoded' as const,
    value: {
      portnum: Portnums.PortNum.ROUTING_APP,
      payload: toBinary(Mesh.RoutingSchema, routing),
      requestId,
    },
  };
}

function routingPacket(
  from: number,
  to: number,
  requestId: number,
  errorReason: Mesh.Routing_Error,
  hops: number,
) {
  return create(Mesh.MeshPacketSchema, {
    from,
    to,
    channel: 0,
    priority: Mesh.MeshPacket_Priority.ACK,
    hopStart: 3,
    hopLimit: Math.max(0, 3 - hops),
    payloadVariant: routingReport(requestId, errorReason),
  });
}

function textPacket(from: SimNode, to: number, text: string, replyId: number) {
  return create(Mesh.MeshPacketSchema, {
    from: from.num,
    to,
    channel: 0,
    wantAck: true,
    hopStart: 3,
    hopLimit: 3 - from.hopsAway,
    payloadVariant: {
      case: 'decoded',
      value: { portnum: Portnums.PortNum.TEXT_MESSAGE_APP, payload: new TextEncoder().encode(text), replyId },
    },
  });
}

export function createMessagingResponder(options: MessagingResponderOptions = {}): PacketResponder {
  const failurePercent = options.failurePercent ?? 10;
  const scale = options.delayScale ?? 1;
  let roles: { network: SimNetwork; roles: SimMessagingRoles } | undefined;
  const rolesOf = (network: SimNetwork) => {
    if (roles?.network !== network) roles = { network, roles: messagingRoles(network) };
    return roles.roles;
  };

  return {
    onPacket(packet: Mesh.MeshPacket, client: SimClient) {
      if (packet.payloadVariant.case !== 'decoded') return;
      const data = packet.payloadVariant.value;
      if (data.portnum !== Portnums.PortNum.TEXT_MESSAGE_APP || packet.to === 0xffffffff) return;
      const network = client.network;
      const radio = network.radio.num;
      const { outOfRange, repliers } = rolesOf(network);
      const random = seededRandom(hash32(network.seed, packet.id, 0x747874));
      const between = (lowMs: number, highMs: number) => (lowMs + random() * (highMs - lowMs)) * scale;
      const destination = network.nodes.find((n) => n.num === packet.to);
      const ackNak = (from: number, reason: Mesh.Routing_Error, hops: number) =>
        client.deliver(routingPacket(from, radio, packet.id, reason, hops));

      if (!destination || destination === outOfRange || !isPresent(network, destination, client.now())) {
        if (packet.wantAck)
          client.after(between(3_000, 6_000), () => ackNak(radio, Mesh.Routing_Error.MAX_RETRANSMIT, 0));
        client.log.debug({ to: packet.to, id: packet.id }, 'sim: text to an unreachable node');
        return;
      }
      const failing = random() * 100 < failurePercent;
      const silentRadio = random() < 0.7;
      if (failing && silentRadio) {
        if (packet.wantAck)
          client.after(between(3_000, 6_000), () => ackNak(radio, Mesh.Routing_Error.MAX_RETRANSMIT, 0));
        return;
      }
      const relayedAfter = between(500, 1_500);
      const ackedAfter = relayedAfter + between(1_000, 4_000);
      if (packet.wantAck) {
        client.after(relayedAfter, () => ackNak(radio, Mesh.Routing_Error.NONE, 0));
        const reason = failing ? Mesh.Routing_Error.NO_RESPONSE : Mesh.Routing_Error.NONE;
        client.after(ackedAfter, () => ackNak(destination.num, reason, destination.hopsAway));
      }
      if (failing || !repliers.includes(destination)) return;
      const reply = SIM_REPLIES[Math.floor(random() * SIM_REPLIES.length)]!;
      client.after(ackedAfter + between(2_000, 6_000), () =>
        client.deliver(textPacket(destination, radio, reply, packet.id)),
      );
    },
  };
}
