/**
 * The simulator learns topology: it answers traceroutes and reports neighbours as firmware does.
 *
 * - TRACEROUTE_APP with want_response to a simulated node: after ~1–4 s the node answers (a
 *   TRACEROUTE_APP reply, request_id = the request's id) with a route of `hopsAway` relays drawn
 *   among the other simulated nodes, the same way back, and an SNR (dB × 4) per hop. The node out
 *   of range (messaging-responder.ts) and any node away for now never answer. A second traceroute
 *   within 30 s of the last from the same client is refused by our radio with a ROUTING_APP
 *   RATE_LIMIT_EXCEEDED, as firmware refuses it.
 * - NEIGHBORINFO_APP: each present node reports its two or three nearest nodes (the radio among
 *   them for nodes heard directly) with their SNR: once ~2–5 s after a client connects, so a fresh
 *   hub draws links at once, then every NEIGHBOR_INFO_INTERVAL_MS.
 * Everything is drawn from the seed and the packet id; delays scale with `delayScale`.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { Mesh, Portnums } from '@meshtastic/protobufs';
import { messagingRoles } from './messaging-responder.js';
import { isPresent, type SimDevice, type SimNetwork, type SimNode } from './nodes.js';
import { hash32, seededRandom } from './random.js';
import type { PacketResponder, SimClient } from './responder.js';

/** Firmware's floor between a client's traceroutes. */
const TRACEROUTE_INTERVAL_MS = 30_000;
const NEIGHBOR_INFO_INTERVAL_MS = 30 * 60_000;
const HOP_LIMIT = 3;

export interface TopologyResponderOptions {
  /** Multiplies every delay. Default 1. */
  delayScale?: number;
}

function distanceKm(a: SimDevice, b: SimDevice): number | undefined {
  if (!a.position || !b.position) return undefined;
  const dLat = (a.position.latitude - b.position.latitude) * 111.32;
  const dLon =
    (a.position.longitude - b.position.longitude) * 111.32 * Math.cos((a.position.latitude * Math.PI) / 180);
  return Math.hypot(dLat, dLon);
}

/** A plausible SNR (dB, quarter steps) of `b` heard at `a`: farther is weaker; drawn from the pair when unplaced. */
export function simLinkSnr(seed: number, a: SimDevice, b: SimDevice): number {
  const km = distanceKm(a, b);
  const base = km === undefined ? -10 + (hash32(seed, a.num ^ b.num, 0x736e72) % 200) / 10 : 10 - km * 3;
  return Math.round(Math.max(-20, Math.min(12, base)) * 4) / 4;
}

/** The two or three nodes (or the radio) `node` hears best. */
export function simNeighbours(network: SimNetwork, node: SimNode): SimDevice[] {
  const others: SimDevice[] = network.nodes.filter((n) => n !== node);
  if (node.hopsAway === 0) others.push(network.radio);
  const ranked = others
    .map((o) => ({ o, snr: simLinkSnr(network.seed, node, o) }))
    .sort((x, y) => y.snr - x.snr || x.o.num - y.o.num)
    .map((x) => x.o);
  const count = 2 + (hash32(network.seed, node.num, 0x6e6272) % 2);
  const chosen = ranked.slice(0, count);
  if (node.hopsAway === 0 && !chosen.includes(network.radio)) chosen[chosen.length - 1] = network.radio;
  return chosen;
}

function decodedPacket(
  from: number,
  to: number,
  portnum: Portnums.PortNum,
  payload: Uint8Array,
  extra: { requestId?: number; hops?: number } = {},
) {
  return create(Mesh.MeshPacketSchema, {
    from,
    to,
    channel: 0,
    hopStart: HOP_LIMIT,
    hopLimit: Math.max(0, HOP_LIMIT - (extra.hops ?? 0)),
    payloadVariant: { case: 'decoded', value: { portnum, payload, requestId: extra.requestId ?? 0 } },
  });
}

function neighbourInfoPacket(network: SimNetwork, node: SimNode) {
  const info = create(Mesh.NeighborInfoSchema, {
    nodeId: node.num,
    nodeBroadcastIntervalSecs: NEIGHBOR_INFO_INTERVAL_MS / 1000,
    neighbors: simNeighbours(network, node).map((n) => ({
      nodeId: n.num,
      snr: simLinkSnr(network.seed, node, n),
    })),
  });
  return decodedPacket(
    node.num,
    0xffffffff,
    Portnums.PortNum.NEIGHBORINFO_APP,
    toBinary(Mesh.NeighborInfoSchema, info),
    {
      hops: node.hopsAway,
    },
  );
}

