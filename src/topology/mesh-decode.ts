/**
 * TRACEROUTE_APP and NEIGHBORINFO_APP payloads → the topology's terms (docs/architecture.md
 * "Meshtastic facts"). RouteDiscovery: `route` and `route_back` list the hops between the two
 * ends (the ends themselves are not in them); `snr_towards` and `snr_back` hold one SNR more than
 * their route (the last is the far end's), in dB × 4 as int8, INT8_MIN (-128) when unknown.
 * NeighborInfo SNRs are plain dB (a float).
 */
import { type DescMessage, fromBinary, type MessageShape } from '@bufbuild/protobuf';
import { Mesh } from '@meshtastic/protobufs';
import type { MeshLink } from '../domain/mesh.js';
import { nodeIdFromNum } from '../domain/node.js';

/** RouteDiscovery's "SNR not known" (firmware's INT8_MIN). */
const UNKNOWN_SNR = -128;

/** One node a traceroute passed, with the SNR (dB) it heard the previous one at, when known. */
export interface RouteHop {
  nodeId: string;
  snr?: number;
}

/** A traceroute answer: `to` asked, `from` answered (MeshPacket from/to of the reply). */
export interface TracerouteAnswer {
  /** The node that asked (the reply's destination). */
  origin: string;
  /** The node that answered (the traceroute's target). */
  target: string;
  /** Hops out, ending at the target. */
  route: RouteHop[];
  /** Hops back, ending at the origin; empty when the firmware did not record them (before 2.3). */
  routeBack: RouteHop[];
}

function decoded<D extends DescMessage>(schema: D, payload: Uint8Array): MessageShape<D> | undefined {
  try {
    return fromBinary(schema, payload);
  } catch {
    return undefined;
  }
}

function snrOf(scaled: number | undefined): number | undefined {
  if (scaled === undefined || scaled === UNKNOWN_SNR) return undefined;
  // int8 on the wire, sign-extended into an int32 field.
  const int8 = scaled > 127 ? scaled - 256 : scaled;
  return int8 / 4;
}

function hops(nums: readonly number[], snrs: readonly number[], end: number): RouteHop[] {
  return [...nums, end].map((num, i) => {
    const snr = snrOf(snrs[i]);
    return snr === undefined ? { nodeId: nodeIdFromNum(num) } : { nodeId: nodeIdFromNum(num), snr };
  });
}

/** The answer a TRACEROUTE_APP reply from `from` to `to` carries; undefined when the payload does not decode. */
export function decodeTracerouteReply(
  from: number,
  to: number,
  payload: Uint8Array,
): TracerouteAnswer | undefined {
  const discovery = decoded(Mesh.RouteDiscoverySchema, payload);
  if (!discovery) return undefined;
  const back = discovery.routeBack.length > 0 || discovery.snrBack.length > 0;
  return {
    origin: nodeIdFromNum(to),
    target: nodeIdFromNum(from),
    route: hops(discovery.route, discovery.snrTowards, from),
    routeBack: back ? hops(discovery.routeBack, discovery.snrBack, to) : [],
  };
}

/** Each hop of an answered traceroute as a link: the hop heard the node before it. */
export function tracerouteLinks(answer: TracerouteAnswer, at: number): MeshLink[] {
  const links: MeshLink[] = [];
  const walk = (start: string, path: readonly RouteHop[]) => {
    let previous = start;
    for (const hop of path) {
      if (hop.nodeId !== previous) {
        links.push({
          from: hop.nodeId,
          to: previous,
          ...(hop.snr === undefined ? {} : { snr: hop.snr }),
          lastHeard: at,
          source: 'traceroute',
        });
      }
      previous = hop.nodeId;
    }
  };
  walk(answer.origin, answer.route);
  walk(answer.target, answer.routeBack);
  return links;
}

/** The links a NEIGHBORINFO_APP report tells: the reporter heard each neighbour; undefined when it does not decode. */
export function decodeNeighborInfo(from: number, payload: Uint8Array, at: number): MeshLink[] | undefined {
  const info = decoded(Mesh.NeighborInfoSchema, payload);
  if (!info) return undefined;
  // The reporter is the packet's sender; node_id repeats it (0 from some firmware).
  const reporter = nodeIdFromNum(info.nodeId || from);
  return info.neighbors
    .filter(
      (n: { nodeId: number; snr: number }) =>
        n.nodeId !== 0 && n.nodeId !== 0xffffffff && nodeIdFromNum(n.nodeId) !== reporter,
    )
    .map((n: { nodeId: number; snr: number }) => ({
      from: reporter,
      to: nodeIdFromNum(n.nodeId),
      ...(Number.isFinite(n.snr) ? { snr: Math.round(n.snr * 100) / 100 } : {}),
      lastHeard: at,
      source: 'neighborinfo' as const,
    }));
}