/** The reply `target` sends to a traceroute from the radio: relays drawn from the request id. */
export function simTracerouteReply(network: SimNetwork, target: SimNode, requestId: number) {
  const random = seededRandom(hash32(network.seed, requestId, 0x7472));
  const pool = network.nodes.filter((n) => n !== target);
  const relays: SimNode[] = [];
  for (let i = 0; i < target.hopsAway && pool.length > 0; i++) {
    relays.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  }
  const path: SimDevice[] = [network.radio, ...relays, target];
  const snrs = (p: SimDevice[]) =>
    p.slice(1).map((d, i) => Math.round(simLinkSnr(network.seed, d, p[i]!) * 4));
  const back = [...path].reverse();
  const discovery = create(Mesh.RouteDiscoverySchema, {
    route: relays.map((r) => r.num),
    snrTowards: snrs(path),
    routeBack: [...relays].reverse().map((r) => r.num),
    snrBack: snrs(back),
  });
  return decodedPacket(
    target.num,
    network.radio.num,
    Portnums.PortNum.TRACEROUTE_APP,
    toBinary(Mesh.RouteDiscoverySchema, discovery),
    {
      requestId,
      hops: target.hopsAway,
    },
  );
}

export function createTopologyResponder(options: TopologyResponderOptions = {}): PacketResponder {
  const scale = options.delayScale ?? 1;
  const lastTraceroute = new WeakMap<SimClient, number>();
  return {
    onStart(client: SimClient) {
      const network = client.network;
      const random = seededRandom(hash32(network.seed, client.now(), 0x6e69));
      const report = () => {
        for (const node of network.nodes) {
          if (isPresent(network, node, client.now())) client.deliver(neighbourInfoPacket(network, node));
        }
      };
      const again = () => {
        report();
        client.after(NEIGHBOR_INFO_INTERVAL_MS * (0.9 + 0.2 * random()), again);
      };
      client.after((2_000 + random() * 3_000) * Math.min(1, scale), again);
    },
    onPacket(packet: Mesh.MeshPacket, client: SimClient) {
      if (packet.payloadVariant.case !== 'decoded') return;
      const data = packet.payloadVariant.value;
      if (data.portnum !== Portnums.PortNum.TRACEROUTE_APP || !data.wantResponse) return;
      const network = client.network;
      const now = client.now();
      const last = lastTraceroute.get(client);
      if (last !== undefined && now - last < TRACEROUTE_INTERVAL_MS) {
        const routing = create(Mesh.RoutingSchema, {
          variant: { case: 'errorReason', value: Mesh.Routing_Error.RATE_LIMIT_EXCEEDED },
        });
        client.after(100 * scale, () =>
          client.deliver(
            decodedPacket(
              network.radio.num,
              network.radio.num,
              Portnums.PortNum.ROUTING_APP,
              toBinary(Mesh.RoutingSchema, routing),
              {
                requestId: packet.id,
              },
            ),
          ),
        );
        return;
      }
      lastTraceroute.set(client, now);
      const target = network.nodes.find((n) => n.num === packet.to);
      const { outOfRange } = messagingRoles(network);
      if (!target || target === outOfRange || !isPresent(network, target, now)) {
        client.log.debug({ to: packet.to, id: packet.id }, 'sim: traceroute to an unreachable node');
        return;
      }
      const random = seededRandom(hash32(network.seed, packet.id, 0x7464));
      client.after((1_000 + random() * 3_000) * scale, () =>
        client.deliver(simTracerouteReply(network, target, packet.id)),
      );
    },
  };
}

/** `inner` answers what it answers, and the simulator also answers traceroutes and reports neighbours. */
export function withTopology(
  inner: PacketResponder,
  options: TopologyResponderOptions = {},
): PacketResponder {
  const topology = createTopologyResponder(options);
  return {
    onStart(client) {
      inner.onStart?.(client);
      topology.onStart?.(client);
    },
    async onPacket(packet, client) {
      await topology.onPacket(packet, client);
      await inner.onPacket(packet, client);
    },
  };
}
